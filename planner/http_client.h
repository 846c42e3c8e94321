// The planner's HTTP(S) calls (the router's /metrics, the Kubernetes API
// server's scale subresource): the one blocking client
// (common/http/http_client.h) with names resolved within each call's
// timeout (planner/host_resolver.h), so a DNS server that does not answer
// cannot hold the planner's loop.
#pragma once

#include "common/http/http_client.h"

namespace tandem::planner {

using http::HttpCall;
using http::HttpReply;
using http::HttpUrl;
using http::parseHttpUrl;
using http::TlsSettings;

// http::httpCall with resolveHost; its errors, and resolveHost's:
// DeadlineExceeded when the host name does not resolve within the timeout,
// ResourceExhausted while earlier lookups that timed out still hang.
absl::StatusOr<HttpReply> httpCall(const HttpCall& call);

}  // namespace tandem::planner
