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

}  // namespace tandem::kv_transport
