// callOnClientGone over the recording writer: a disconnect reaches a live
// call, and a destroyed call is neither reached nor kept alive.
#include "router/generate/client_gone.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_response_writer.h"

namespace tandem::router {
namespace {

using tandem::testing::FakeResponseWriter;

class GoneCounter {
 public:
  int gone() const { return gone_; }

 private:
  friend class ClientGoneTest;
  void clientGone() { ++gone_; }
  int gone_ = 0;
};

class ClientGoneTest : public ::testing::Test {
 protected:
  static void wire(FakeResponseWriter& writer, const std::shared_ptr<GoneCounter>& call) {
    callOnClientGone(writer, call, &GoneCounter::clientGone);
  }
};

TEST_F(ClientGoneTest, ADisconnectRunsTheLiveCallsHandler) {
  FakeResponseWriter writer;
  auto call = std::make_shared<GoneCounter>();
  wire(writer, call);
  EXPECT_EQ(call->gone(), 0);
  writer.disconnect();
  EXPECT_EQ(call->gone(), 1);
}

TEST_F(ClientGoneTest, TheWriterHoldsTheCallOnlyWeakly) {
  FakeResponseWriter writer;
  auto call = std::make_shared<GoneCounter>();
  std::weak_ptr<GoneCounter> weak = call;
  wire(writer, call);
  call.reset();
  EXPECT_TRUE(weak.expired());
  writer.disconnect();  // reaches nothing, crashes nothing
}

}  // namespace
}  // namespace tandem::router
