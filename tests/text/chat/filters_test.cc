#include "tests/text/chat/render_case.h"

#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

// expected outputs below were produced by jinja2 3.1 configured as HF
// transformers configures it (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps-based tojson).
const RenderCase kFilterCases[] = {
    {"{{ '  x  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ [1,2] | length }}|{{ 'h\303\251llo' | count }}|{{ d | length }}",
     "{\"d\": {\"a\": 1}}",
     "x|hi|2|5|1"},
    {"{{ t | tojson }} {{ t | tojson(indent=2) }} {{ [] | tojson }} {{ {} | tojson(indent=2) }} {{ '\303\251\"\\n' | tojson }} {{ 1.0 | tojson }} {{ none | tojson }}",
     "{\"t\": {\"b\": [1, 2.5, null, true], \"a\": {\"x\": \"y\"}}}",
     "{\"b\": [1, 2.5, null, true], \"a\": {\"x\": \"y\"}} {\n  \"b\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  \"a\": {\n    \"x\": \"y\"\n  }\n} [] {} \"\303\251\\\"\\n\" 1.0 null"},
    {"{{ t | tojson(sort_keys=true) }} {{ t | tojson(indent=4) }}",
     "{\"t\": {\"b\": 1, \"a\": [1, {\"z\": []}]}}",
     "{\"a\": [1, {\"z\": []}], \"b\": 1} {\n    \"b\": 1,\n    \"a\": [\n        1,\n        {\n            \"z\": []\n        }\n    ]\n}"},
    {"{{ 'abc' | list }} {{ [3,1,2] | join(', ') }} {{ [1,2] | join }} {{ users | join(', ', attribute='n') }}",
     "{\"users\": [{\"n\": \"a\"}, {\"n\": \"b\"}]}",
     "['a', 'b', 'c'] 3, 1, 2 12 a, b"},
    {"{{ 'hello world' | upper }} {{ 'HeLLo' | lower }} {{ 'hello big-world (x)' | title }} {{ 'hELLO wORLD' | capitalize }} {{ 'aXbXc' | replace('X', '-') }} {{ 'aaa' | replace('a', 'b', 2) }}",
     "{}",
     "HELLO WORLD hello Hello Big-World (X) Hello world a-b-c bba"},
    {"{{ missing | default('dflt') }} {{ '' | default('e', true) }} {{ '' | d('e') }} {{ none | default('n') }}",
     "{}",
     "dflt e  None"},
    {"{{ xs | first }} {{ xs | last }} {{ 'abc' | first }} {{ d | items | list }}",
     "{\"xs\": [1, 2, 3], \"d\": {\"k\": \"v\", \"a\": 1}}",
     "1 3 a [('k', 'v'), ('a', 1)]"},
    {"{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ ms | rejectattr('role', 'eq', 'user') | list | length }} {{ ms | selectattr('tool') | list | length }}",
     "{\"ms\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\", \"tool\": 1}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "['a', 'c'] 1 1"},
    {"{{ [1,2,3,4] | select('odd') | list }} {{ [1,2,3,4] | reject('even') | list }} {{ ['1','2'] | map('int') | list }} {{ xs | map(attribute='a', default=0) | list }}",
     "{\"xs\": [{\"a\": 1}, {}]}",
     "[1, 3] [1, 3] [1, 2] [1, 0]"},
    {"{{ 3 | string }}{{ '42' | int + 1 }} {{ '4.7' | int }} {{ 'x' | int(7) }} {{ '2.5' | float }} {{ -3 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 3 | round }} {{ 2.1 | round(0, 'ceil') }}",
     "{}",
     "343 4 7 2.5 3 2.0 3.14 3 3.0"},
    {"{{ [1,2,3] | reverse | list }} {{ 'abc' | reverse }} {{ ['b','A','c'] | sort }} {{ [3,1,2] | sort(reverse=true) }} {{ us | sort(attribute='age') | map(attribute='n') | join }} {{ ['a','A','b','a'] | unique | list }}",
     "{\"us\": [{\"n\": \"x\", \"age\": 3}, {\"n\": \"y\", \"age\": 1}]}",
     "[3, 2, 1] cba ['A', 'b', 'c'] [3, 2, 1] yx ['a', 'b']"},
    {"{{ {'b': 1, 'a': 2} | dictsort }} {{ {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) }}",
     "{}",
     "[('a', 2), ('b', 1)] [('a', 2), ('b', 1)]"},
    {"{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent('> ', blank=true) }}",
     "{}",
     "a\n  b\n\n  c|  a\n  b|a\n> \n> b"},
    {"{{ '<a href=\"x\">&' | e }} {{ '<b>' | safe }} {{ '%s-%d' | format('a', 3) }} {{ [3,1,2] | max }} {{ [3,1,2] | min }} {{ [1,2,3] | sum }} {{ 'a b  c' | wordcount }}",
     "{}",
     "&lt;a href=&#34;x&#34;&gt;&amp; <b> a-3 3 1 6 3"},
};

const RenderCase kTestCases[] = {
    {"{{ x is defined }} {{ y is undefined }} {{ none is none }} {{ 's' is string }} {{ 1 is number }} {{ true is number }} {{ {} is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} {{ 1 is sequence }}",
     "{\"x\": 1}",
     "True True True True True True True True True False"},
    {"{{ true is true }} {{ 1 is true }} {{ false is false }} {{ true is boolean }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }}",
     "{}",
     "True False True True True False True True True True False"},
    {"{{ 1 is not none }} {{ 'a' is not string }} {{ 2 is eq 2 }} {{ 2 is ne 3 }} {{ 3 is gt 2 }} {{ 3 is lt 2 }} {{ 2 is ge 2 }} {{ 'a' is in 'abc' }} {{ 'ab' is lower }} {{ 'AB' is upper }}",
     "{}",
     "True False True True True False True True True True"},
    {"{% if x is defined and x is not none %}yes{% else %}no{% endif %}",
     "{\"x\": null}",
     "no"},
};

class FiltersTest : public ::testing::Test {};

TEST_F(FiltersTest, AppliesFiltersAsJinja) {
  for (const RenderCase& c : kFilterCases) expectRendersLike(c);
}

TEST_F(FiltersTest, AppliesTestsAsJinja) {
  for (const RenderCase& c : kTestCases) expectRendersLike(c);
}

}  // namespace
}  // namespace tandem::chat
