// KvSender over UCX (UCP): writes each block with ucp_put_nbx straight into
// D's registered KV storage at the offset D chose for its index (checked
// against the storage's bounds), checksumming the source just before; every
// ~4 MiB it flushes the writes (remote completion) and names those blocks
// to D, which verifies them while the next ones move; finish() sends the
// completion with the transfer's token and waits for D's verdict. Without
// an rkey (D registered nothing, or this side cannot use it) blocks travel
// as active messages instead.
//
// The caller's thread drives UCX (there is no progress thread): send()
// returns once at most 8 MiB of its blocks are still leaving this process,
// finish() once all left, were flushed and D answered.
// A connection (a UCP worker and an endpoint to D) serves one transfer at
// a time and is kept for the next transfer to the same D.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "server/kv_transport/kv_transport.h"

namespace tandem::kv_transport {

class UcxConnectionPool;

class UcxKvSender : public KvSender {
 public:
  // InvalidArgument when block_bytes is 0; Unavailable when UCX cannot start.
  static absl::StatusOr<std::unique_ptr<UcxKvSender>> create(const KvSenderOptions& options);
  ~UcxKvSender() override;

  // KvSender
  std::string_view name() const override { return "ucx"; }
  // uses the first ucx:// endpoint of target.endpoint (which must carry the
  // transfer's token). Connects (or reuses a connection), claims the
  // transfer and learns where its blocks go: InvalidArgument for a bad
  // endpoint or offsets outside D's storage, Unavailable when D cannot be
  // reached, NotFound / PermissionDenied as D answers, DeadlineExceeded
  // when D does not answer within the timeout.
  absl::StatusOr<KvSendStreamPtr> open(const TransferTarget& target) override;

 private:
  UcxKvSender(const KvSenderOptions& options, std::shared_ptr<UcxConnectionPool> pool)
      : options_(options), pool_(std::move(pool)) {}

  KvSenderOptions options_;
  // shared with the streams, which may outlive the sender.
  std::shared_ptr<UcxConnectionPool> pool_;
};

}  // namespace tandem::kv_transport
