#include "server/worker/prefill_call.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/convert/sampling_params_proto.h"
#include "server/kv_transport/endpoint.h"
#include "server/worker/prompt_block_hashes.h"

namespace tandem::worker {
namespace {

grpc::Status toGrpc(const absl::Status& status, const char* what) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      absl::StrCat(what, ": ", status.message()));
}

}  // namespace

class PrefillJob : public std::enable_shared_from_this<PrefillJob> {
 public:
  PrefillJob(WorkerContext& context, const tandem::v1::PrefillRequest& request,
             tandem::v1::PrefillResponse* response, grpc::ServerUnaryReactor* reactor)
      : context_(context), request_(request), response_(response), reactor_(reactor) {}

  // runs the job on a thread of its own, which finishes the call.
  void start() {
    context_.tracker.enter();
    ++context_.transfers_in_flight;
    std::thread([self = shared_from_this()] {
      const grpc::Status status = self->run();
      --self->context_.transfers_in_flight;
      // after Finish the reactor may be deleted at any time.
      self->reactor_->Finish(status);
      self->context_.tracker.leave();
    }).detach();
  }

  void cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    changed_.notify_all();
  }

 private:
  grpc::Status run();
  // the transport that carries the transfer, for metrics and the reply.
  std::string transportName() const;
  // sends blocks [next_block_, end) of the prompt that D needs.
  absl::Status sendBlocks(int end, const std::vector<int32_t>& block_table);

  WorkerContext& context_;
  const tandem::v1::PrefillRequest request_;
  tandem::v1::PrefillResponse* const response_;
  grpc::ServerUnaryReactor* const reactor_;

  // the job thread's.
  engine::SeqId id_ = 0;
  std::vector<kvcache::BlockHash> hashes_;
  kv_transport::KvSendStreamPtr stream_;
  int next_block_ = 0;
  int blocks_sent_ = 0;

  // what the loop thread reports.
  std::mutex mu_;
  std::condition_variable changed_;
  int num_computed_ = 0;                      // guarded by mu_
  std::vector<int32_t> block_table_;          // guarded by mu_
  std::optional<generation::TokenOutput> done_;  // guarded by mu_
  bool cancelled_ = false;                    // guarded by mu_
};

std::string PrefillJob::transportName() const {
  const std::string_view name = context_.sender->name();
  if (name != "auto") return std::string(name);
  auto endpoints = kv_transport::parseEndpoints(request_.kv_endpoint());
  if (!endpoints.ok()) return "grpc";
  auto chosen = kv_transport::chooseEndpoint(*endpoints, kv_transport::TransportChoice::kAuto,
                                             kv_transport::localBootId());
  return chosen.ok() ? std::string(kv_transport::transportName(chosen->kind)) : "grpc";
}

absl::Status PrefillJob::sendBlocks(int end, const std::vector<int32_t>& block_table) {
  const engine::ModelRunner& runner = context_.loop->localEngine().runner();
  std::vector<kv_transport::KvBlock> blocks;
  const int skip = request_.skip_blocks();
  if (end > static_cast<int>(block_table.size())) {
    return absl::InternalError("the engine reported fewer blocks than the prompt fills");
  }
  for (int b = std::max(next_block_, skip); b < end; ++b) {
    kv_transport::KvBlock block;
    block.index = b - skip;
    block.hash = hashes_[b];
    block.data = runner.blockData(block_table[b]);
    blocks.push_back(block);
  }
  next_block_ = std::max(next_block_, end);
  if (blocks.empty()) return absl::OkStatus();
  blocks_sent_ += static_cast<int>(blocks.size());
  return stream_->send(blocks);
}

grpc::Status PrefillJob::run() {
  if (!servesPrefill(context_.options.role) || context_.sender == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this is a decode worker: it does not serve Prefill");
  }
  const std::vector<int32_t> prompt(request_.token_ids().begin(), request_.token_ids().end());
  const int num_blocks = numPromptBlocks(static_cast<int>(prompt.size()), context_.block_size);
  if (prompt.empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty");
  if (request_.skip_blocks() < 0 || request_.skip_blocks() >= num_blocks) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("skip_blocks must be in [0, ", num_blocks, ")"));
  }
  if (request_.kv_endpoint().empty() || request_.transfer_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "kv_endpoint and transfer_id are required");
  }
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request_.params());
  if (!params.ok()) return toGrpc(params.status(), "params");
  params->max_tokens = 1;
  hashes_ = promptBlockHashes(prompt, context_.block_size);

  const auto start = std::chrono::steady_clock::now();
  auto stream = context_.sender->open({request_.kv_endpoint(), request_.transfer_id()});
  if (!stream.ok()) return toGrpc(stream.status(), "cannot reach the KV receiver");
  stream_ = std::move(*stream);

  id_ = context_.newRequestId();
  engine::EngineLoop::PrefillCallbacks callbacks;
  auto self = shared_from_this();
  callbacks.on_progress = [self](int num_computed, std::span<const int32_t> table) {
    std::lock_guard lock(self->mu_);
    self->num_computed_ = num_computed;
    self->block_table_.assign(table.begin(), table.end());
    self->changed_.notify_all();
  };
  callbacks.on_done = [self](const generation::TokenOutput& out) {
    std::lock_guard lock(self->mu_);
    self->done_ = out;
    self->changed_.notify_all();
  };
  absl::Status submitted = context_.loop->submitPrefill(id_, prompt, *params, std::move(callbacks));
  if (!submitted.ok()) return toGrpc(submitted, "cannot prefill");

  const int block_size = context_.block_size;
  bool cancel_sent = false;
  bool cancelled = false;
  absl::Status send_status;
  std::optional<generation::TokenOutput> done;
  std::vector<int32_t> table;
  while (true) {
    int computed = 0;
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] {
        return done_.has_value() || (cancelled_ && !cancel_sent) ||
               (send_status.ok() && num_computed_ / block_size > next_block_);
      });
      cancelled = cancelled_;
      if (done_) {
        done = done_;
        table = block_table_;
        break;
      }
      computed = num_computed_;
      table = block_table_;
    }
    if (cancelled && !cancel_sent) {
      // D gave up: the engine ends the request with kAbort (on_done).
      cancel_sent = true;
      context_.loop->cancel(id_);
      continue;
    }
    // full blocks below the computed tokens never change again.
    send_status = sendBlocks(computed / block_size, table);
    if (!send_status.ok() && !cancel_sent) {
      cancel_sent = true;
      context_.loop->cancel(id_);
    }
  }

  if (done->token < 0 || !send_status.ok()) {
    stream_.reset();  // aborts the transfer: D sees it fail
    if (!send_status.ok()) return toGrpc(send_status, "KV transfer failed");
    if (cancelled) return grpc::Status(grpc::StatusCode::CANCELLED, "the prefill was cancelled");
    return done->finish_reason == generation::FinishReason::kError
               ? grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while prefilling")
               : grpc::Status(grpc::StatusCode::UNAVAILABLE, "the prefill was aborted");
  }
  absl::Status status = sendBlocks(num_blocks, table);
  if (status.ok()) status = stream_->finish();
  const uint64_t bytes = stream_->bytesSent();
  stream_.reset();
  context_.loop->releasePrefill(id_);
  if (!status.ok()) return toGrpc(status, "KV transfer failed");

  const std::string transport = transportName();
  context_.metrics->countPrefill(PrefillKind::kServed);
  context_.metrics->observeTransfer(
      "sent", transport, bytes, blocks_sent_,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  response_->set_first_token(done->token);
  response_->set_logprob(done->logprob);
  for (const generation::TokenLogprob& t : done->top_logprobs) {
    auto* top = response_->add_top_logprobs();
    top->set_token_id(t.token);
    top->set_logprob(t.logprob);
  }
  response_->set_num_blocks_sent(blocks_sent_);
  response_->set_bytes_sent(bytes);
  response_->set_num_cached_tokens(done->num_cached_tokens);
  response_->set_transport(transport);
  return grpc::Status::OK;
}

PrefillReactor::PrefillReactor(WorkerContext& context, const tandem::v1::PrefillRequest& request,
                               tandem::v1::PrefillResponse* response)
    : job_(std::make_shared<PrefillJob>(context, request, response, this)) {
  job_->start();
}

void PrefillReactor::OnCancel() { job_->cancel(); }

void PrefillReactor::OnDone() { delete this; }

}  // namespace tandem::worker
