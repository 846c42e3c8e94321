#include "cli/frontend_flags.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_split.h"
#include "common/status.h"

namespace tandem::cli {

void addFrontendFlags(CLI::App* cmd, FrontendFlags* flags, const std::string& grpc_port_help) {
  router::FrontendOptions& o = flags->options;
  cmd->add_option("--host", o.host, "address to listen on")->capture_default_str();
  cmd->add_option("--http-port", o.http_port, "OpenAI HTTP API port (0 = any free)")
      ->capture_default_str();
  cmd->add_option("--grpc-port", o.grpc_port, grpc_port_help)->capture_default_str();
  cmd->add_option("--http-threads", o.http_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--tls-cert", flags->tls.cert_file,
                  "PEM certificate (chain) to serve HTTPS and gRPC over TLS with (needs --tls-key; "
                  "re-read on SIGHUP)");
  cmd->add_option("--tls-key", flags->tls.key_file, "PEM private key of --tls-cert");
  cmd->add_option("--tls-client-ca", flags->tls.client_ca_file,
                  "PEM CA certificate(s): clients must present a certificate it signed (mutual TLS)");
  cmd->add_option("--api-key", flags->api_keys,
                  "require Authorization: Bearer KEY (repeatable; also TANDEM_API_KEYS=k1,k2)");
  cmd->add_option("--api-key-file", flags->api_key_file,
                  "API keys, one a line, each with optional limits: KEY [rpm=N] [tpm=N] (# comments; "
                  "re-read on SIGHUP)");
  cmd->add_option("--chat-template", flags->chat_template, "a Jinja chat template file to use");
  cmd->add_option("--max-pending-requests", o.admission.max_pending_requests,
                  "generation requests in progress (HTTP and gRPC) before 429")
      ->capture_default_str();
  cmd->add_option("--max-admitted-seqs", o.admission.max_admitted_seqs,
                  "sequences (prompts x n) admitted at once before 429; a request asking more "
                  "alone is a 400")->capture_default_str();
  cmd->add_option("--max-admitted-prompt-tokens", o.admission.max_admitted_prompt_tokens,
                  "prompt tokens (x n) admitted at once before 429; a request asking more alone "
                  "is a 400")->capture_default_str();
  cmd->add_option("--max-prompt-tokens", o.admission.max_prompt_tokens,
                  "longest prompt accepted (0 = the context length)")->capture_default_str();
  cmd->add_option("--prepare-threads", o.admission.prepare_threads,
                  "threads that parse, render and tokenize requests off the I/O threads (0 = "
                  "half the hardware threads, 1 to 8)")->capture_default_str();
  cmd->add_option("--max-prepare-queue", o.admission.max_queued_prepares,
                  "requests waiting for a preparing thread before 429")->capture_default_str();
  cmd->add_option("--max-request-mb", flags->max_request_mb, "largest request body, MiB")
      ->capture_default_str();
  cmd->add_option("--request-timeout", flags->request_timeout_s,
                  "seconds a client has to send a whole request")->capture_default_str();
  cmd->add_option("--drain-timeout", flags->drain_timeout_s,
                  "seconds in-flight requests may take to finish on SIGINT/SIGTERM")
      ->capture_default_str();
  cmd->add_option("--access-log", flags->access_log,
                  "one line per request (HTTP and gRPC: time, peer, API, model, status, tokens, "
                  "TTFT, duration, request id): off, stderr or a FILE appended to")
      ->capture_default_str();
  cmd->add_option("--access-log-format", flags->access_log_format, "text or json (one object a line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

absl::StatusOr<router::FrontendOptions> frontendOptions(const FrontendFlags& flags) {
  router::FrontendOptions o = flags.options;
  o.admission.api_keys = flags.api_keys;
  if (const char* env = std::getenv("TANDEM_API_KEYS"); env != nullptr && *env != '\0') {
    for (absl::string_view key : absl::StrSplit(env, ',', absl::SkipWhitespace())) {
      o.admission.api_keys.emplace_back(key);
    }
  }
  if (!flags.api_key_file.empty()) {
    absl::StatusOr<router::ApiKeyLimitsPtr> keys =
        router::ApiKeyLimits::create(o.admission.api_keys, flags.api_key_file);
    if (!keys.ok()) return keys.status();
    o.admission.api_key_limits = *std::move(keys);
  }
  if (flags.tls.enabled() || !flags.tls.client_ca_file.empty()) {
    absl::StatusOr<tls::CertificateStorePtr> store = tls::CertificateStore::create(flags.tls);
    if (!store.ok()) return store.status();
    o.tls = *std::move(store);
  }
  o.max_request_bytes = flags.max_request_mb << 20;
  o.request_timeout = std::chrono::seconds(flags.request_timeout_s);
  ASSIGN_OR_RETURN(const router::AccessLog::Format format,
                   router::AccessLog::parseFormat(flags.access_log_format));
  ASSIGN_OR_RETURN(o.access_log, router::AccessLog::open(flags.access_log, format));
  return o;
}

void reloadFrontend(const router::FrontendOptions& options, const char* who) {
  if (options.tls == nullptr && options.admission.api_key_limits == nullptr) {
    std::fprintf(stderr, "%s: SIGHUP: no public TLS certificate or API key file to re-read\n", who);
  }
  if (options.tls != nullptr) {
    if (absl::Status s = options.tls->reload(); s.ok()) {
      const auto material = options.tls->current();
      std::fprintf(stderr, "%s: SIGHUP: TLS certificate re-read (%s, serial %s); new connections use it\n",
                   who, material->subject.c_str(), material->serial.c_str());
    } else {
      std::fprintf(stderr, "%s: SIGHUP: keeping the TLS certificate in use: %s\n", who,
                   s.ToString().c_str());
    }
  }
  if (options.admission.api_key_limits != nullptr) {
    if (absl::Status s = options.admission.api_key_limits->reload(); s.ok()) {
      std::fprintf(stderr, "%s: SIGHUP: API key file re-read (%zu keys)\n", who,
                   options.admission.api_key_limits->size());
    } else {
      std::fprintf(stderr, "%s: SIGHUP: keeping the API keys in use: %s\n", who,
                   s.ToString().c_str());
    }
  }
  std::fflush(stderr);
}

}  // namespace tandem::cli
