// Who may use the shm KV transport's socket: it lives in the abstract
// namespace (no file permissions), so D serves only senders running as its
// own uid (or an allowed one) and P sends only to a D running as such a uid,
// both checked with SO_PEERCRED. Running a peer as another uid needs root,
// as the whole suite does; the check itself is also tested on a socket pair.
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "gtest/gtest.h"
#include "server/kv_transport/endpoint.h"
#include "server/kv_transport/kv_transport_factory.h"
#include "server/kv_transport/shm_kv_sender.h"
#include "server/kv_transport/shm_protocol.h"
#include "tests/server/kv_transport/kv_test_blocks.h"

extern char** environ;

namespace tandem::kv_transport {
namespace {

using testing::hashFor;

constexpr size_t kPeerBlockBytes = 4096;
constexpr int kPeerBlocks = 8;
constexpr uint64_t kPeerSeed = 9;
constexpr uint32_t kNobody = 65534;

// the suite runs as root (README: scripts/test.sh installs packages); a
// peer as another uid needs setuid.
#define REQUIRE_ROOT()                                                                \
  ASSERT_EQ(geteuid(), 0u) << "running a peer as another uid needs root (setuid); " \
                           << "this test runs as uid " << geteuid()

// kv_sender_child's exit code (100 + code when open() failed); -1 on timeout.
int runSender(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::string path = KV_SENDER_CHILD;
  argv.push_back(path.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return -3;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

class ShmPeerTest : public ::testing::Test {
 protected:
  void startReceiver(std::vector<uint32_t> allowed) {
    auto region = ShmRegion::create(kPeerBlockBytes * kPeerBlocks);
    ASSERT_TRUE(region.ok()) << region.status();
    region_ = *region;
    KvReceiverConfig config;
    config.transports = TransportChoice::kShm;
    config.shm.allowed_peer_uids = std::move(allowed);
    auto receiver = createKvReceiver(config, {region_->data(), kPeerBlockBytes, kPeerBlocks}, region_);
    ASSERT_TRUE(receiver.ok()) << receiver.status();
    receiver_ = *std::move(receiver);
    ExpectedTransfer t;
    t.transfer_id = "t";
    t.dst_block_ids = {5, 2};
    t.hashes = {hashFor(kPeerSeed, 0), hashFor(kPeerSeed, 1)};
    t.timeout = std::chrono::seconds(60);
    ASSERT_TRUE(receiver_->expect(std::move(t), [this](const TransferResult& r) {
      result_.set_value(r);
    }).ok());
  }
  std::vector<std::string> senderArgs(std::vector<std::string> extra) {
    std::vector<std::string> args = {"shm", receiver_->endpoint(), "t", std::to_string(kPeerBlockBytes),
                                     std::to_string(kPeerSeed), "3,4", "0,1", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // before the receiver: its pending transfer reports Cancelled into it on destruction.
  std::promise<TransferResult> result_;
  ShmRegionPtr region_;
  KvReceiverPtr receiver_;
};

// the check on a socket pair: the peer is this process, so its uid passes,
// and a list naming only others does not widen or narrow that.
TEST(ShmPeerCheckTest, AcceptsItsOwnUidAndNamesAStrangerItRefuses) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  auto uid = shm::peerUid(fds[0]);
  ASSERT_TRUE(uid.ok()) << uid.status();
  EXPECT_EQ(*uid, geteuid());
  EXPECT_TRUE(shm::checkPeer(fds[0], {}).ok());
  EXPECT_TRUE(shm::checkPeer(fds[0], {*uid + 1}).ok());
  ::close(fds[0]);
  ::close(fds[1]);
  // no socket, no credentials to read.
  EXPECT_EQ(shm::checkPeer(-1, {}).code(), absl::StatusCode::kUnavailable);
}

TEST_F(ShmPeerTest, ReceiverRefusesASenderRunningAsAnotherUid) {
  REQUIRE_ROOT();
  startReceiver({});
  // the sender (as nobody) would talk to a root D; D hangs up on it before
  // it learns anything: open() fails Unavailable.
  EXPECT_EQ(runSender(senderArgs({"uid=65534", "allow_uid=0"})),
            100 + static_cast<int>(absl::StatusCode::kUnavailable));
  // the transfer is untouched: a sender running as D's uid completes it.
  auto result = result_.get_future();
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  EXPECT_EQ(runSender(senderArgs({})), 0);
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(result.get().status.ok());
}

TEST_F(ShmPeerTest, ReceiverServesAnAllowedUid) {
  REQUIRE_ROOT();
  startReceiver({kNobody});
  EXPECT_EQ(runSender(senderArgs({"uid=65534", "allow_uid=0"})), 0);
  auto result = result_.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(result.get().status.ok());
}

TEST_F(ShmPeerTest, SenderRefusesAReceiverOfAnotherUidBeforeSendingAnything) {
  REQUIRE_ROOT();
  startReceiver({kNobody});  // D would serve it: the sender's own check refuses
  EXPECT_EQ(runSender(senderArgs({"uid=65534"})),
            100 + static_cast<int>(absl::StatusCode::kPermissionDenied));
}

// a socket squatting on D's name as another uid (abstract names are free
// for anyone to take) gets nothing from P.
TEST(ShmSenderPeerTest, RefusesToOpenATransferOnASocketOfAnotherUid) {
  REQUIRE_ROOT();
  const std::string name = "tandem-kv-peer-test-" + std::to_string(getpid());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // raw system calls only: the parent has threads.
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(1);
    const int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(s, 4) != 0) _exit(2);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(3);
    const int conn = accept(s, nullptr, nullptr);
    char buf[256];
    while (conn >= 0 && read(conn, buf, sizeof(buf)) > 0) {
    }
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  KvSenderOptions options;
  options.block_bytes = kPeerBlockBytes;
  options.timeout = std::chrono::seconds(5);
  auto sender = ShmKvSender::create(options);
  ASSERT_TRUE(sender.ok()) << sender.status();
  auto stream = (*sender)->open({formatEndpoint({TransportKind::kShm, name, localBootId()}), "t"});
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kPermissionDenied) << stream.status();
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
}

}  // namespace
}  // namespace tandem::kv_transport
