#include "server/worker/kv_snapshot_call.h"

#include <algorithm>

#include "server/worker/kv_events_call.h"

namespace tandem::worker {

grpc::ServerWriteReactor<tandem::v1::KvSnapshotResponse>* KvSnapshotCall::start(
    WorkerContext& context) {
  auto* reactor = new grpc_util::ServerStreamReactor<tandem::v1::KvSnapshotResponse>();
  auto call = std::make_shared<KvSnapshotCall>(context.info.worker_id(),
                                               context.loop->kvEvents().snapshot(), reactor->writer());
  reactor->observe(call);
  call->writeNext();
  return reactor;
}

KvSnapshotCall::KvSnapshotCall(std::string worker_id, kvcache::KvSnapshot snapshot,
                               std::shared_ptr<Writer> writer)
    : worker_id_(std::move(worker_id)), snapshot_(std::move(snapshot)), writer_(std::move(writer)) {}

void KvSnapshotCall::writeNext() {
  std::lock_guard lock(mu_);
  if (done_ || !writer_->idle()) return;
  tandem::v1::KvSnapshotResponse part;
  part.set_worker_id(worker_id_);
  part.set_last_event_id(snapshot_.last_event_id);
  if (next_ == 0) part.set_num_blocks(snapshot_.blocks.size());
  const size_t end = std::min(snapshot_.blocks.size(), next_ + kMaxBlocksPerPart);
  part.mutable_blocks()->Reserve(static_cast<int>(end - next_));
  for (; next_ < end; ++next_) *part.add_blocks() = toProto(snapshot_.blocks[next_]);
  if (next_ == snapshot_.blocks.size()) {
    done_ = true;
    writer_->writeLast(std::move(part));
  } else {
    writer_->write(std::move(part));
  }
}

}  // namespace tandem::worker
