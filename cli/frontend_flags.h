// The front end's flags, shared by the subcommands that serve the OpenAI and
// tandem gRPC APIs (serve, router): address and ports, API keys, limits,
// timeouts, chat template.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "router/frontend/frontend_server.h"

namespace tandem::cli {

struct FrontendFlags {
  router::FrontendOptions options;
  std::string chat_template;
  std::vector<std::string> api_keys;
  double drain_timeout_s = 30;
  int request_timeout_s = 30;
  size_t max_request_mb = 4;
};

// adds --host, --http-port, --grpc-port (described by `grpc_port_help`),
// --http-threads, --api-key, --chat-template, --max-pending-requests,
// --max-admitted-seqs, --max-admitted-prompt-tokens, --max-prompt-tokens,
// --prepare-threads, --max-prepare-queue, --max-request-mb,
// --request-timeout, --drain-timeout.
void addFrontendFlags(CLI::App* cmd, FrontendFlags* flags, const std::string& grpc_port_help);

// the options the flags describe: API keys from --api-key and
// TANDEM_API_KEYS=k1,k2, the body limit and the request timeout applied.
router::FrontendOptions frontendOptions(const FrontendFlags& flags);

}  // namespace tandem::cli
