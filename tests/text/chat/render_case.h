// A template, its variables as JSON and the output jinja2 gives for them.
#pragma once

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "text/chat/chat_template.h"

namespace tandem::chat {

struct RenderCase {
  const char* source;
  const char* vars;
  const char* expected;
};

// renders `c.source` with `c.vars` as extra variables and no messages.
inline absl::StatusOr<std::string> renderSource(const std::string& source,
                                                const nlohmann::ordered_json& vars) {
  auto t = ChatTemplate::parse(source);
  if (!t.ok()) return t.status();
  return (*t)->render(nlohmann::ordered_json::array(), nullptr, false, vars);
}

inline void expectRendersLike(const RenderCase& c) {
  auto out = renderSource(c.source, nlohmann::ordered_json::parse(c.vars));
  ASSERT_TRUE(out.ok()) << c.source << "\n" << out.status();
  EXPECT_EQ(*out, c.expected) << "template: " << c.source;
}

}  // namespace tandem::chat
