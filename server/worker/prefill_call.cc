#include "server/worker/prefill_call.h"

#include "absl/strings/str_cat.h"
#include "common/call_executor.h"
#include "common/grpc/status_mapping.h"
#include "common/status.h"
#include "generation/request_limits.h"
#include "proto/convert/sampling_params_proto.h"
#include "server/kv_transport/endpoint.h"
#include "server/worker/prompt_block_hashes.h"

namespace tandem::worker {
namespace {

// forwards gRPC's callbacks to the call, which outlives it.
class PrefillReactor final : public grpc::ServerUnaryReactor {
 public:
  void attach(std::shared_ptr<PrefillCall> call) { call_ = std::move(call); }

  // grpc::ServerUnaryReactor
  void OnCancel() override { call_->cancel(); }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<PrefillCall> call_;
};

}  // namespace

grpc::ServerUnaryReactor* PrefillCall::start(WorkerContext& context,
                                             const tandem::v1::PrefillRequest& request,
                                             tandem::v1::PrefillResponse* response) {
  auto* reactor = new PrefillReactor();
  auto call = std::make_shared<PrefillCall>(context, request, response, reactor);
  reactor->attach(call);
  context.tracker.enter();
  ++context.transfers_in_flight;
  if (context.executor == nullptr || !context.executor->post([call] { call->begin(); })) {
    call->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is stopping"));
  }
  return reactor;
}

PrefillCall::PrefillCall(WorkerContext& context, const tandem::v1::PrefillRequest& request,
                         tandem::v1::PrefillResponse* response, grpc::ServerUnaryReactor* reactor)
    : context_(context),
      request_(request),
      in_flight_(crash::InFlightIds::global().hold(request.request_id())),
      response_(response),
      reactor_(reactor) {}

void PrefillCall::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  scheduleLocked();
}

void PrefillCall::scheduleLocked() {
  if (step_queued_) return;
  step_queued_ = true;
  auto self = shared_from_this();
  // the executor stops only after every call ended (Worker::shutdown).
  context_.executor->post([self] { self->step(); });
}

void PrefillCall::finish(const grpc::Status& status) {
  --context_.transfers_in_flight;
  // after Finish the reactor may be deleted at any time.
  reactor_->Finish(status);
  context_.tracker.leave();
}

grpc::Status PrefillCall::validate(generation::SamplingParams* params) const {
  if (!servesPrefill(context_.options.role) || context_.sender == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this is a decode worker: it does not serve Prefill");
  }
  const int prompt_len = request_.token_ids_size();
  const int num_blocks = numPromptBlocks(prompt_len, context_.block_size);
  if (prompt_len > 0 && (request_.skip_blocks() < 0 || request_.skip_blocks() >= num_blocks)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("skip_blocks must be in [0, ", num_blocks, ")"));
  }
  if (request_.kv_endpoint().empty() || request_.transfer_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "kv_endpoint and transfer_id are required");
  }
  absl::StatusOr<generation::SamplingParams> parsed = rpc::fromProto(request_.params());
  if (!parsed.ok()) return grpc_util::toGrpcStatus(parsed.status(), "params");
  *params = std::move(*parsed);
  params->max_tokens = 1;
  // D prefills a request scoring its prompt itself: P returns no scores.
  params->prompt_logprobs.reset();
  params->grammar_replay_tokens = request_.grammar_replay_tokens();
  // the engine asserts the limits: what comes over the wire is checked here.
  const std::span<const int32_t> prompt(request_.token_ids().data(), request_.token_ids().size());
  return grpc_util::toGrpcStatus(
      generation::checkRequest(context_.loop->limits(), prompt, *params));
}

void PrefillCall::begin() {
  generation::SamplingParams params;
  if (grpc::Status invalid = validate(&params); !invalid.ok()) {
    finish(invalid);
    return;
  }
  const std::vector<int32_t> prompt(request_.token_ids().begin(), request_.token_ids().end());
  hashes_ = promptBlockHashes(prompt, context_.block_size);
  start_ = std::chrono::steady_clock::now();
  if (context_.send_staging != nullptr) {
    // every block D needs has its slot before the prefill starts: a call
    // never waits for slots another call holds (D prefills locally instead).
    const int num_blocks = numPromptBlocks(static_cast<int>(prompt.size()), context_.block_size);
    auto lease = context_.send_staging->acquire(num_blocks - request_.skip_blocks());
    if (!lease.ok()) {
      finish(grpc_util::toGrpcStatus(lease.status(), "cannot stage the KV blocks"));
      return;
    }
    staging_ = std::move(*lease);
  }
  auto stream = context_.sender->open({request_.kv_endpoint(), request_.transfer_id()});
  if (!stream.ok()) {
    staging_.reset();
    finish(grpc_util::toGrpcStatus(stream.status(), "cannot reach the KV receiver"));
    return;
  }
  stream_ = std::move(*stream);

  id_ = context_.newRequestId();
  auto self = shared_from_this();
  // the engine holds the prefill's blocks once it is done, until complete()
  // sent them (the held-prefill connector), and reports each step's progress.
  engine::HeldPrefillConnector& held = context_.loop->heldPrefills();
  held.watch(id_, [self](int num_computed, std::span<const int32_t> table) {
    std::lock_guard lock(self->mu_);
    self->num_computed_ = num_computed;
    self->block_table_.assign(table.begin(), table.end());
    self->scheduleLocked();
  });
  auto on_done = [self](const generation::TokenOutput& out) {
    std::lock_guard lock(self->mu_);
    self->done_ = out;
    self->scheduleLocked();
  };
  absl::Status submitted = context_.loop->submit(id_, prompt, params, std::move(on_done), &held);
  if (!submitted.ok()) {
    held.release(id_);  // forgets the watch
    stream_.reset();
    staging_.reset();
    finish(grpc_util::toGrpcStatus(submitted, "cannot prefill"));
    return;
  }
  // this is the first step: carry on with what the engine reported so far.
  step();
}

void PrefillCall::cancelPrefill() {
  if (cancel_sent_) return;
  // the engine ends the request with kAbort (on_done).
  cancel_sent_ = true;
  context_.loop->cancel(id_);
}

void PrefillCall::step() {
  const int block_size = context_.block_size;
  while (true) {
    int computed = 0;
    bool cancelled = false;
    std::vector<int32_t> table;
    std::optional<generation::TokenOutput> done;
    {
      std::lock_guard lock(mu_);
      const bool work = done_.has_value() || (cancelled_ && !cancel_sent_) ||
                        (send_status_.ok() && num_computed_ / block_size > next_block_);
      if (!work) {
        step_queued_ = false;
        return;
      }
      cancelled = cancelled_;
      computed = num_computed_;
      table = block_table_;
      done = done_;
    }
    if (done) {
      // step_queued_ stays set: no step runs after this one.
      finish(complete(*done, table, cancelled));
      return;
    }
    if (cancelled && !cancel_sent_) {
      cancelPrefill();
      continue;
    }
    // full blocks below the computed tokens never change again.
    send_status_ = sendBlocks(computed / block_size, table);
    if (!send_status_.ok()) cancelPrefill();
  }
}

grpc::Status PrefillCall::complete(const generation::TokenOutput& done,
                                   const std::vector<int32_t>& table, bool cancelled) {
  if (done.token < 0 || !send_status_.ok()) {
    stream_.reset();  // aborts the transfer: D sees it fail
    staging_.reset();
    if (!send_status_.ok()) return grpc_util::toGrpcStatus(send_status_, "KV transfer failed");
    if (cancelled) return grpc::Status(grpc::StatusCode::CANCELLED, "the prefill was cancelled");
    return done.finish_reason == generation::FinishReason::kError
               ? grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while prefilling")
               : grpc::Status(grpc::StatusCode::UNAVAILABLE, "the prefill was aborted");
  }
  const int num_blocks = numPromptBlocks(request_.token_ids_size(), context_.block_size);
  absl::Status status = sendBlocks(num_blocks, table);
  if (status.ok()) status = stream_->finish();
  const uint64_t bytes = stream_->bytesSent();
  stream_.reset();
  staging_.reset();
  context_.loop->heldPrefills().release(id_);
  if (!status.ok()) return grpc_util::toGrpcStatus(status, "KV transfer failed");

  const std::string transport = transportName();
  context_.metrics->countPrefill(tandem::v1::PREFILL_KIND_SERVED);
  context_.metrics->observeTransfer(
      "sent", transport, bytes, blocks_sent_,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  fillResponse(done, bytes, transport);
  return grpc::Status::OK;
}

void PrefillCall::fillResponse(const generation::TokenOutput& done, uint64_t bytes,
                               const std::string& transport) {
  response_->set_first_token(done.token);
  response_->set_logprob(done.logprob);
  for (const generation::TokenLogprob& t : done.top_logprobs) {
    auto* top = response_->add_top_logprobs();
    top->set_token_id(t.token);
    top->set_logprob(t.logprob);
  }
  response_->set_num_blocks_sent(blocks_sent_);
  response_->set_bytes_sent(bytes);
  response_->set_num_cached_tokens(done.num_cached_tokens);
  response_->set_transport(transport);
}

std::string PrefillCall::transportName() const {
  const std::string_view name = context_.sender->name();
  if (name != "auto") return std::string(name);
  auto endpoints = kv_transport::parseEndpoints(request_.kv_endpoint());
  if (!endpoints.ok()) return "grpc";
  auto chosen = kv_transport::chooseEndpoint(*endpoints, kv_transport::TransportChoice::kAuto,
                                             kv_transport::localBootId());
  return chosen.ok() ? std::string(kv_transport::transportName(chosen->kind)) : "grpc";
}

absl::Status PrefillCall::sendBlocks(int end, const std::vector<int32_t>& block_table) {
  const engine::ModelRunner& runner = context_.loop->localEngine().runner();
  std::vector<kv_transport::KvBlock> blocks;
  const int skip = request_.skip_blocks();
  if (end > static_cast<int>(block_table.size())) {
    return absl::InternalError("the engine reported fewer blocks than the prompt fills");
  }
  const int begin = std::max(next_block_, skip);
  for (int b = begin; b < end; ++b) {
    kv_transport::KvBlock block;
    block.index = b - skip;
    block.hash = hashes_[b];
    block.data = context_.send_staging != nullptr
                     ? context_.send_staging->slotData(staging_.slots()[b - skip])
                     : runner.blockData(block_table[b]);
    blocks.push_back(block);
  }
  next_block_ = std::max(next_block_, end);
  if (blocks.empty()) return absl::OkStatus();
  if (context_.send_staging != nullptr) {
    // device -> pinned slots on the transfer stream; the step that computed
    // these blocks synchronized before reporting them.
    RETURN_IF_ERROR(context_.send_staging->download(
        std::span<const int32_t>(block_table).subspan(begin, end - begin), staging_,
        begin - skip));
  }
  blocks_sent_ += static_cast<int>(blocks.size());
  return stream_->send(blocks);
}

}  // namespace tandem::worker
