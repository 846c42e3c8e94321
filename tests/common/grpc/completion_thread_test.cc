#include "common/grpc/completion_thread.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace tandem::grpc_util {
namespace {

TEST(CompletionThreadTest, RunsEachHandlerOnceOnItsThreadWithTheOperationsOk) {
  CompletionThread thread("test-cq");
  std::promise<std::pair<bool, std::thread::id>> fired;
  std::promise<bool> cancelled;
  grpc::Alarm now;
  grpc::Alarm never;
  thread.start([&](bool ok) { fired.set_value({ok, std::this_thread::get_id()}); },
               [&](void* tag) { now.Set(thread.queue(), std::chrono::system_clock::now(), tag); });
  thread.start([&](bool ok) { cancelled.set_value(ok); }, [&](void* tag) {
    never.Set(thread.queue(), std::chrono::system_clock::now() + std::chrono::hours(1), tag);
  });
  const auto [ok, on] = fired.get_future().get();
  EXPECT_TRUE(ok);
  EXPECT_NE(on, std::this_thread::get_id());
  never.Cancel();
  EXPECT_FALSE(cancelled.get_future().get());  // a cancelled operation: ok is false
}

TEST(CompletionThreadTest, ShutdownReturnsOnlyAfterThePendingOperationsCompleted) {
  std::atomic<int> ran{0};
  grpc::Alarm soon;
  {
    CompletionThread thread("test-cq");
    thread.start([&](bool) { ++ran; }, [&](void* tag) {
      soon.Set(thread.queue(), std::chrono::system_clock::now() + std::chrono::milliseconds(50), tag);
    });
    thread.shutdown();
    EXPECT_EQ(ran.load(), 1);
    thread.shutdown();  // idempotent
  }
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace tandem::grpc_util
