#include "common/prometheus_text.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tandem {
namespace {

constexpr char kText[] = R"(# HELP tandem:requests_total finished requests
# TYPE tandem:requests_total counter
tandem:requests_total{endpoint="chat",status="200"} 7
tandem:requests_total{endpoint="completions",status="200"} 3
tandem:requests_total{endpoint="completions",status="429"} 2
tandem:requests_in_flight 4 1700000000000
tandem:time_to_first_token_seconds_bucket{le="0.1"} 2
tandem:time_to_first_token_seconds_bucket{le="0.5"} 6
tandem:time_to_first_token_seconds_bucket{le="+Inf"} 8
tandem:time_to_first_token_seconds_sum 3.5
tandem:time_to_first_token_seconds_count 8
tandem:weird{path="a\"b\\c"} NaN
)";

TEST(MetricsSnapshotTest, SumsSeriesByNameAndLabels) {
  absl::StatusOr<MetricsSnapshot> m = MetricsSnapshot::parse(kText);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sum("tandem:requests_total"), 12);
  EXPECT_EQ(m->sum("tandem:requests_total", {{"endpoint", "completions"}}), 5);
  EXPECT_EQ(m->sum("tandem:requests_total", {{"endpoint", "completions"}, {"status", "200"}}), 3);
  EXPECT_EQ(m->sum("tandem:requests_in_flight"), 4);  // the timestamp is not the value
  EXPECT_EQ(m->sum("tandem:absent"), 0);
  EXPECT_TRUE(m->has("tandem:requests_in_flight"));
  EXPECT_FALSE(m->has("tandem:absent"));
  // escaped label values; NaN is not summed.
  ASSERT_EQ(m->samples().back().labels.at("path"), "a\"b\\c");
  EXPECT_EQ(m->sum("tandem:weird"), 0);
}

TEST(MetricsSnapshotTest, ReadsAHistogramsCumulativeBuckets) {
  absl::StatusOr<MetricsSnapshot> m = MetricsSnapshot::parse(kText);
  ASSERT_TRUE(m.ok());
  HistogramBuckets h = m->histogram("tandem:time_to_first_token_seconds");
  ASSERT_EQ(h.upper_bounds.size(), 3u);
  EXPECT_EQ(h.upper_bounds[0], 0.1);
  EXPECT_TRUE(std::isinf(h.upper_bounds[2]));
  EXPECT_EQ(h.cumulative, (std::vector<double>{2, 6, 8}));
  EXPECT_EQ(h.sum, 3.5);
  EXPECT_EQ(h.count, 8);
}

TEST(MetricsSnapshotTest, RefusesAMalformedLineNamingIt) {
  absl::StatusOr<MetricsSnapshot> m = MetricsSnapshot::parse("ok 1\nbroken{le=\"1} 2\n");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("line 2"), std::string::npos) << m.status();
  EXPECT_FALSE(MetricsSnapshot::parse("novalue\n").ok());
  EXPECT_FALSE(MetricsSnapshot::parse("name abc\n").ok());
  // names outside the format's alphabet.
  EXPECT_FALSE(MetricsSnapshot::parse("9lives 1\n").ok());
  EXPECT_FALSE(MetricsSnapshot::parse("a-b 1\n").ok());
  EXPECT_FALSE(MetricsSnapshot::parse("m{\t,x=\"1\"} 1\n").ok());
  EXPECT_FALSE(MetricsSnapshot::parse("m{a:b=\"1\"} 1\n").ok());
}

TEST(MetricsSnapshotTest, WritesASeriesBackAsItIsWrittenOnTheWire) {
  absl::StatusOr<MetricsSnapshot> m =
      MetricsSnapshot::parse("plain 1\nt{b=\"2\",a=\"x\\\"y\\\\z\\n\"} 2\n");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->samples().size(), 2u);
  EXPECT_EQ(m->samples()[0].series(), "plain");
  EXPECT_EQ(m->samples()[1].labels.at("a"), "x\"y\\z\n");
  // labels in name order, escapes restored.
  EXPECT_EQ(m->samples()[1].series(), "t{a=\"x\\\"y\\\\z\\n\",b=\"2\"}");
}

}  // namespace
}  // namespace tandem
