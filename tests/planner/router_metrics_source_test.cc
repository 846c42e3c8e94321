#include "planner/router_metrics_source.h"

#include <atomic>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/http/http_server.h"
#include "tests/common/http/server_test_util.h"
#include "gtest/gtest.h"

namespace tandem::planner {
namespace {

// a real HTTP server answering /metrics with what the test sets.
class RouterMetricsSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = http::testing::startServer({}, [this](http::HttpRequest, http::ResponseWriterPtr writer) {
      std::lock_guard lock(mu_);
      writer->respond(status_, {{"Content-Type", "text/plain"}}, body_);
    });
    ASSERT_NE(server_, nullptr);
    source_ = std::make_unique<RouterMetricsSource>(RouterMetricsSourceOptions{
        .metrics_url = absl::StrCat("http://127.0.0.1:", server_->port(), "/metrics"), .max_age_s = 30});
  }
  void TearDown() override { server_->shutdown(std::chrono::milliseconds(0)); }
  void set(int finished, int status = 200) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = absl::StrCat("tandem:requests_total{endpoint=\"chat\",status=\"200\"} ", finished,
                         "\ntandem:requests_in_flight 0\n");
  }

  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  http::HttpServerPtr server_;
  std::unique_ptr<RouterMetricsSource> source_;
};

TEST_F(RouterMetricsSourceTest, MeasuresFromTheLastGoodScrape) {
  set(10);
  // the first scrape is only the baseline.
  EXPECT_TRUE(absl::IsFailedPrecondition(source_->next(0).status()));
  set(30);
  absl::StatusOr<LoadSample> s = source_->next(10);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->interval_s, 10);
  EXPECT_DOUBLE_EQ(s->request_rate, 2);
  // a failed scrape yields nothing; the next good one measures across it.
  set(40, 500);
  EXPECT_TRUE(absl::IsUnavailable(source_->next(20).status()));
  set(70);
  s = source_->next(25);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->interval_s, 15);
  EXPECT_DOUBLE_EQ(s->request_rate, 40.0 / 15);
}

TEST_F(RouterMetricsSourceTest, AStaleBaselineOrARestartYieldsNoSample) {
  set(10);
  (void)source_->next(0);
  set(20);
  absl::StatusOr<LoadSample> s = source_->next(100);  // 100 s after its baseline: stale
  ASSERT_TRUE(absl::IsFailedPrecondition(s.status()));
  EXPECT_NE(s.status().message().find("stale"), std::string::npos) << s.status();
  set(25);
  ASSERT_TRUE(source_->next(110).ok());
  set(3);  // the router restarted: its counters went down
  EXPECT_TRUE(absl::IsFailedPrecondition(source_->next(120).status()));
  set(5);
  EXPECT_TRUE(source_->next(130).ok());
}

TEST_F(RouterMetricsSourceTest, AnUnreachableOrForeignEndpointYieldsNoSample) {
  {
    std::lock_guard lock(mu_);
    body_ = "some_other_metric 1\n";
  }
  absl::StatusOr<LoadSample> s = source_->next(0);
  ASSERT_TRUE(absl::IsUnavailable(s.status()));
  EXPECT_NE(s.status().message().find("not a tandem router"), std::string::npos);
  const int port = server_->port();
  server_->shutdown(std::chrono::milliseconds(0));
  RouterMetricsSource gone({.metrics_url = absl::StrCat("http://127.0.0.1:", port, "/metrics")});
  EXPECT_TRUE(absl::IsUnavailable(gone.next(0).status()));
}

}  // namespace
}  // namespace tandem::planner
