// A streaming client that stops reading, against OpenAiService on a real
// HTTP server over a generator that never finishes: once more than
// max_stream_backlog_bytes wait unsent, the call cancels its generation
// (freeing its KV blocks and admission slot), resets the connection and
// counts tandem:slow_clients_cut_off_total, so the queue stays bounded.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "router/generate/admission.h"
#include "router/generate/openai_service.h"
#include "tests/common/http/server_test_util.h"
#include "tests/router/generate/stories_serving.h"

namespace tandem::router {
namespace {

using tandem::testing::FakeScript;

// a connected socket whose receive buffer is as small as the kernel allows;
// -1 on failure.
int connectWithSmallReceiveBuffer(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int size = 1024;  // the kernel rounds it up to its minimum
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// how reading until the peer closed ended.
enum class ReadEnd { kReset, kEof, kTimeout, kError };

// reads until the peer closes or `timeout` passes, adding what it read to
// `bytes`.
ReadEnd readUntilClosed(int fd, std::chrono::milliseconds timeout, int64_t* bytes) {
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) return ReadEnd::kEof;
    if (n > 0) {
      *bytes += n;
    } else if (errno == ECONNRESET) {
      return ReadEnd::kReset;
    } else if (errno != EINTR) {
      return errno == EAGAIN ? ReadEnd::kTimeout : ReadEnd::kError;
    }
  }
  return ReadEnd::kTimeout;
}

TEST(SlowClientTest, AStreamingClientThatStopsReadingIsCutOffAndItsGenerationCancelled) {
  constexpr size_t kBacklog = 64 * 1024;
  testing::StoriesServing serving;
  serving.generator.setDefaultScript(FakeScript{.tokens = {300, 301, 302, 303}, .endless = true});
  CallContext context = serving.context();
  context.max_stream_backlog_bytes = kBacklog;
  Admission admission(context, AdmissionOptions{});
  OpenAiService service(&serving.metrics);
  http::HttpServerPtr server = http::testing::startServer({}, service.handler());
  ASSERT_NE(server, nullptr);
  service.setReady(&admission);

  const int fd = connectWithSmallReceiveBuffer(server->port());
  ASSERT_GE(fd, 0);
  const std::string request = http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":"Once","max_tokens":16,"stream":true})");
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  // the client reads nothing. Each token is a chunk of ~200 bytes, so
  // without a bound the queue would grow by megabytes a second; a million
  // tokens (hundreds of MiB) ends the wait in that case.
  constexpr int64_t kRunaway = 1000000;
  ASSERT_TRUE(http::testing::waitUntil(
      [&] {
        return !serving.generator.cancels().empty() ||
               serving.generator.deliveredCount() > kRunaway;
      },
      std::chrono::seconds(60)));
  ASSERT_EQ(serving.generator.cancels().size(), 1u)
      << "not cancelled after " << serving.generator.deliveredCount() << " tokens";
  // what was produced: the backlog bound plus what the sockets' kernel
  // buffers took (a few MiB at most on loopback), far below the runaway.
  EXPECT_LT(serving.generator.deliveredCount(), kRunaway / 10);
  EXPECT_TRUE(http::testing::waitUntil(
      [&] { return serving.metric("tandem:slow_clients_cut_off_total") == 1; }));
  EXPECT_TRUE(http::testing::waitUntil([&] { return admission.pending() == 0; }));
  // the server reset the connection: the client sees the reset, not the
  // megabytes a FIN behind the kernel's queue would make its small window
  // drain first (tens of seconds on a loaded machine, a round trip a KiB).
  int64_t read = 0;
  EXPECT_EQ(readUntilClosed(fd, std::chrono::seconds(30), &read), ReadEnd::kReset)
      << read << " bytes read first";
  ::close(fd);
  EXPECT_EQ(serving.metric("tandem:requests_total{endpoint=\"completions\",status=\"499\"}"), 1);
  server->shutdown(std::chrono::milliseconds(0));
}

}  // namespace
}  // namespace tandem::router
