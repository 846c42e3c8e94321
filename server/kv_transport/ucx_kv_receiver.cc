#include "server/kv_transport/ucx_kv_receiver.h"

#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/kv_transport/block_checksum.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/shm_region.h"
#include "server/kv_transport/ucx_protocol.h"
#include "server/kv_transport/ucx_worker.h"

namespace tandem::kv_transport {

namespace {

using Clock = std::chrono::steady_clock;

// the receiver keeps endpoints to this many senders; idle ones beyond it close.
constexpr size_t kMaxIdlePeers = 64;
// how long the thread sleeps at most: bounds the wait for a pidfd the
// poll did not cover and for a missed wake-up.
constexpr std::chrono::milliseconds kMaxSleep{100};

// what other threads hand the worker thread: transfers the table ended
// (timeout, cancel) whose sender must be told, and the stop request.
struct Mailbox {
  std::mutex mu;
  bool stopping = false;
  std::vector<std::pair<uint64_t, absl::Status>> aborts;
  UcxWorker* worker = nullptr;  // null once the thread ended

  void post(uint64_t handle, const absl::Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    aborts.emplace_back(handle, s);
    if (worker != nullptr) worker->signal();
  }
};

// one sender process D talks back to.
struct Peer {
  ucp_ep_h ep = nullptr;
  std::string address;
  int pidfd = -1;       // same-host sender: readable once it exited
  bool failed = false;  // UCX reported the link broken
  std::string why;
  int transfers = 0;
};

struct Transfer {
  ActiveTransferPtr active;
  Peer* peer = nullptr;
  uint64_t stream = 0;
  int pending_receives = 0;  // kData blocks still arriving (rendezvous)
  bool finish_requested = false;
};

}  // namespace

class UcxKvReceiver::Server {
 public:
  Server(const UcxKvReceiverOptions& options, std::shared_ptr<TransferTable> table,
         UcxWorkerPtr worker, ucp_mem_h memory)
      : options_(options), table_(std::move(table)), worker_(std::move(worker)), memory_(memory) {
    mailbox_->worker = worker_.get();
  }
  // (run() cleans up; this covers a server that never ran.)
  ~Server() {
    if (worker_ != nullptr && memory_ != nullptr) ucp_mem_unmap(worker_->context()->get(), memory_);
  }

  absl::Status installHandlers() {
    RETURN_IF_ERROR(worker_->setHandler(ucx::kOpen, &Server::onOpen, this));
    RETURN_IF_ERROR(worker_->setHandler(ucx::kBlocks, &Server::onBlocks, this));
    RETURN_IF_ERROR(worker_->setHandler(ucx::kData, &Server::onData, this));
    RETURN_IF_ERROR(worker_->setHandler(ucx::kFinish, &Server::onFinish, this));
    return worker_->setHandler(ucx::kAbort, &Server::onAbort, this);
  }

  const std::shared_ptr<Mailbox>& mailbox() const { return mailbox_; }

  void run() {
    while (true) {
      worker_->progress();
      {
        std::vector<std::pair<uint64_t, absl::Status>> aborts;
        {
          std::lock_guard<std::mutex> lock(mailbox_->mu);
          if (mailbox_->stopping) break;
          aborts.swap(mailbox_->aborts);
        }
        // the table ended these already: tell their senders.
        for (auto& [handle, status] : aborts) end(handle, status, -1);
      }
      dropFailedPeers();
      evictIdlePeers();
      worker_->reapSends();
      worker_->progress();
      std::vector<pollfd> fds;
      std::vector<Peer*> watched;
      for (auto& [address, peer] : peers_) {
        if (peer->pidfd < 0 || peer->transfers == 0) continue;
        fds.push_back({peer->pidfd, POLLIN, 0});
        watched.push_back(peer.get());
      }
      worker_->sleep(kMaxSleep, fds);
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        watched[i]->failed = true;
        watched[i]->why = "the sender process exited";
      }
    }
    shutdown();
  }

 private:
  // --- active message handlers (on this thread, inside progress) ---

  // control messages arrive eagerly; a rendezvous one is refused (its
  // `data` would be a descriptor, not bytes).
  static bool isBytes(const ucp_am_recv_param_t* param) {
    return (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0;
  }

  static ucs_status_t onOpen(void* arg, const void*, size_t, void* data, size_t length,
                             const ucp_am_recv_param_t* param) {
    if (isBytes(param)) static_cast<Server*>(arg)->open(amBytes(data, length));
    return UCS_OK;
  }
  static ucs_status_t onBlocks(void* arg, const void*, size_t, void* data, size_t length,
                               const ucp_am_recv_param_t* param) {
    if (isBytes(param)) static_cast<Server*>(arg)->blocks(amBytes(data, length));
    return UCS_OK;
  }
  static ucs_status_t onFinish(void* arg, const void*, size_t, void* data, size_t length,
                               const ucp_am_recv_param_t* param) {
    if (isBytes(param)) static_cast<Server*>(arg)->finish(amBytes(data, length));
    return UCS_OK;
  }
  static ucs_status_t onAbort(void* arg, const void*, size_t, void* data, size_t length,
                              const ucp_am_recv_param_t* param) {
    auto handle = isBytes(param) ? ucx::decodeAbort(amBytes(data, length)) : std::nullopt;
    if (handle) {
      static_cast<Server*>(arg)->end(*handle, absl::UnavailableError("the KV sender gave up"), -1);
    }
    return UCS_OK;
  }
  static ucs_status_t onData(void* arg, const void* header, size_t header_length, void* data,
                             size_t length, const ucp_am_recv_param_t* param) {
    return static_cast<Server*>(arg)->data(amBytes(header, header_length), data, length, param);
  }

  void open(std::string_view payload) {
    auto m = ucx::decodeOpen(payload);
    if (!m) return;  // nobody to answer
    Peer* peer = peerFor(m->worker_address, m->boot_id, m->pid);
    if (peer == nullptr) return;
    ucx::OpenedMessage reply;
    reply.stream = m->stream;
    absl::Status s = accept(*m, peer, &reply);
    if (!s.ok()) {
      reply.code = static_cast<int32_t>(s.code());
      reply.message = std::string(s.message().substr(0, ucx::kMaxMessageBytes));
    }
    worker_->send(peer->ep, ucx::kOpened, ucx::encode(reply));
  }

  // claims the transfer for `peer`; fills the reply's handle and offsets.
  absl::Status accept(const ucx::OpenMessage& m, Peer* peer, ucx::OpenedMessage* reply) {
    const KvStorage& storage = table_->storage();
    RETURN_IF_ERROR(checkSenderBlockBytes(m.block_bytes, storage));
    uint64_t handle = 0;
    while (handle == 0 || transfers_.contains(handle)) handle = randomU64();
    std::weak_ptr<Mailbox> mailbox = mailbox_;
    ASSIGN_OR_RETURN(ActiveTransferPtr active,
                     table_->claim(m.transfer_id, "ucx",
                                   [mailbox, handle](const absl::Status& s) {
                                     if (auto box = mailbox.lock()) box->post(handle, s);
                                   },
                                   m.token));
    reply->handle = handle;
    reply->offsets.reserve(active->numBlocks());
    // ids are inside the storage (expect() checked), so no product overflows.
    for (int i = 0; i < active->numBlocks(); ++i) {
      reply->offsets.push_back(static_cast<uint64_t>(active->dstBlock(i)) * storage.block_bytes);
    }
    transfers_[handle] = Transfer{std::move(active), peer, m.stream};
    ++peer->transfers;
    return absl::OkStatus();
  }

  void blocks(std::string_view payload) {
    auto m = ucx::decodeBlocks(payload);
    if (!m) return;
    auto it = transfers_.find(m->handle);
    if (it == transfers_.end()) return;  // ended already (or a stranger)
    const KvStorage& storage = table_->storage();
    for (const ucx::BlockNote& b : m->blocks) {
      ActiveTransfer& t = *it->second.active;
      absl::Status s = t.beginBlock(b.index, b.hash);
      if (s.ok()) {
        // verify the bytes as D will read them, in D's own storage.
        s = t.endBlock(b.index, b.checksum,
                       blockChecksum(storage.block(t.dstBlock(b.index)), storage.block_bytes));
      }
      if (!s.ok()) {
        end(m->handle, s, s.code() == absl::StatusCode::kDataLoss ? b.index : -1);
        return;
      }
    }
  }

  // one block's bytes (no RMA): into its destination block, then verified.
  ucs_status_t data(std::string_view header, void* data, size_t length,
                    const ucp_am_recv_param_t* param) {
    auto h = ucx::decodeDataHeader(header);
    if (!h) return UCS_OK;
    auto it = transfers_.find(h->handle);
    if (it == transfers_.end()) return UCS_OK;
    ActiveTransfer& t = *it->second.active;
    const KvStorage& storage = table_->storage();
    absl::Status s = t.beginBlock(h->block.index, h->block.hash);
    if (s.ok() && length != storage.block_bytes) {
      s = absl::InvalidArgumentError(absl::StrCat("block ", h->block.index, " has ", length,
                                                  " bytes, expected ", storage.block_bytes));
    }
    if (!s.ok()) {
      end(h->handle, s, s.code() == absl::StatusCode::kDataLoss ? h->block.index : -1);
      return UCS_OK;
    }
    char* dst = storage.block(t.dstBlock(h->block.index));
    if (isBytes(param)) {
      std::memcpy(dst, data, length);
      verify(h->handle, h->block);
      return UCS_OK;
    }
    auto* pending = new PendingReceive{this, h->handle, h->block};
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    params.cb.recv_am = &Server::onReceived;
    params.user_data = pending;
    ucs_status_ptr_t request = ucp_am_recv_data_nbx(worker_->get(), data, dst, length, &params);
    if (request == nullptr) {
      delete pending;
      verify(h->handle, h->block);
    } else if (UCS_PTR_IS_ERR(request)) {
      delete pending;
      end(h->handle, ucxError(absl::StatusCode::kUnavailable, "receiving a block", UCS_PTR_STATUS(request)), -1);
    } else {
      ++it->second.pending_receives;
    }
    return UCS_INPROGRESS;
  }

  struct PendingReceive {
    Server* server;
    uint64_t handle;
    ucx::BlockNote block;
  };

  static void onReceived(void* request, ucs_status_t status, size_t, void* user_data) {
    std::unique_ptr<PendingReceive> pending(static_cast<PendingReceive*>(user_data));
    ucp_request_free(request);
    Server* self = pending->server;
    auto it = self->transfers_.find(pending->handle);
    if (it == self->transfers_.end()) return;
    --it->second.pending_receives;
    if (status != UCS_OK) {
      self->end(pending->handle, ucxError(absl::StatusCode::kUnavailable, "receiving a block", status), -1);
      return;
    }
    if (!self->verify(pending->handle, pending->block)) return;
    if (it->second.finish_requested && it->second.pending_receives == 0) {
      self->complete(pending->handle);
    }
  }

  // checks a stored kData block; false when that ended the transfer.
  bool verify(uint64_t handle, const ucx::BlockNote& b) {
    auto it = transfers_.find(handle);
    if (it == transfers_.end()) return false;
    const KvStorage& storage = table_->storage();
    ActiveTransfer& t = *it->second.active;
    absl::Status s = t.endBlock(
        b.index, b.checksum, blockChecksum(storage.block(t.dstBlock(b.index)), storage.block_bytes));
    if (s.ok()) return true;
    end(handle, s, s.code() == absl::StatusCode::kDataLoss ? b.index : -1);
    return false;
  }

  void finish(std::string_view payload) {
    auto m = ucx::decodeFinish(payload);
    if (!m) return;
    auto it = transfers_.find(m->handle);
    if (it == transfers_.end()) return;
    if (!tokensEqual(m->token, it->second.active->token())) {
      end(m->handle, absl::PermissionDeniedError("wrong token in the KV sender's completion"), -1);
      return;
    }
    // blocks still arriving are verified first.
    if (it->second.pending_receives > 0) {
      it->second.finish_requested = true;
      return;
    }
    complete(m->handle);
  }

  // the sender finished and every block arrived: D's verdict.
  void complete(uint64_t handle) {
    auto it = transfers_.find(handle);
    if (it == transfers_.end()) return;
    const absl::Status verdict = it->second.active->finish();
    reply(it->second, verdict, -1);
    forget(it);
  }

  // ends transfer `handle` with `status` (unless already ended) and tells
  // its sender.
  void end(uint64_t handle, const absl::Status& status, int failed_block) {
    auto it = transfers_.find(handle);
    if (it == transfers_.end()) return;
    it->second.active->fail(status);
    // the first end wins: report what the table kept.
    absl::Status final_status = it->second.active->status();
    if (final_status.ok()) final_status = status;
    reply(it->second, final_status, final_status.code() == absl::StatusCode::kDataLoss ? failed_block : -1);
    forget(it);
  }

  void reply(const Transfer& t, const absl::Status& status, int failed_block) {
    if (t.peer->failed) return;
    ucx::ResultMessage r;
    r.stream = t.stream;
    r.code = static_cast<int32_t>(status.code());
    r.failed_block = failed_block;
    r.message = std::string(status.message().substr(0, ucx::kMaxMessageBytes));
    worker_->send(t.peer->ep, ucx::kResult, ucx::encode(r));
  }

  void forget(absl::flat_hash_map<uint64_t, Transfer>::iterator it) {
    --it->second.peer->transfers;
    transfers_.erase(it);
  }

  // --- senders ---

  static void onPeerError(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* peer = static_cast<Peer*>(arg);
    peer->failed = true;
    peer->why = absl::StrCat("UCX: ", ucs_status_string(status));
  }

  Peer* peerFor(const std::string& address, const std::string& boot_id, uint32_t pid) {
    auto it = peers_.find(address);
    if (it != peers_.end() && !it->second->failed) return it->second.get();
    auto peer = std::make_unique<Peer>();
    peer->address = address;
    // a same-host sender's exit is seen on its pidfd (UCX's shared-memory
    // transports detect no peer failure); UCX watches a remote one.
    const bool same_host = boot_id == localBootId();
    if (same_host) peer->pidfd = openPidfd(pid);
    auto ep = worker_->connect(address, !same_host, &Server::onPeerError, peer.get());
    if (!ep.ok()) {
      if (peer->pidfd >= 0) ::close(peer->pidfd);
      return nullptr;
    }
    peer->ep = *ep;
    Peer* raw = peer.get();
    if (it != peers_.end()) {
      // (closed by the loop: this runs inside a UCX callback.)
      dead_peers_.push_back(std::move(it->second));
      it->second = std::move(peer);
    } else {
      peers_.emplace(address, std::move(peer));
    }
    return raw;
  }

  // (on the loop, never inside a UCX callback: closing progresses the worker.)
  void evictIdlePeers() {
    if (peers_.size() <= kMaxIdlePeers) return;
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (it->second->transfers == 0) {
        closePeer(*it->second);
        it = peers_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // fails the transfers of senders that went away and forgets them.
  void dropFailedPeers() {
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (it->second->failed) {
        dead_peers_.push_back(std::move(it->second));
        it = peers_.erase(it);
      } else {
        ++it;
      }
    }
    // (closing progresses the worker, whose callbacks may add to dead_peers_.)
    std::vector<std::unique_ptr<Peer>> dead = std::exchange(dead_peers_, {});
    for (std::unique_ptr<Peer>& p : dead) {
      Peer& peer = *p;
      const absl::Status gone = absl::UnavailableError(
          absl::StrCat("the KV sender went away before it finished (", peer.why, ")"));
      std::vector<uint64_t> handles;
      for (auto& [handle, t] : transfers_) {
        if (t.peer == &peer) handles.push_back(handle);
      }
      for (uint64_t h : handles) end(h, gone, -1);
      closePeer(peer);
    }
  }

  void closePeer(Peer& peer) {
    worker_->close(peer.ep, peer.failed);
    if (peer.pidfd >= 0) ::close(peer.pidfd);
  }

  void shutdown() {
    std::vector<uint64_t> handles;
    for (auto& [handle, t] : transfers_) handles.push_back(handle);
    for (uint64_t h : handles) end(h, absl::UnavailableError("the KV receiver shut down"), -1);
    worker_->waitUntil([this] { return worker_->reapSends(); }, Clock::now() + std::chrono::seconds(1));
    for (auto& [address, peer] : peers_) peer->failed = true;
    dropFailedPeers();
    {
      std::lock_guard<std::mutex> lock(mailbox_->mu);
      mailbox_->worker = nullptr;
    }
    if (memory_ != nullptr) ucp_mem_unmap(worker_->context()->get(), memory_);
    worker_.reset();
  }

  const UcxKvReceiverOptions options_;
  std::shared_ptr<TransferTable> table_;
  UcxWorkerPtr worker_;
  ucp_mem_h memory_;
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();
  std::map<std::string, std::unique_ptr<Peer>> peers_;
  // replaced or failed senders, closed (and their transfers failed) by the loop.
  std::vector<std::unique_ptr<Peer>> dead_peers_;
  absl::flat_hash_map<uint64_t, Transfer> transfers_;

  friend class UcxKvReceiver;
};

absl::StatusOr<std::unique_ptr<UcxKvReceiver>> UcxKvReceiver::create(
    const UcxKvReceiverOptions& options, std::shared_ptr<TransferTable> table) {
  ASSIGN_OR_RETURN(UcxContextPtr context, UcxContext::create());
  ASSIGN_OR_RETURN(UcxWorkerPtr worker, UcxWorker::create(context));
  const KvStorage& storage = table->storage();
  ucx::UcxEndpoint e;
  e.worker_address = worker->address();
  e.boot_id = localBootId();
  e.pid = static_cast<uint32_t>(getpid());
  ucp_mem_h memory = nullptr;
  if (options.rma) {
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = storage.data;
    params.length = storage.block_bytes * static_cast<size_t>(storage.num_blocks);
    ucs_status_t s = ucp_mem_map(context->get(), &params, &memory);
    if (s != UCS_OK) return ucxError(absl::StatusCode::kUnavailable, "registering the KV storage", s);
    void* rkey = nullptr;
    size_t rkey_bytes = 0;
    s = ucp_rkey_pack(context->get(), memory, &rkey, &rkey_bytes);
    if (s != UCS_OK) {
      ucp_mem_unmap(context->get(), memory);
      return ucxError(absl::StatusCode::kUnavailable, "packing the KV storage's rkey", s);
    }
    e.rkey.assign(static_cast<const char*>(rkey), rkey_bytes);
    ucp_rkey_buffer_release(rkey);
    e.base = reinterpret_cast<uint64_t>(storage.data);
    e.bytes = params.length;
  }
  std::unique_ptr<UcxKvReceiver> r(new UcxKvReceiver());
  r->table_ = std::move(table);
  r->endpoint_ = ucx::formatUcxEndpoint(e);
  r->server_ = std::make_shared<Server>(options, r->table_, std::move(worker), memory);
  RETURN_IF_ERROR(r->server_->installHandlers());
  r->thread_ = std::thread([server = r->server_] { server->run(); });
  return r;
}

UcxKvReceiver::~UcxKvReceiver() {
  {
    std::lock_guard<std::mutex> lock(server_->mailbox()->mu);
    server_->mailbox()->stopping = true;
    if (server_->mailbox()->worker != nullptr) server_->mailbox()->worker->signal();
  }
  if (thread_.joinable()) thread_.join();
}

std::string UcxKvReceiver::transferEndpoint(const std::string& transfer_id) const {
  const std::string token = table_->token(transfer_id);
  return token.empty() ? endpoint_ : endpoint_ + ucx::tokenParam(token);
}

}  // namespace tandem::kv_transport
