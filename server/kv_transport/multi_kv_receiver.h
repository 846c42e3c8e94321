// KvReceiver serving one set of expected transfers over several transports
// at once (gRPC for remote prefill workers, shm for local ones): a transfer
// announced once can be pushed over whichever the sender picked.
#pragma once

#include <memory>
#include <vector>

#include "server/kv_transport/kv_transport.h"
#include "server/kv_transport/transfer_table.h"

namespace tandem::kv_transport {

class MultiKvReceiver : public KvReceiver {
 public:
  // `receivers` must all use `table`.
  MultiKvReceiver(std::shared_ptr<TransferTable> table, std::vector<KvReceiverPtr> receivers)
      : table_(std::move(table)), receivers_(std::move(receivers)) {}
  // stops the transports before the table fails what is still pending.
  ~MultiKvReceiver() override { receivers_.clear(); }

  // KvReceiver: every transport's endpoint, ','-separated.
  std::string endpoint() const override;
  std::string transferEndpoint(const std::string& transfer_id) const override;
  absl::Status expect(ExpectedTransfer transfer, TransferDoneFn done) override {
    return table_->expect(std::move(transfer), std::move(done));
  }
  absl::Status cancel(const std::string& transfer_id) override {
    return table_->cancel(transfer_id);
  }

 private:
  std::shared_ptr<TransferTable> table_;
  std::vector<KvReceiverPtr> receivers_;
};

}  // namespace tandem::kv_transport
