// deploy/grafana's dashboard and deploy/prometheus's alert rules, checked
// statically: the dashboard against a strict schema of the part of
// Grafana's JSON model it uses (tests/deploy/schemas/grafana-dashboard.json)
// plus what a schema cannot say (unique ids, panels inside the 24-column
// grid), the rules' shape. That each metric they name exists is checked
// against real scrapes in ManifestsRunTest.
#include <fstream>
#include <set>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/deploy/json_schema.h"
#include "tests/deploy/manifests.h"
#include "tests/test_paths.h"

namespace tandem::deploy_testing {
namespace {

json readJson(const std::string& path) {
  std::ifstream in(tandem::testing::sourceDir() + "/" + path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

TEST(GrafanaDashboard, ConformsToTheDashboardSchemaAndFitsTheGrid) {
  const json dashboard = readJson("deploy/grafana/tandem-dashboard.json");
  for (const std::string& e : validateJson(readJson("tests/deploy/schemas/grafana-dashboard.json"), dashboard)) ADD_FAILURE() << e;
  std::set<int> ids;
  for (const json& p : dashboard["panels"]) {
    EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "panel id " << p["id"] << " twice";
    EXPECT_LE(p["gridPos"]["x"].get<int>() + p["gridPos"]["w"].get<int>(), 24) << p["title"];
    std::set<std::string> refs;
    for (const json& t : p["targets"]) EXPECT_TRUE(refs.insert(t["refId"].get<std::string>()).second) << p["title"];
    EXPECT_FALSE(p["targets"].empty()) << p["title"];
  }
  // what the issue asks the dashboard to show.
  std::string all = dashboard.dump();
  for (const char* metric : {"time_to_first_token_seconds", "inter_token_latency_seconds", "generation_tokens_total",
                             "kv_tier_hits_total", "prefix_cache_hit_tokens_total", "kv_transfer_bytes_total",
                             "router_workers", "planner_desired_replicas", "prompt_mix_requests_total",
                             "prompt_mix_uncached_tokens_total"}) {
    EXPECT_NE(all.find(std::string("tandem:") + metric), std::string::npos) << metric;
  }
}

TEST(PrometheusAlerts, EveryRuleHasANameAnExpressionASeverityAndASummary) {
  std::ifstream in(tandem::testing::sourceDir() + "/deploy/prometheus/tandem-alerts.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<json> docs = parseYamlDocuments(text.str());
  ASSERT_EQ(docs.size(), 1u);
  std::set<std::string> alerts;
  for (const json& group : docs[0]["groups"]) {
    ASSERT_TRUE(group["name"].is_string());
    for (const json& rule : group["rules"]) {
      for (const auto& [key, unused] : rule.items()) {
        EXPECT_TRUE(key == "alert" || key == "expr" || key == "for" || key == "labels" || key == "annotations") << key;
      }
      EXPECT_TRUE(alerts.insert(rule["alert"].get<std::string>()).second);
      EXPECT_FALSE(rule["expr"].get<std::string>().empty());
      EXPECT_TRUE(rule["labels"]["severity"] == "page" || rule["labels"]["severity"] == "warn");
      EXPECT_TRUE(rule["annotations"]["summary"].is_string());
    }
  }
  for (const char* needed : {"TandemTTFTBudgetBurn", "TandemWorkerDown", "TandemKvTransferChecksumFailures"}) {
    EXPECT_TRUE(alerts.count(needed)) << needed;
  }
}

}  // namespace
}  // namespace tandem::deploy_testing
