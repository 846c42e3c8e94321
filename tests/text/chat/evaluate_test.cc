#include "tests/text/chat/render_case.h"

#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

// expected outputs below were produced by jinja2 3.1 configured as HF
// transformers configures it (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps-based tojson).
const RenderCase kExpressionCases[] = {
    {"{{ xs[::-1] }} {{ xs[1:] }} {{ xs[:-1] }} {{ xs[-1] }} {{ xs[::2] }} {{ 'hello'[1:3] }} {{ 'h\303\251llo'[::-1] }} {{ xs[5:1:-2] }}",
     "{\"xs\": [1, 2, 3, 4, 5, 6]}",
     "[6, 5, 4, 3, 2, 1] [2, 3, 4, 5, 6] [1, 2, 3, 4, 5] 6 [1, 3, 5] el oll\303\251h [6, 4]"},
    {"{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
     "{}",
     "3.5 3 -4 2 -2 1024 0.5 7 9 3.0 0.5"},
    {"{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'x' + 'y' }}",
     "{}",
     "a1NoneTrue ababab [1, 1] [1, 2] xy"},
    {"{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'b' in 'abc' }} {{ 2 not in [1,3] }} {{ 'k' in {'k': 1} }}",
     "{}",
     "True True True True True False True True True"},
    {"{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ 0 or [] }} {{ 'a' if false else 'b' }} [{{ 'a' if false }}]",
     "{}",
     "x y True [] b []"},
    {"{{ [1.0, 'a', None, True, {'k': (1,2)}, (3,)] }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 3.0 }} {{ 1_000 }}",
     "{}",
     "[1.0, 'a', None, True, {'k': (1, 2)}, (3,)] 1e+20 1e+16 1000000000000000.0 0.0001 1e-05 0.30000000000000004 -0.0 3.0 1000"},
    {"{{ \"it's\" }} {{ ['it\\'s', 'say \"hi\"', 'both \\' \"'] }} {{ 'tab\\there\\n' | list }}",
     "{}",
     "it's [\"it's\", 'say \"hi\"', 'both \\' \"'] ['t', 'a', 'b', '\\t', 'h', 'e', 'r', 'e', '\\n']"},
    {"{{ '\\u00e9\\x41\\101' }} {{ 'a' 'b' }}",
     "{}",
     "\303\251AA ab"},
    {"{{ -x|abs }} {{ messages|length - 1 }} {{ not x is defined }}",
     "{\"x\": 3, \"messages\": [1, 2]}",
     "3 1 False"},
    {"{{ d.a.b }} {{ d['a']['b'] }} {{ xs.0 }} {{ {'x': 1}.x }}",
     "{\"d\": {\"a\": {\"b\": 7}}, \"xs\": [9]}",
     "7 7 9 1"},
    {"{{ 1, 2 }} {{ () }} {{ (1,) }}",
     "{}",
     "(1, 2) () (1,)"},
    {"{{ 10 - 2 - 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}",
     "{}",
     "5 64 4"},
};

const RenderCase kMethodCases[] = {
    {"{{ '  a b  '.strip() }}|{{ '\\n\\nx\\n'.strip('\\n') }}|{{ 'xxa'.lstrip('x') }}|{{ 'a\\n\\n'.rstrip('\\n') }}|{{ '  a'.lstrip() }}",
     "{}",
     "a b|x|a|a|a"},
    {"{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('x') }}",
     "{}",
     "True True True False"},
    {"{{ 'a b  c '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a b c'.split(None, 1) }} {{ 'a</think>b</think>c'.split('</think>')[-1] }} {{ 'a,b,c'.rsplit(',', 1) }}",
     "{}",
     "['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b,c'] ['a', 'b c'] c ['a,b', 'c']"},
    {"{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'they\\'re bill'.title() }} {{ 'aaa'.replace('a', 'b') }} {{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'h\303\251llo'.find('l') }} {{ 'abab'.count('ab') }}",
     "{}",
     "HELLO hello Hello World They'Re Bill bbb 2 -1 2 2"},
    {"{{ '{} and {}'.format('a', 1) }} {{ '{0}{0}'.format('x') }} {{ '{n}!'.format(n='hi') }} {{ ', '.join(['a', 'b']) }}",
     "{}",
     "a and 1 xx hi! a, b"},
    {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}",
     "{\"d\": {\"a\": 1, \"b\": [2]}}",
     "1 None 5 ['a', 'b'] [1, [2]] [('a', 1), ('b', [2])]"},
    {"{{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ '  '.isspace() }}",
     "{}",
     "True True True"},
};

class EvaluateTest : public ::testing::Test {};

TEST_F(EvaluateTest, EvaluatesOperatorsAndPrintsLikePython) {
  for (const RenderCase& c : kExpressionCases) expectRendersLike(c);
}

TEST_F(EvaluateTest, CallsStringAndDictMethodsLikePython) {
  for (const RenderCase& c : kMethodCases) expectRendersLike(c);
}

}  // namespace
}  // namespace tandem::chat
