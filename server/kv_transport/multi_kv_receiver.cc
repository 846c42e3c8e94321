#include "server/kv_transport/multi_kv_receiver.h"

namespace tandem::kv_transport {

std::string MultiKvReceiver::endpoint() const {
  std::string out;
  for (const KvReceiverPtr& r : receivers_) {
    if (!out.empty()) out += ',';
    out += r->endpoint();
  }
  return out;
}

std::string MultiKvReceiver::transferEndpoint(const std::string& transfer_id) const {
  std::string out;
  for (const KvReceiverPtr& r : receivers_) {
    if (!out.empty()) out += ',';
    out += r->transferEndpoint(transfer_id);
  }
  return out;
}

}  // namespace tandem::kv_transport
