// The access log's lines (text and JSON), request ids, and the recorded
// writer that finishes a request's record however its answer ends.
#include "router/generate/access_log.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/generate/recorded_response_writer.h"
#include "tests/fakes/fake_response_writer.h"
#include "tests/test_paths.h"

namespace tandem::router {
namespace {

AccessEntry sample() {
  AccessEntry e;
  e.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123));
  e.peer = "127.0.0.1:5000";
  e.protocol = "http";
  e.api = "/v1/completions";
  e.model = "stories260K";
  e.status = 200;
  e.prompt_tokens = 5;
  e.output_tokens = 16;
  e.ttft_ms = 3.25;
  e.duration_ms = 40;
  e.request_id = "req-1";
  return e;
}

TEST(AccessLogTest, TextLinesHoldEveryFieldAndEscapeWhatAClientChose) {
  EXPECT_EQ(AccessLog::formatText(sample()),
            "2023-11-14T22:13:20.123Z peer=127.0.0.1:5000 http api=/v1/completions model=stories260K "
            "status=200 prompt_tokens=5 output_tokens=16 ttft_ms=3.2 duration_ms=40.0 request_id=req-1\n");
  AccessEntry e = sample();
  e.api = "/x y\nforged=1";
  e.model.clear();
  e.prompt_tokens = e.output_tokens = -1;
  e.ttft_ms.reset();
  const std::string line = AccessLog::formatText(e);
  EXPECT_NE(line.find("api=/x\\x20y\\x0aforged=1 model=- "), std::string::npos) << line;
  EXPECT_NE(line.find("prompt_tokens=- output_tokens=- ttft_ms=- "), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(AccessLogTest, JsonLinesAreOneObjectWithNullsForWhatIsUnknown) {
  const nlohmann::json j = nlohmann::json::parse(AccessLog::formatJson(sample()));
  EXPECT_EQ(j["time"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["ttft_ms"], 3.25);
  EXPECT_EQ(j["request_id"], "req-1");
  AccessEntry e = sample();
  e.ttft_ms.reset();
  e.output_tokens = -1;
  const nlohmann::json k = nlohmann::json::parse(AccessLog::formatJson(e));
  EXPECT_TRUE(k["ttft_ms"].is_null());
  EXPECT_TRUE(k["output_tokens"].is_null());
}

TEST(AccessLogTest, OpensOffStderrOrAFileItAppendsTo) {
  EXPECT_EQ(*AccessLog::open("off", AccessLog::Format::kText), nullptr);
  EXPECT_NE(*AccessLog::open("stderr", AccessLog::Format::kText), nullptr);
  EXPECT_FALSE(AccessLog::parseFormat("xml").ok());
  const std::string dir = tandem::testing::makeTempDir();
  EXPECT_EQ(AccessLog::open(dir + "/no/such/dir/log", AccessLog::Format::kText).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (int run = 0; run < 2; ++run) {
    auto log = AccessLog::open(dir + "/access.log", AccessLog::Format::kJson);
    ASSERT_TRUE(log.ok());
    (*log)->write(sample());
  }
  std::ifstream in(dir + "/access.log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), AccessLog::formatJson(sample()) + AccessLog::formatJson(sample()));
  std::filesystem::remove_all(dir);
}

TEST(RequestIdTest, TakesAUsableClientIdElseMakesOne) {
  EXPECT_EQ(requestIdFor("abc-123"), "abc-123");
  for (const std::string bad : {std::string(), std::string("a b"), std::string(65, 'x'), std::string("a\nb")}) {
    const std::string id = requestIdFor(bad);
    EXPECT_EQ(id.size(), 20u) << id;
    EXPECT_EQ(id.rfind("req-", 0), 0u);
  }
  EXPECT_NE(requestIdFor(""), requestIdFor(""));
}

// a recorded writer over a fake one, logging to a file; the lines it wrote.
class RecordedResponseWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tandem::testing::makeTempDir();
    log_ = *AccessLog::open(dir_ + "/log", AccessLog::Format::kJson);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::shared_ptr<RecordedResponseWriter> writer(const std::string& id) {
    fake_ = std::make_shared<tandem::testing::FakeResponseWriter>();
    return std::make_shared<RecordedResponseWriter>(
        fake_, std::make_shared<RequestRecord>(log_, "http", "/v1/completions", "1.2.3.4:5", id));
  }
  std::vector<nlohmann::json> lines() {
    std::ifstream in(dir_ + "/log");
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::string dir_;
  AccessLogPtr log_;
  std::shared_ptr<tandem::testing::FakeResponseWriter> fake_;
};

TEST_F(RecordedResponseWriterTest, AnAnswerCarriesTheIdAndLogsOnce) {
  auto w = writer("a1");
  EXPECT_EQ(requestRecordOf(*w), w->record());
  w->record()->setTokens(3, 7);
  w->respond(200, {}, "{}");
  w->finish();  // nothing more
  w.reset();
  const auto headers = fake_->answer().headers;
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers[0].name, "X-Request-Id");
  EXPECT_EQ(headers[0].value, "a1");
  const auto all = lines();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["status"], 200);
  EXPECT_EQ(all[0]["output_tokens"], 7);
  EXPECT_EQ(all[0]["peer"], "1.2.3.4:5");
}

TEST_F(RecordedResponseWriterTest, AStreamLogsItsCallsStatusWhenItFinishes) {
  auto w = writer("s1");
  w->startStream(200, {});
  w->write("data: x\n\n");
  w->record()->setCallStatus(500);  // an error event inside the stream
  EXPECT_TRUE(lines().empty());
  w->finish();
  EXPECT_EQ(lines().at(0)["status"], 500);
}

TEST_F(RecordedResponseWriterTest, AClientThatLeavesIs499AndItsCallStillHears) {
  auto w = writer("gone");
  bool told = false;
  w->onClose([&] { told = true; });
  fake_->disconnect();
  EXPECT_TRUE(told);
  EXPECT_EQ(lines().at(0)["status"], 499);
  bool late = false;
  w->onClose([&] { late = true; });  // after the close: at once
  EXPECT_TRUE(late);
}

TEST_F(RecordedResponseWriterTest, ARequestNeverAnsweredIs500AndItsIdIsReleased) {
  const size_t held = crash::InFlightIds::global().size();
  auto w = writer("dropped");
  EXPECT_EQ(crash::InFlightIds::global().size(), held + 1);
  w.reset();
  EXPECT_EQ(crash::InFlightIds::global().size(), held);
  EXPECT_EQ(lines().at(0)["status"], 500);
}

}  // namespace
}  // namespace tandem::router
