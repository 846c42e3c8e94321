// The front end's flags, shared by the subcommands that serve the OpenAI and
// tandem gRPC APIs (serve, router): address and ports, TLS, API keys (and
// their file with per-key rate limits), limits, timeouts, chat template.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/tls/tls_files.h"
#include "router/frontend/frontend_server.h"

namespace tandem::cli {

struct FrontendFlags {
  router::FrontendOptions options;
  std::string chat_template;
  std::vector<std::string> api_keys;
  std::string api_key_file;
  tls::TlsFiles tls;
  double drain_timeout_s = 30;
  int request_timeout_s = 30;
  size_t max_request_mb = 4;
  std::string access_log = "off";
  std::string access_log_format = "text";
};

// adds --host, --http-port, --grpc-port (described by `grpc_port_help`),
// --http-threads, --tls-cert, --tls-key, --tls-client-ca, --api-key,
// --api-key-file, --chat-template, --max-pending-requests,
// --max-admitted-seqs, --max-admitted-prompt-tokens, --max-prompt-tokens,
// --prepare-threads, --max-prepare-queue, --max-request-mb,
// --request-timeout, --drain-timeout, --access-log, --access-log-format.
void addFrontendFlags(CLI::App* cmd, FrontendFlags* flags, const std::string& grpc_port_help);

// the options the flags describe: API keys from --api-key and
// TANDEM_API_KEYS=k1,k2 (and --api-key-file, read now), the TLS files read
// and checked now, the body limit and the request timeout applied, the
// access log opened. Errors: a TLS file or the key file that cannot be read
// or holds the wrong thing, an access log that cannot be opened, one clear
// message each.
absl::StatusOr<router::FrontendOptions> frontendOptions(const FrontendFlags& flags);

// SIGHUP: re-reads the TLS certificate and key (new connections get them)
// and the API key file of `options`, each when configured; a file that
// fails keeps what was in use, and one line on stderr, as `who`, says what
// happened.
void reloadFrontend(const router::FrontendOptions& options, const char* who);

}  // namespace tandem::cli
