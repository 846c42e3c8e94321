#include "server/kv_transport/ucx_kv_sender.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/kv_transport/block_checksum.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/ucx_connection.h"

namespace tandem::kv_transport {

namespace {

using Clock = std::chrono::steady_clock;

// D is told about written blocks at least every this many bytes, so it
// verifies them while the next ones move (as the shm transport does).
constexpr size_t kVerifyBatchBytes = 4 << 20;

// send() returns once no more than this many of its bytes are still
// leaving: the kernel's socket buffer keeps moving them while the caller
// prepares the next blocks (the caller's thread drives UCX; nobody
// progresses it between calls).
constexpr size_t kSendWindowBytes = 8 << 20;

absl::Status statusFrom(int32_t code, const std::string& message) {
  if (code == 0) return absl::OkStatus();
  // a code from the peer: only absl's own.
  if (code < 0 || code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(absl::StrCat("KV receiver answered code ", code, ": ", message));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

// a request whose completion the stream waits for, with the buffers UCX
// reads until then (a message header, a corrupted copy of a block).
struct InFlight {
  ucs_status_ptr_t request;
  size_t bytes;
  std::unique_ptr<std::string> header;
  std::unique_ptr<std::string> copy;
};

// blocks written and flushed (flush pending), to be named to D once the
// flush completed.
struct Group {
  ucs_status_ptr_t flush = nullptr;
  ucx::BlocksMessage blocks;
};

class UcxSendStream final : public KvSendStream {
 public:
  UcxSendStream(const KvSenderOptions& options, std::shared_ptr<UcxConnectionPool> pool,
                std::string key, std::unique_ptr<UcxConnection> connection,
                ucx::OpenedMessage opened, std::string token, Clock::time_point deadline)
      : options_(options),
        pool_(std::move(pool)),
        key_(std::move(key)),
        c_(std::move(connection)),
        handle_(opened.handle),
        offsets_(std::move(opened.offsets)),
        sent_(offsets_.size(), false),
        token_(std::move(token)),
        deadline_(deadline) {
    group_.blocks.handle = handle_;
  }

  ~UcxSendStream() override {
    if (c_ == nullptr) return;
    if (!verdict_ && (!finished_ || !final_.ok())) {
      // tell D at once rather than leave it to the deadline.
      c_->worker().send(c_->ep(), ucx::kAbort, ucx::encodeAbort(handle_));
      if (final_.ok()) final_ = absl::CancelledError("the stream was dropped");
    }
    // the caller's blocks must be let go of before it may reuse them.
    drain(Clock::now() + std::chrono::seconds(2));
    if (finished_ && final_.ok() && c_->health().ok() && inflight_.empty() && groups_.empty()) {
      pool_->give(key_, std::move(c_));
    }
  }

  // KvSendStream
  absl::Status send(std::span<const KvBlock> blocks) override {
    if (finished_) return absl::FailedPreconditionError("send() after finish()");
    // D may have ended the transfer (a bad block, its deadline, a cancel):
    // hear of it before writing more into its storage.
    c_->worker().progress();
    RETURN_IF_ERROR(check());
    for (const KvBlock& b : blocks) {
      if (b.index < 0 || static_cast<size_t>(b.index) >= offsets_.size() || sent_[b.index] ||
          b.data == nullptr) {
        return fail(absl::InvalidArgumentError(
            absl::StrCat("block index ", b.index, " is out of range, sent twice or empty")));
      }
      sent_[b.index] = true;
      RETURN_IF_ERROR(put(b));
      bytes_sent_ += options_.block_bytes;
    }
    closeGroup();
    const bool done = c_->worker().waitUntil(
        [this] {
          pump();
          return inflightBytes() <= kSendWindowBytes || !final_.ok() || !c_->health().ok() ||
                 c_->hasResult();
        },
        deadline_);
    if (!done) return fail(absl::DeadlineExceededError("the KV transfer ran out of time"));
    return check();
  }

  absl::Status finish() override {
    if (finished_) return absl::FailedPreconditionError("finish() called twice");
    finished_ = true;
    RETURN_IF_ERROR(check());
    closeGroup();
    // every block written, flushed and named to D before the completion.
    bool done = c_->worker().waitUntil(
        [this] {
          pump();
          return (inflight_.empty() && groups_.empty()) || !c_->health().ok() || c_->hasResult();
        },
        deadline_);
    if (!done) return fail(absl::DeadlineExceededError("the KV transfer ran out of time"));
    RETURN_IF_ERROR(check());
    c_->worker().send(c_->ep(), ucx::kFinish, ucx::encode(ucx::FinishMessage{handle_, token_}));
    done = c_->worker().waitUntil([this] { return !c_->health().ok() || c_->hasResult(); },
                                  deadline_);
    if (!done) return fail(absl::DeadlineExceededError("the KV receiver did not answer in time"));
    return check();
  }

  uint64_t bytesSent() const override { return bytes_sent_; }

 private:
  // the transfer's error once there is one: D's verdict (which wins), a
  // broken link, or an earlier failure here.
  absl::Status check() {
    if (!verdict_) {
      if (auto r = c_->takeResult()) {
        verdict_ = true;
        absl::Status s = statusFrom(r->code, r->message);
        if (s.ok() && !finished_) s = absl::FailedPreconditionError("the KV receiver ended the transfer");
        final_ = std::move(s);  // D's verdict wins over what this side saw
        return final_;
      }
    }
    if (!final_.ok() || verdict_) return final_;
    if (!c_->health().ok()) return fail(c_->health());
    if (c_->worker().failedSends() > 0) {
      return fail(absl::UnavailableError("a message to the KV receiver failed"));
    }
    return absl::OkStatus();
  }

  // records the transfer's first error (unless D already gave its verdict).
  absl::Status fail(absl::Status s) {
    if (final_.ok() && !verdict_) final_ = std::move(s);
    return final_;
  }

  // writes block `b` (RMA) or sends it (no rkey).
  absl::Status put(const KvBlock& b) {
    const uint64_t checksum = blockChecksum(b.data, options_.block_bytes);
    InFlight f{nullptr, options_.block_bytes, nullptr, nullptr};
    const void* src = b.data;
    if (options_.faults != nullptr) {
      // an injected fault spoils a copy, never the caller's block.
      f.copy = std::make_unique<std::string>(static_cast<const char*>(b.data), options_.block_bytes);
      options_.faults->inTransit(
          b.index, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(f.copy->data()), f.copy->size()));
      src = f.copy->data();
    }
    const ucx::BlockNote note{b.index, b.hash, checksum};
    ucp_request_param_t params{};
    if (c_->rkey() != nullptr) {
      f.request = ucp_put_nbx(c_->ep(), src, options_.block_bytes, c_->base() + offsets_[b.index],
                              c_->rkey(), &params);
      group_.blocks.blocks.push_back(note);
      group_bytes_ += options_.block_bytes;
    } else {
      f.header = std::make_unique<std::string>(ucx::encode(ucx::DataHeader{handle_, note}));
      f.request = ucp_am_send_nbx(c_->ep(), ucx::kData, f.header->data(), f.header->size(), src,
                                  options_.block_bytes, &params);
    }
    if (UCS_PTR_IS_ERR(f.request)) {
      return fail(ucxError(absl::StatusCode::kUnavailable, "writing a block", UCS_PTR_STATUS(f.request)));
    }
    if (f.request != nullptr) inflight_.push_back(std::move(f));
    if (group_bytes_ >= kVerifyBatchBytes) closeGroup();
    return absl::OkStatus();
  }

  size_t inflightBytes() const {
    size_t bytes = 0;
    for (const InFlight& f : inflight_) bytes += f.bytes;
    return bytes;
  }

  // flushes the blocks written since the last group; D hears of them once
  // they completed remotely (pump).
  void closeGroup() {
    if (group_.blocks.blocks.empty()) return;
    ucp_request_param_t params{};
    group_.flush = ucp_ep_flush_nbx(c_->ep(), &params);
    groups_.push_back(std::move(group_));
    group_ = Group{};
    group_.blocks.handle = handle_;
    group_bytes_ = 0;
  }

  // reaps completed requests and names flushed groups to D, in order.
  void pump() {
    std::erase_if(inflight_, [this](InFlight& f) {
      const ucs_status_t s = ucp_request_check_status(f.request);
      if (s == UCS_INPROGRESS) return false;
      if (s != UCS_OK) fail(ucxError(absl::StatusCode::kUnavailable, "writing a block", s)).IgnoreError();
      ucp_request_free(f.request);
      return true;
    });
    while (!groups_.empty()) {
      Group& g = groups_.front();
      if (g.flush != nullptr && !UCS_PTR_IS_ERR(g.flush) &&
          ucp_request_check_status(g.flush) == UCS_INPROGRESS) {
        break;
      }
      const ucs_status_t s = finishRequest(g.flush);
      if (s != UCS_OK) {
        fail(ucxError(absl::StatusCode::kUnavailable, "flushing blocks to the KV receiver", s)).IgnoreError();
      } else {
        c_->worker().send(c_->ep(), ucx::kBlocks, ucx::encode(g.blocks));
      }
      groups_.pop_front();
    }
    c_->worker().reapSends();
  }

  // waits (bounded) until UCX let go of every source byte.
  void drain(Clock::time_point until) {
    c_->worker().waitUntil(
        [this] {
          pump();
          return inflight_.empty() && groups_.empty() && c_->worker().reapSends();
        },
        std::min(until, deadline_ + std::chrono::seconds(1)));
    if (!inflight_.empty() || !groups_.empty()) {
      // still pending: closing the endpoint cancels them before c_ goes.
      c_.reset();
      inflight_.clear();
      groups_.clear();
    }
  }

  const KvSenderOptions options_;
  std::shared_ptr<UcxConnectionPool> pool_;
  const std::string key_;
  std::unique_ptr<UcxConnection> c_;
  const uint64_t handle_;
  const std::vector<uint64_t> offsets_;
  std::vector<bool> sent_;
  const std::string token_;
  const Clock::time_point deadline_;
  std::vector<InFlight> inflight_;
  std::deque<Group> groups_;
  Group group_;
  size_t group_bytes_ = 0;
  absl::Status final_;
  bool verdict_ = false;
  bool finished_ = false;
  uint64_t bytes_sent_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UcxKvSender>> UcxKvSender::create(const KvSenderOptions& options) {
  if (options.block_bytes == 0) return absl::InvalidArgumentError("KV sender needs block_bytes");
  ASSIGN_OR_RETURN(UcxContextPtr context, UcxContext::create());
  return std::unique_ptr<UcxKvSender>(
      new UcxKvSender(options, std::make_shared<UcxConnectionPool>(std::move(context))));
}

UcxKvSender::~UcxKvSender() = default;

absl::StatusOr<KvSendStreamPtr> UcxKvSender::open(const TransferTarget& target) {
  ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, parseEndpoints(target.endpoint));
  auto e = std::find_if(endpoints.begin(), endpoints.end(),
                        [](const Endpoint& x) { return x.kind == TransportKind::kUcx; });
  if (e == endpoints.end()) {
    return absl::InvalidArgumentError(absl::StrCat("no ucx:// endpoint in '", target.endpoint, "'"));
  }
  ASSIGN_OR_RETURN(ucx::UcxEndpoint d, ucx::parseUcxEndpoint(e->address));
  if (d.token.empty()) {
    return absl::InvalidArgumentError("the ucx:// KV endpoint carries no transfer token");
  }
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  // the pool's key: D's endpoint without this transfer's token.
  std::string key = ucx::formatUcxEndpoint(d);
  ASSIGN_OR_RETURN(std::unique_ptr<UcxConnection> c, pool_->take(key, d));
  const uint64_t stream = c->newStream();
  ucx::OpenMessage open;
  open.stream = stream;
  open.block_bytes = options_.block_bytes;
  open.transfer_id = target.transfer_id;
  open.token = d.token;
  open.worker_address = c->worker().address();
  open.boot_id = localBootId();
  open.pid = static_cast<uint32_t>(getpid());
  c->worker().send(c->ep(), ucx::kOpen, ucx::encode(open));
  std::optional<ucx::OpenedMessage> opened;
  const bool answered = c->worker().waitUntil(
      [&] {
        opened = c->takeOpened();
        return opened.has_value() || !c->health().ok() || c->worker().failedSends() > 0;
      },
      deadline);
  if (!answered) return absl::DeadlineExceededError("the KV receiver did not answer in time");
  if (!opened) {
    return c->health().ok() ? absl::UnavailableError("cannot reach the KV receiver") : c->health();
  }
  if (absl::Status refused = statusFrom(opened->code, opened->message); !refused.ok()) {
    pool_->give(key, std::move(c));  // D answered: the link is fine
    return refused;
  }
  // never write outside D's storage, whatever D says.
  if (c->rkey() != nullptr) {
    for (uint64_t offset : opened->offsets) {
      if (!ucx::rangeInside(offset, options_.block_bytes, c->bytes())) {
        return absl::InvalidArgumentError(
            absl::StrCat("block offset ", offset, " is outside D's storage"));
      }
    }
  }
  return KvSendStreamPtr(std::make_unique<UcxSendStream>(options_, pool_, std::move(key),
                                                         std::move(c), *std::move(opened),
                                                         std::move(d.token), deadline));
}

}  // namespace tandem::kv_transport
