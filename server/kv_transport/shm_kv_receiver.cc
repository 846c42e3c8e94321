#include "server/kv_transport/shm_kv_receiver.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/kv_transport/block_checksum.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/shm_protocol.h"

namespace tandem::kv_transport {

using shm::MessageType;

struct ShmKvReceiver::Loop {
  int listen_fd = -1;
  int wake_fd = -1;
  std::mutex mu;
  bool stopping = false;
  // transfers the table ended (timeout, cancel) whose sender must be told.
  std::vector<std::pair<uint64_t, absl::Status>> aborts;

  ~Loop() {
    if (listen_fd >= 0) close(listen_fd);
    if (wake_fd >= 0) close(wake_fd);
  }
  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd, &one, sizeof(one));
  }
};

namespace {

struct Connection {
  int fd = -1;
  shm::FrameBuffer in;
  ActiveTransferPtr active;
  // which blocks D re-reads: index i when (i + salt) % one_in == 0, and
  // index salt % n; the salt is drawn when the transfer is claimed, so P
  // cannot know the sample while copying.
  uint64_t salt = 0;
};

void sendResult(int fd, const absl::Status& status, int failed_block) {
  shm::Writer w;
  w.i32(static_cast<int32_t>(status.code())).i32(failed_block);
  w.bytes(std::string_view(status.message().data(), status.message().size()));
  // the sender may be gone already: nothing more to do then.
  (void)shm::writeFrame(fd, MessageType::kResult, w.str());
}

int failedBlockOf(const absl::Status& s, int index) {
  return s.code() == absl::StatusCode::kDataLoss ? index : -1;
}

// runs the socket: accepts senders, answers their frames, verifies blocks.
class Server {
 public:
  Server(std::shared_ptr<ShmKvReceiver::Loop> loop, ShmRegionPtr region,
         std::shared_ptr<TransferTable> table, std::vector<uint32_t> allowed_peer_uids,
         int verify_one_in)
      : loop_(std::move(loop)),
        region_(std::move(region)),
        table_(std::move(table)),
        allowed_peer_uids_(std::move(allowed_peer_uids)),
        verify_one_in_(std::max(1, verify_one_in)) {}

  void run() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    while (true) {
      fds.assign({{loop_->wake_fd, POLLIN, 0}, {loop_->listen_fd, POLLIN, 0}});
      ids.clear();
      for (auto& [id, c] : conns_) {
        fds.push_back({c.fd, POLLIN, 0});
        ids.push_back(id);
      }
      if (poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
      if (fds[0].revents != 0) {
        uint64_t v;
        [[maybe_unused]] ssize_t n = read(loop_->wake_fd, &v, sizeof(v));
        std::vector<std::pair<uint64_t, absl::Status>> aborts;
        {
          std::lock_guard<std::mutex> lock(loop_->mu);
          if (loop_->stopping) break;
          aborts.swap(loop_->aborts);
        }
        for (auto& [id, status] : aborts) {
          auto it = conns_.find(id);
          if (it == conns_.end()) continue;
          sendResult(it->second.fd, status, -1);
          closeConnection(id, status);
        }
      }
      if (fds[1].revents & POLLIN) {
        int fd = accept4(loop_->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) accepted(fd);
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        // an abort above may have closed this connection already.
        if (fds[i].revents != 0 && conns_.count(ids[i - 2]) != 0) serve(ids[i - 2]);
      }
    }
    std::vector<uint64_t> left;
    for (auto& [id, c] : conns_) left.push_back(id);
    for (uint64_t id : left) closeConnection(id, absl::UnavailableError("the KV receiver shut down"));
  }

 private:
  // serves `fd` when its peer runs as an allowed uid; closes it otherwise
  // (before reading a byte: a stranger learns nothing, not even a transfer id).
  void accepted(int fd) {
    absl::Status peer = shm::checkPeer(fd, allowed_peer_uids_);
    if (peer.ok()) {
      conns_[next_id_++].fd = fd;
      return;
    }
    std::fprintf(stderr, "tandem: shm KV receiver refused a connection: %s\n",
                 std::string(peer.message()).c_str());
    close(fd);
  }

  void closeConnection(uint64_t id, const absl::Status& why) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    if (it->second.active) it->second.active->fail(why);
    close(it->second.fd);
    conns_.erase(it);
  }

  void serve(uint64_t id) {
    Connection& c = conns_.at(id);
    absl::Status read = c.in.fill(c.fd);
    shm::Frame frame;
    while (true) {
      auto got = c.in.next(&frame);
      if (!got.ok()) {
        closeConnection(id, got.status());
        return;
      }
      if (!*got) break;
      if (!handle(c, frame)) {
        closeConnection(id, absl::UnavailableError("the KV sender's connection was closed"));
        return;
      }
    }
    if (!read.ok()) {
      closeConnection(id, absl::UnavailableError(absl::StrCat(
                              "the sender went away before it finished: ", read.message())));
    }
  }

  // false when the connection is over (a verdict was sent).
  bool handle(Connection& c, const shm::Frame& frame) {
    shm::Reader r(frame.payload);
    const KvStorage& storage = table_->storage();
    switch (frame.type) {
      case MessageType::kOpen: {
        uint64_t block_bytes = 0;
        std::string transfer_id;
        if (c.active || !r.u64(&block_bytes) || !r.bytes(&transfer_id)) {
          return refuse(c, absl::InvalidArgumentError("malformed open"));
        }
        if (absl::Status s = checkSenderBlockBytes(block_bytes, storage); !s.ok()) return refuse(c, s);
        uint64_t conn_id = idOf(c);
        std::weak_ptr<ShmKvReceiver::Loop> weak = loop_;
        auto claimed = table_->claim(transfer_id, "shm", [weak, conn_id](const absl::Status& s) {
          if (auto loop = weak.lock()) {
            std::lock_guard<std::mutex> lock(loop->mu);
            loop->aborts.emplace_back(conn_id, s);
            loop->wake();
          }
        });
        if (!claimed.ok()) return refuse(c, claimed.status());
        c.active = *std::move(claimed);
        c.salt = randomU64();
        shm::Writer w;
        w.i32(0).u64(region_->bytes()).u64(region_->id());
        w.u32(static_cast<uint32_t>(c.active->numBlocks()));
        const uint64_t base =
            static_cast<uint64_t>(static_cast<char*>(storage.data) - static_cast<char*>(region_->data()));
        w.u64(base);
        for (int i = 0; i < c.active->numBlocks(); ++i) w.i32(c.active->dstBlock(i));
        return shm::writeFrame(c.fd, MessageType::kOpened, w.str(), region_->fd()).ok();
      }
      case MessageType::kBlocks: {
        if (!c.active) return refuse(c, absl::InvalidArgumentError("blocks before open"));
        while (r.left() > 0) {
          int32_t index = 0;
          uint64_t hash = 0, checksum = 0;
          if (!r.i32(&index) || !r.u64(&hash) || !r.u64(&checksum)) {
            return refuse(c, absl::InvalidArgumentError("malformed block list"));
          }
          absl::Status s = c.active->beginBlock(index, hash);
          if (s.ok()) {
            // verify the sampled blocks' bytes as D will read them, in D's
            // own storage; take P's word for the others.
            const uint64_t n = static_cast<uint64_t>(c.active->numBlocks());
            const uint64_t i = static_cast<uint64_t>(index);
            const bool sampled = (i + c.salt) % static_cast<uint64_t>(verify_one_in_) == 0 || i == c.salt % n;
            const uint64_t stored =
                sampled ? blockChecksum(storage.block(c.active->dstBlock(index)), storage.block_bytes)
                        : checksum;
            s = c.active->endBlock(index, checksum, stored);
          }
          if (!s.ok()) {
            sendResult(c.fd, s, failedBlockOf(s, index));
            return false;
          }
        }
        return true;
      }
      case MessageType::kFinish: {
        if (!c.active) return refuse(c, absl::InvalidArgumentError("finish before open"));
        sendResult(c.fd, c.active->finish(), -1);
        return false;
      }
      default:
        return refuse(c, absl::InvalidArgumentError("unknown KV control frame"));
    }
  }

  // answers an open (or a broken protocol) with an error; ends the connection.
  bool refuse(Connection& c, const absl::Status& s) {
    if (c.active) {
      c.active->fail(s);
      sendResult(c.fd, s, -1);
    } else {
      shm::Writer w;
      w.i32(static_cast<int32_t>(s.code())).u64(0).u64(0).u32(0).u64(0);
      w.bytes(std::string_view(s.message().data(), s.message().size()));
      (void)shm::writeFrame(c.fd, MessageType::kOpened, w.str());
    }
    return false;
  }

  uint64_t idOf(const Connection& c) const {
    for (auto& [id, conn] : conns_) {
      if (&conn == &c) return id;
    }
    return 0;
  }

  std::shared_ptr<ShmKvReceiver::Loop> loop_;
  ShmRegionPtr region_;
  std::shared_ptr<TransferTable> table_;
  const std::vector<uint32_t> allowed_peer_uids_;
  const int verify_one_in_;
  std::map<uint64_t, Connection> conns_;
  uint64_t next_id_ = 1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ShmKvReceiver>> ShmKvReceiver::create(
    const ShmKvReceiverOptions& options, ShmRegionPtr region, std::shared_ptr<TransferTable> table) {
  const KvStorage& s = table->storage();
  const char* begin = static_cast<const char*>(region->data());
  const char* data = static_cast<const char*>(s.data);
  if (data < begin ||
      static_cast<size_t>(data - begin) + s.block_bytes * static_cast<size_t>(s.num_blocks) >
          region->bytes()) {
    return absl::InvalidArgumentError("the KV storage does not lie inside the shared region");
  }
  std::unique_ptr<ShmKvReceiver> r(new ShmKvReceiver());
  r->region_ = std::move(region);
  r->table_ = std::move(table);
  r->loop_ = std::make_shared<Loop>();
  std::string name = options.socket_name.empty()
                         ? absl::StrFormat("tandem-kv-%d-%016x", getpid(), randomU64())
                         : options.socket_name;
  ASSIGN_OR_RETURN(r->loop_->listen_fd, shm::listenAbstract(name));
  r->loop_->wake_fd = eventfd(0, EFD_CLOEXEC);
  if (r->loop_->wake_fd < 0) return absl::InternalError("eventfd failed");
  r->endpoint_ = formatEndpoint({TransportKind::kShm, name, localBootId()});
  r->thread_ = std::thread([server = std::make_shared<Server>(r->loop_, r->region_, r->table_,
                                                             options.allowed_peer_uids,
                                                             options.verify_one_in)] {
    server->run();
  });
  return r;
}

ShmKvReceiver::~ShmKvReceiver() {
  {
    std::lock_guard<std::mutex> lock(loop_->mu);
    loop_->stopping = true;
  }
  loop_->wake();
  thread_.join();
}

}  // namespace tandem::kv_transport
