// P's link to one D over UCX: a UCP worker of its own (driven by the thread
// using the connection: one transfer at a time), an endpoint to D's worker
// (with peer failure detection where the transports have it), D's rkey
// unpacked for that endpoint, and D's answers not yet taken. Kept idle in
// a UcxConnectionPool between transfers to the same D.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "server/kv_transport/ucx_context.h"
#include "server/kv_transport/ucx_protocol.h"
#include "server/kv_transport/ucx_worker.h"

namespace tandem::kv_transport {

class UcxConnection {
 public:
  // connects to `d`'s worker and unpacks its rkey (without one, or when
  // this side cannot use it, rkey() is null: blocks go as messages).
  // Unavailable when UCX cannot reach D.
  static absl::StatusOr<std::unique_ptr<UcxConnection>> create(UcxContextPtr context,
                                                               const ucx::UcxEndpoint& d);
  ~UcxConnection();
  UcxConnection(const UcxConnection&) = delete;
  UcxConnection& operator=(const UcxConnection&) = delete;

  UcxWorker& worker() { return *worker_; }
  ucp_ep_h ep() const { return ep_; }
  ucp_rkey_h rkey() const { return rkey_; }
  // D's storage: its address in D and its size (RMA only).
  uint64_t base() const { return base_; }
  uint64_t bytes() const { return bytes_; }

  // OK while the link works; Unavailable once UCX reported it broken or
  // (same host) D's process exited.
  absl::Status health();

  // starts a new transfer on this connection: its stream id. Answers D
  // sends for earlier ones are dropped from now on.
  uint64_t newStream();
  // D's answers to the current stream, once each.
  std::optional<ucx::OpenedMessage> takeOpened() { return std::exchange(opened_, std::nullopt); }
  std::optional<ucx::ResultMessage> takeResult() { return std::exchange(result_, std::nullopt); }
  bool hasResult() const { return result_.has_value(); }

 private:
  UcxConnection() = default;

  static ucs_status_t onOpened(void* arg, const void*, size_t, void* data, size_t length,
                               const ucp_am_recv_param_t* param);
  static ucs_status_t onResult(void* arg, const void*, size_t, void* data, size_t length,
                               const ucp_am_recv_param_t* param);
  static void onError(void* arg, ucp_ep_h, ucs_status_t status);

  UcxWorkerPtr worker_;
  ucp_ep_h ep_ = nullptr;
  ucp_rkey_h rkey_ = nullptr;
  uint64_t base_ = 0;
  uint64_t bytes_ = 0;
  absl::Status broken_;
  int receiver_pidfd_ = -1;  // same-host D
  uint64_t stream_ = 0;
  std::optional<ucx::OpenedMessage> opened_;
  std::optional<ucx::ResultMessage> result_;
};

// idle connections by D's endpoint, shared by a sender and its streams.
class UcxConnectionPool {
 public:
  explicit UcxConnectionPool(UcxContextPtr context) : context_(std::move(context)) {}

  // an idle connection to the D of `key` (its endpoint without the token), or a new one.
  absl::StatusOr<std::unique_ptr<UcxConnection>> take(const std::string& key,
                                                      const ucx::UcxEndpoint& d);
  // a connection whose transfer ended cleanly, for the next transfer to the same D.
  void give(const std::string& key, std::unique_ptr<UcxConnection> connection);

 private:
  UcxContextPtr context_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::vector<std::unique_ptr<UcxConnection>>> idle_;
};

}  // namespace tandem::kv_transport
