#include "tests/text/chat/render_case.h"

#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

// expected outputs below were produced by jinja2 3.1 configured as HF
// transformers configures it (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps-based tojson).
const RenderCase kWhitespaceCases[] = {
    {"a\n{% if true %}\nb\n{% endif %}\nc",
     "{}",
     "a\nb\nc"},
    {"a\n    {% if true %}\n    b\n    {% endif %}\nc\n",
     "{}",
     "a\n    b\nc"},
    {"  {{ 'x' }}  \n  {# c #}\n  y",
     "{}",
     "  x  \n  y"},
    {"a  {%- if true -%}  b  {%- endif -%}  c",
     "{}",
     "abc"},
    {"a \n {{- 'x' -}} \n b",
     "{}",
     "axb"},
    {"x\n  {%+ if true %}y{% endif %}",
     "{}",
     "x\n  y"},
    {"{% if true +%}\nkeep{% endif %}",
     "{}",
     "\nkeep"},
    {"a {% if true %}b{% endif %}\n  c",
     "{}",
     "a b  c"},
    {"{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n",
     "{}",
     "  1\n  2\n"},
    {"line\r\nnext\r\n",
     "{}",
     "line\nnext"},
    {"{# multi\nline #}\nafter",
     "{}",
     "after"},
    {"{% raw %}{{ not parsed }}{% endraw %}!",
     "{}",
     "{{ not parsed }}!"},
    {"t1\n\t{% if true %}\n\tin\n\t{% endif %}\n",
     "{}",
     "t1\n\tin\n"},
    {"{{ {'a': {'b': 1}} }}",
     "{}",
     "{'a': {'b': 1}}"},
    {"{%- set x = 1 -%}\n\n  {{ x }}",
     "{}",
     "1"},
};

class LexerTest : public ::testing::Test {};

TEST_F(LexerTest, AppliesWhitespaceControlAndTrimBlocksAsJinja) {
  for (const RenderCase& c : kWhitespaceCases) expectRendersLike(c);
}

}  // namespace
}  // namespace tandem::chat
