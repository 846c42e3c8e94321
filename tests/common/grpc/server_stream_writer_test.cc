// ServerStreamWriter on a real gRPC server over loopback: a test service
// hands each Generate call's writer to the test, which writes, finishes and
// cancels while a real client reads.
#include "common/grpc/server_stream_writer.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tandem/v1/inference.grpc.pb.h"

namespace tandem::grpc_util {
namespace {

using tandem::v1::GenerateResponse;
using Writer = ServerStreamWriter<GenerateResponse>;
constexpr auto kDeadline = std::chrono::seconds(30);

// records what the stream reported to its producer.
class RecordingObserver : public StreamObserver {
 public:
  void onStreamBroken() override {
    std::lock_guard lock(mu_);
    ++broken_;
    changed_.notify_all();
  }
  void onStreamDrained() override {
    std::lock_guard lock(mu_);
    ++drained_;
    changed_.notify_all();
  }
  void onStreamDone(const std::optional<grpc::Status>& status) override {
    std::lock_guard lock(mu_);
    ++done_;
    done_status_ = status;
    changed_.notify_all();
  }
  // waits until `pred` holds (mu_ held while it runs).
  template <typename Pred>
  bool waitFor(Pred pred) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kDeadline, pred);
  }

  std::mutex mu_;
  std::condition_variable changed_;
  int broken_ = 0;
  int drained_ = 0;
  int done_ = 0;
  std::optional<grpc::Status> done_status_;
};

// each Generate call becomes a (writer, observer) the test drives.
class StreamService final : public tandem::v1::Inference::CallbackService {
 public:
  grpc::ServerWriteReactor<GenerateResponse>* Generate(grpc::CallbackServerContext*,
                                                       const tandem::v1::GenerateRequest*) override {
    auto* reactor = new ServerStreamReactor<GenerateResponse>();
    auto observer = std::make_shared<RecordingObserver>();
    reactor->observe(observer);
    std::lock_guard lock(mu_);
    writer_ = reactor->writer();
    observer_ = observer;
    changed_.notify_all();
    return reactor;
  }

  // the call the client started.
  std::pair<std::shared_ptr<Writer>, std::shared_ptr<RecordingObserver>> awaitCall() {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, kDeadline, [&] { return writer_ != nullptr; });
    return {writer_, observer_};
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<Writer> writer_;
  std::shared_ptr<RecordingObserver> observer_;
};

GenerateResponse message(int i, size_t padding = 0) {
  GenerateResponse msg;
  msg.add_token_ids(i);
  msg.set_text(std::string(padding, 'x'));
  return msg;
}

class ServerStreamWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = tandem::v1::Inference::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials()));
    context_.set_deadline(std::chrono::system_clock::now() + kDeadline);
    reader_ = stub_->Generate(&context_, tandem::v1::GenerateRequest());
    std::tie(writer_, observer_) = service_.awaitCall();
    ASSERT_NE(writer_, nullptr);
  }
  void TearDown() override {
    writer_.reset();
    server_->Shutdown(std::chrono::system_clock::now());
  }

  // every token the client reads until the stream ends.
  std::vector<int> readAll() {
    std::vector<int> tokens;
    GenerateResponse msg;
    while (reader_->Read(&msg)) tokens.push_back(msg.token_ids(0));
    return tokens;
  }

  StreamService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<tandem::v1::Inference::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<GenerateResponse>> reader_;
  std::shared_ptr<Writer> writer_;
  std::shared_ptr<RecordingObserver> observer_;
};

TEST_F(ServerStreamWriterTest, DeliversQueuedMessagesInOrderThenTheStatus) {
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(writer_->write(message(i)));
  ASSERT_TRUE(writer_->finish(grpc::Status::OK));
  std::vector<int> expected(200);
  for (int i = 0; i < 200; ++i) expected[i] = i;
  EXPECT_EQ(readAll(), expected);
  EXPECT_TRUE(reader_->Finish().ok());
  ASSERT_TRUE(observer_->waitFor([&] { return observer_->done_ == 1; }));
  EXPECT_EQ(observer_->broken_, 0);
  EXPECT_TRUE(observer_->done_status_.has_value() && observer_->done_status_->ok());
}

TEST_F(ServerStreamWriterTest, QueuesBehindTheOneWriteInFlightWhileTheClientDoesNotRead) {
  // 64 KiB messages: gRPC's flow-control window fills after a few, so the
  // first write stays in flight and the rest must wait in the queue.
  constexpr int kMessages = 100;
  for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(writer_->write(message(i, 64 * 1024)));
  EXPECT_GT(writer_->pending(), 1u);
  EXPECT_FALSE(writer_->idle());
  ASSERT_TRUE(writer_->finish(grpc::Status::OK));
  const std::vector<int> tokens = readAll();
  ASSERT_EQ(tokens.size(), static_cast<size_t>(kMessages));
  for (int i = 0; i < kMessages; ++i) EXPECT_EQ(tokens[i], i);
  EXPECT_TRUE(reader_->Finish().ok());
  ASSERT_TRUE(observer_->waitFor([&] { return observer_->done_ == 1; }));
  EXPECT_EQ(writer_->pending(), 0u);
}

TEST_F(ServerStreamWriterTest, ReportsDrainedOnceTheQueueEmptiesWithTheCallOpen) {
  ASSERT_TRUE(writer_->write(message(7)));
  GenerateResponse msg;
  ASSERT_TRUE(reader_->Read(&msg));
  EXPECT_EQ(msg.token_ids(0), 7);
  // the drained report comes with the write's completion.
  ASSERT_TRUE(observer_->waitFor([&] { return observer_->drained_ == 1; }));
  EXPECT_TRUE(writer_->idle());
  ASSERT_TRUE(writer_->finish(grpc::Status::OK));
  EXPECT_FALSE(reader_->Read(&msg));
  EXPECT_TRUE(reader_->Finish().ok());
}

TEST_F(ServerStreamWriterTest, CancellationMidStreamRefusesWritesAndEndsTheCallOnce) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(writer_->write(message(i)));
  GenerateResponse msg;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reader_->Read(&msg));
    EXPECT_EQ(msg.token_ids(0), i);
  }
  context_.TryCancel();
  ASSERT_TRUE(observer_->waitFor([&] { return observer_->broken_ == 1 && observer_->done_ == 1; }));
  EXPECT_TRUE(writer_->closed());
  EXPECT_FALSE(writer_->write(message(3)));
  EXPECT_FALSE(writer_->finish(grpc::Status::OK));
  EXPECT_EQ(reader_->Finish().error_code(), grpc::StatusCode::CANCELLED);
  std::lock_guard lock(observer_->mu_);
  EXPECT_EQ(observer_->broken_, 1);
  EXPECT_EQ(observer_->done_, 1);
  EXPECT_EQ(observer_->done_status_->error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(ServerStreamWriterTest, FinishesExactlyOnceWithTheFirstStatus) {
  ASSERT_TRUE(writer_->write(message(1)));
  ASSERT_TRUE(writer_->finish(grpc::Status(grpc::StatusCode::INTERNAL, "first")));
  EXPECT_FALSE(writer_->finish(grpc::Status::OK));
  EXPECT_FALSE(writer_->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "second")));
  EXPECT_FALSE(writer_->write(message(2)));
  EXPECT_EQ(readAll(), std::vector<int>{1});
  const grpc::Status status = reader_->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "first");
  ASSERT_TRUE(observer_->waitFor([&] { return observer_->done_ == 1; }));
  EXPECT_EQ(observer_->done_status_->error_message(), "first");
}

TEST_F(ServerStreamWriterTest, WriteLastSendsTheMessageThenTheStatus) {
  ASSERT_TRUE(writer_->write(message(1)));
  ASSERT_TRUE(writer_->writeLast(message(2)));
  EXPECT_FALSE(writer_->write(message(3)));
  EXPECT_EQ(readAll(), (std::vector<int>{1, 2}));
  EXPECT_TRUE(reader_->Finish().ok());
}

TEST_F(ServerStreamWriterTest, WritesAfterTheCallIsDoneAreDroppedHarmlessly) {
  ASSERT_TRUE(writer_->finish(grpc::Status::OK));
  EXPECT_TRUE(readAll().empty());
  EXPECT_TRUE(reader_->Finish().ok());
  ASSERT_TRUE(observer_->waitFor([&] { return observer_->done_ == 1; }));
  // the reactor is gone; the producer still holds the writer.
  EXPECT_FALSE(writer_->write(message(1)));
  EXPECT_FALSE(writer_->finish(grpc::Status::CANCELLED));
  EXPECT_TRUE(writer_->closed());
}

}  // namespace
}  // namespace tandem::grpc_util
