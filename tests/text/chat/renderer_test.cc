#include "tests/text/chat/render_case.h"

#include "gtest/gtest.h"

namespace tandem::chat {
namespace {

// expected outputs below were produced by jinja2 3.1 configured as HF
// transformers configures it (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps-based tojson).
const RenderCase kLoopCases[] = {
    {"{% for m in ms %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}",
     "{\"ms\": [\"a\", \"b\", \"c\"]}",
     "1/0/3/2/True/False/3;2/1/2/1/False/False/3;3/2/1/0/False/True/3;"},
    {"{% for m in ms %}{{ loop.previtem }}<{{ m }}>{{ loop.nextitem }}|{% endfor %}",
     "{\"ms\": [1, 2, 3]}",
     "<1>2|1<2>3|2<3>|"},
    {"{% for m in ms %}x{% else %}empty{% endfor %}",
     "{\"ms\": []}",
     "empty"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}",
     "{\"d\": {\"z\": 1, \"a\": 2}}",
     "z=1,a=2,"},
    {"{% for x in xs if x is odd %}{{ x }}{{ loop.length }} {% endfor %}",
     "{\"xs\": [1, 2, 3, 4, 5]}",
     "13 33 53 "},
    {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "{}",
     "0134"},
    {"{% for a in [1,2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }};{% endfor %}",
     "{}",
     "1x1 1y2 1;2x1 2y2 2;"},
    {"{% for x in ['a','b','c'] %}{{ loop.cycle('odd','even') }} {% endfor %}",
     "{}",
     "odd even odd "},
    {"{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}",
     "{}",
     "ba"},
    {"{% for n in tree recursive %}{{ n.name }}{% if n.kids %}[{{ loop(n.kids) }}]{% endif %}{% endfor %}",
     "{\"tree\": [{\"name\": \"a\", \"kids\": [{\"name\": \"b\", \"kids\": []}, {\"name\": \"c\"}]}]}",
     "a[bc]"},
    {"{% for x in range(1, 10, 3) %}{{ x }},{% endfor %}{% for x in range(3, 0, -1) %}{{ x }}{% endfor %}",
     "{}",
     "1,4,7,321"},
};

const RenderCase kScopeCases[] = {
    {"{% set ns = namespace(found=false, n=0) %}{% for x in [1,2,3] %}{% if x == 2 %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.found }} {{ ns.n }}",
     "{}",
     "True 6"},
    {"{% set y = 1 %}{% for x in [1,2] %}{{ y }}{% set y = 5 %}{{ y }}{% endfor %}{{ y }}",
     "{}",
     "15151"},
    {"{% if true %}{% set z = 3 %}{% endif %}{{ z }}",
     "{}",
     "3"},
    {"{% set a, b = [1, 2] %}{{ a }}{{ b }}",
     "{}",
     "12"},
    {"{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]",
     "{}",
     "[inner 2]"},
    {"{% set block | upper %}shout{% endset %}{{ block }}",
     "{}",
     "SHOUT"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }}",
     "{}",
     "Hi Bob! Hi Al?"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold{% endcall %}",
     "{}",
     "<b>bold</b>"},
    {"{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}",
     "{}",
     "4321"},
    {"{% filter upper %}hello {{ name }}{% endfilter %}",
     "{\"name\": \"x\"}",
     "HELLO X"},
    {"{% set x = 'outer' %}{% macro m() %}{{ x }}{% endmacro %}{{ m() }}",
     "{}",
     "outer"},
    {"{{ m.missing is defined }} {{ m.content is defined }} {{ undefined_var is undefined }} [{{ undefined_var }}]",
     "{\"m\": {\"content\": \"c\"}}",
     "False True True []"},
    {"{{ none.foo }}|{{ 'abc'.nothing }}|{{ d['nope'] }}|{{ xs[10] }}",
     "{\"d\": {}, \"xs\": [1]}",
     "|||"},
};

class RendererTest : public ::testing::Test {};

TEST_F(RendererTest, RendersLoopsWithLoopVariablesAsJinja) {
  for (const RenderCase& c : kLoopCases) expectRendersLike(c);
}

TEST_F(RendererTest, ScopesSetsNamespacesAndMacrosAsJinja) {
  for (const RenderCase& c : kScopeCases) expectRendersLike(c);
}

}  // namespace
}  // namespace tandem::chat
