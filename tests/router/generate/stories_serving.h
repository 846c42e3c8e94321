// What the router/generate tests serve: the stories260K model (its real
// tokenizer; no chat template, so the plain one) on a FakeGenerator, with
// real ServingMetrics, as one CallContext.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "router/generate/call_context.h"
#include "router/generate/served_model.h"
#include "router/metrics/serving_metrics.h"
#include "tests/fakes/fake_generator.h"
#include "tests/test_paths.h"

namespace tandem::router::testing {

inline constexpr char kModelName[] = "stories260K";

struct StoriesServing {
  explicit StoriesServing(int max_model_len = 256) {
    auto loaded = ServedModel::load(tandem::testing::storiesGguf(), kModelName, max_model_len);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (loaded.ok()) model = std::move(*loaded);
    generator.setMaxModelLen(max_model_len);
  }
  CallContext context() { return CallContext{model.get(), &generator, &metrics}; }
  // the value of the /metrics sample `name` (with its labels, as
  // rendered); -1 when absent.
  double metric(const std::string& name) {
    const std::string text = "\n" + metrics.render();
    const std::string key = "\n" + name + " ";
    const size_t at = text.find(key);
    if (at == std::string::npos) return -1;
    const size_t value = at + key.size();
    return std::stod(text.substr(value, text.find('\n', value) - value));
  }

  // the generator goes first: the outputs it still delivers reach the model.
  ServingMetrics metrics;
  ServedModelPtr model;
  tandem::testing::FakeGenerator generator;
};

}  // namespace tandem::router::testing
