// The Jinja subset on its own: features as data rows (template, expected output, all
// rendered against one context), runtime errors, syntax errors with positions, the limits
// that keep hostile templates from hanging or crashing, and the JSON helpers.
//
// Expected outputs are what Python's jinja2 renders with Hugging Face's settings
// (trim_blocks, lstrip_blocks, loop controls, tojson with ensure_ascii=False).

#include <QElapsedTimer>
#include <QtTest>

#include <string>

#include "engine/chat/jinja_json.h"
#include "engine/chat/jinja_template.h"

using namespace lr;
using namespace lr::jinja;

namespace {

// The context every feature row renders against.
constexpr const char * k_context = R"({
    "x": 1, "s": "Hello World", "l": [3, 1, 2], "d": {"b": 1, "a": 2},
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": " u1 "}],
    "e": "", "n": null, "t": true, "f": 1.5, "u8": "h\u00e9llo\u2713"})";

// Friday 26 July 2024, midnight: what strftime_now() sees in these tests.
RenderOptions fixed_clock() {
    RenderOptions options;
    options.local_time = [] {
        std::tm t{};
        t.tm_year = 124;
        t.tm_mon = 6;
        t.tm_mday = 26;
        t.tm_wday = 5;
        t.tm_yday = 207;
        return t;
    };
    return options;
}

Value context() {
    Result<Value> v = parse_json(k_context);
    return *v;
}

Result<std::string> render(const QString & source, const RenderOptions & options = fixed_clock()) {
    Result<Template> t = Template::parse(source.toStdString());
    if (!t.ok()) return t.status();
    return t->render(context(), options);
}

}  // namespace

class TestChatJinja : public QObject {
    Q_OBJECT
private slots:
    void features_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        QTest::newRow("text") << QString("plain text") << QString("plain text");
        QTest::newRow("output-values") << QString("{{ x }}|{{ s }}|{{ l }}|{{ d }}|{{ n }}|{{ t }}|{{ f }}")
                                       << QString("1|Hello World|[3, 1, 2]|{'b': 1, 'a': 2}|None|True|1.5");
        QTest::newRow("undefined-renders-empty")
            << QString("[{{ nope }}]{{ nope is defined }}{{ nope is undefined }}{{ nope | length }}") << QString("[]FalseTrue0");
        QTest::newRow("undefined-is-falsy-and-iterates-empty")
            << QString("{% if nope %}yes{% else %}no{% endif %}{% for i in nope %}x{% endfor %}{{ 'a' in nope }}") << QString("noFalse");
        QTest::newRow("undefined-attribute-of-dict")
            << QString("{{ d.missing }}|{{ d['missing'] is defined }}|{{ msgs[0].tool_calls is defined }}") << QString("|False|False");
        QTest::newRow("subscripts")
            << QString(
                   "{{ l[0] }}{{ l[-1] }}[{{ l[5] }}]{{ d['a'] }}{{ d.a }}{{ s[0] }}{{ s[-1] }}{{ u8[1] }}{{ msgs[1]['role'] }}{{ l.0 }}")
            << QString("32[]22Hdéuser3");
        QTest::newRow("slices")
            << QString(
                   "{{ l[1:] }}{{ l[:-1] }}{{ l[::-1] }}{{ l[::2] }}|{{ s[1:4] }}|{{ s[::-1] }}|{{ u8[1:3] }}|{{ l[5:] }}{{ l[-10:2] }}")
            << QString("[1, 2][3, 1][2, 1, 3][3, 2]|ell|dlroW olleH|él|[][3, 1]");
        QTest::newRow("arithmetic")
            << QString(
                   "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 3 ** 2 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ -x }}")
            << QString("7 9 3 -4 1 2 64 3.5 2.0 -1");
        QTest::newRow("floats")
            << QString(
                   "{{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e3 }} {{ 2.5e-5 }} {{ 1e16 }} {{ 123.0 }} {{ -0.5 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** -1 }}")
            << QString("2.5 0.30000000000000004 1000.0 2.5e-05 1e+16 123.0 -0.5 3.0 0.5 0.5");
        QTest::newRow("concat-tilde") << QString("{{ 'a' ~ 1 ~ none ~ true ~ 1.0 ~ [1] ~ nope }}") << QString("a1NoneTrue1.0[1]");
        QTest::newRow("plus-and-times")
            << QString("{{ 'a' + 'b' }}{{ [1] + [2, 3] }}{{ 'ab' * 3 }}{{ 2 * 'x' }}{{ [0] * 3 }}|{{ 'x' * -1 }}|{{ 3 * true }}")
            << QString("ab[1, 2, 3]abababxx[0, 0, 0]||3");
        QTest::newRow("comparisons")
            << QString(
                   "{{ 1 == 1.0 }}{{ 1 != 2 }}{{ 'a' < 'b' }}{{ 2 >= 2 }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ [1,2] == [1,2] }}{{ d == {'a':2,'b':1} }}{{ true == 1 }}{{ none == none }}{{ nope == none }}")
            << QString("TrueTrueTrueTrueTrueFalseTrueTrueTrueTrueFalse");
        QTest::newRow("membership")
            << QString(
                   "{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 1 in l }}{{ 'a' in d }}{{ 'q' in d }}{{ 'role' in msgs[0] }}{{ 'tool_calls' in msgs[0] }}")
            << QString("TrueTrueTrueTrueFalseTrueFalse");
        QTest::newRow("logic-returns-operands")
            << QString("{{ true and 'x' }}|{{ false and 'x' }}|{{ 0 or 'y' }}|{{ 'z' or 'y' }}|{{ not 0 }}|{{ not 'a' }}|{{ none or [] }}")
            << QString("x|False|y|z|True|False|[]");
        QTest::newRow("precedence")
            << QString(
                   "{{ 'abc' | length > 2 and l | length == 3 }}{{ -2 ** 2 }}{{ not true == false }}{{ 2 * 3 ~ 4 }}{{ msgs[1].content | trim + '!' }}")
            << QString("True4True64u1!");
        QTest::newRow("inline-if")
            << QString("{{ 'y' if x else 'n' }}|{{ 'y' if e else 'n' }}|{{ 'y' if e }}|{{ 'a' if false else 'b' if false else 'c' }}")
            << QString("y|n||c");
        QTest::newRow("if-elif-else")
            << QString("{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %}|{% if e %}E{% elif n %}N{% else %}else{% endif %}")
            << QString("one|else");
        QTest::newRow("loop-variables")
            << QString(
                   "{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}[{{ loop.previtem }},{{ loop.nextitem }}]{{ i }};{% endfor %}")
            << QString("10TrueFalse332[,1]3;21FalseFalse321[3,2]1;32FalseTrue310[1,]2;");
        QTest::newRow("loop-else-and-filter")
            << QString(
                   "{% for i in [] %}x{% else %}empty{% endfor %}|{% for i in l if i > 1 %}{{ i }}{{ loop.length }}{% else %}none{% endfor %}|{% for i in l if i > 9 %}{{ i }}{% else %}none{% endfor %}")
            << QString("empty|3222|none");
        QTest::newRow("loop-over-dicts-and-strings")
            << QString(
                   "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for c in 'ab' %}{{ c }}.{% endfor %}")
            << QString("b=1;a=2;|b=1;a=2;|ba|a.b.");
        QTest::newRow("loop-unpacking")
            << QString("{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}{% for a, b in [(1, 2)] %}{{ a }}{{ b }}{% endfor %}")
            << QString("3712");
        QTest::newRow("loop-filtered-iterable")
            << QString(
                   "{% for m in msgs | selectattr('role', 'equalto', 'user') %}{{ m.content }}{% endfor %}|{% for m in msgs[1:] %}{{ m.role }}{% endfor %}")
            << QString(" u1 |user");
        QTest::newRow("break-continue")
            << QString(
                   "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}")
            << QString("0134");
        QTest::newRow("nested-loops")
            << QString("{% for i in [1,2] %}{% for j in [3,4] %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{{ loop.index }}|{% endfor %}")
            << QString("113 214 1|123 224 2|");
        QTest::newRow("loop-cycle") << QString("{% for i in l %}{{ loop.cycle('a', 'b') }}{% endfor %}") << QString("aba");
        QTest::newRow("set-scoping")
            << QString(
                   "{% set a = 1 %}{% if true %}{% set a = 2 %}{% endif %}{{ a }}{% for i in [1] %}{% set a = 3 %}{{ a }}{% endfor %}{{ a }}")
            << QString("232");
        QTest::newRow("set-does-not-carry-across-iterations")
            << QString("{% for i in [1,2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}") << QString("[]");
        QTest::newRow("namespace")
            << QString(
                   "{% set ns = namespace(c=0, items=[]) %}{% for i in l %}{% set ns.c = ns.c + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.c }}{{ ns.items }}{% set ns2 = namespace() %}{% set ns2.a = 5 %}{{ ns2.a }}[{{ ns2.b }}]")
            << QString("6[3, 1, 2]5[]");
        QTest::newRow("set-unpacking") << QString("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set messages = msgs[1:] %}{{ messages | length }}")
                                       << QString("121");
        QTest::newRow("set-block")
            << QString(
                   "{% set blk %}  in block {{ x }}  {% endset %}[{{ blk }}]{% set blk2 | upper | trim %}  abc  {% endset %}[{{ blk2 }}]")
            << QString("[  in block 1  ][ABC]");
        QTest::newRow("filter-block")
            << QString(
                   "{% filter upper %}hello {{ s }}{% endfilter %}|{% filter trim %}  spaced  {% endfilter %}|{% filter replace('a', 'b') | upper %}aaa{% endfilter %}")
            << QString("HELLO HELLO WORLD|spaced|BBB");
        QTest::newRow("macro-arguments")
            << QString(
                   "{% macro m(a, b=2, c='x') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(1, c='z') }}|{{ m() }}|{{ m(b=5, a=4) }}")
            << QString("1-2-x|1-3-x|1-2-z|-2-x|4-5-x");
        QTest::newRow("macro-recursion")
            << QString("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * (fact(n - 1) | int) }}{% endif %}{% endmacro %}{{ fact(10) }}")
            << QString("3628800");
        QTest::newRow("macro-sees-live-globals")
            << QString("{% macro m() %}{{ g }}{% endmacro %}{% set g = 'late' %}{{ m() }}{% set g = 'later' %}{{ m() }}")
            << QString("latelater");
        QTest::newRow("macro-calls-macro")
            << QString(
                   "{% macro inner() %}I{% endmacro %}{% macro outer() %}<{{ inner() }}>{% endmacro %}{{ outer() }}{{ outer() | length }}")
            << QString("<I>3");
        QTest::newRow("macro-scope-is-local") << QString(
                                                     "{% macro m() %}{% set local = 1 %}{{ local }}{% endmacro %}{{ m() }}[{{ local }}]")
                                              << QString("1[]");
        QTest::newRow("macro-writes-namespace")
            << QString("{% set ns = namespace(v=false) %}{% macro flip() %}{% set ns.v = true %}{% endmacro %}{{ flip() }}{{ ns.v }}")
            << QString("True");
        QTest::newRow("string-filters")
            << QString(
                   "{{ s | upper }}{{ s | lower }}{{ 'hello world' | capitalize }}{{ 'hello wORLD' | title }}{{ ' x ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 3 | string }}{{ s | length }}{{ u8 | length }}")
            << QString("HELLO WORLDhello worldHello worldHello Worldx|a|3116");
        QTest::newRow("sequence-filters")
            << QString(
                   "{{ l | first }}{{ l | last }}{{ s | first }}[{{ [] | first }}]{{ l | join(', ') }}{{ l | join }}{{ msgs | join('/', attribute='role') }}{{ l | length }}{{ d | length }}{{ l | count }}")
            << QString("32H[]3, 1, 2312system/user323");
        QTest::newRow("default")
            << QString(
                   "{{ n | default('dflt') }}|{{ nope | default('dflt') }}|{{ e | default('dflt') }}|{{ e | default('dflt', true) }}|{{ nope | d('d2') }}|{{ x | default(5) }}")
            << QString("None|dflt||dflt|d2|1");
        QTest::newRow("dict-access")
            << QString(
                   "{{ d | items | list | tojson }}{{ d.keys() | list }}{{ d.values() | list }}{{ d.get('a') }}{{ d.get('zz') }}{{ d.get('zz', 9) }}{{ nope | items | list }}")
            << QString("[[\"b\", 1], [\"a\", 2]]['b', 'a'][1, 2]2None9[]");
        QTest::newRow("replace") << QString(
                                        "{{ 'a-b-c' | replace('-', '+') }}{{ 'aaa' | replace('a', 'b', 2) }}{{ 'abc' | replace('', '.') }}")
                                 << QString("a+b+cbba.a.b.c.");
        QTest::newRow("numbers")
            << QString(
                   "{{ '42' | int + 1 }}{{ '4.7' | int }}{{ 'x' | int }}{{ 'x' | int(7) }}{{ 4.9 | int }}{{ true | int }}{{ '0x1A' | int(0, 16) }}{{ '3.5' | float }}{{ 'q' | float }}{{ 2 | float }}")
            << QString("4340741263.50.02.0");
        QTest::newRow("round")
            << QString(
                   "{{ 2.5 | round }}{{ 3.5 | round }}{{ 2.567 | round(2) }}{{ 2.1 | round(0, 'ceil') }}{{ 2.9 | round(method='floor') }}{{ 7 | round }}{{ -3 | abs }}")
            << QString("2.04.02.573.02.073");
        QTest::newRow("indent")
            << QString(
                   "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'a\\nb' | indent('> ') }}|{{ '' | indent(first=true) }}")
            << QString("a\n    b\n\n    c|  a\n  b|a\n  \n  b|a\n> b|    ");
        QTest::newRow("tojson")
            << QString(
                   "{{ l | tojson }}{{ d | tojson }}{{ msgs | tojson }}{{ n | tojson }}{{ t | tojson }}{{ f | tojson }}{{ {} | tojson(indent=2) }}{{ [] | tojson(indent=2) }}")
            << QString(
                   "[3, 1, 2]{\"b\": 1, \"a\": 2}[{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \" u1 \"}]nulltrue1.5{}[]");
        QTest::newRow("tojson-escapes-and-keeps-unicode")
            << QString("{{ 'q\"b\\\\s\\n\\t\\x01' | tojson }}{{ u8 | tojson }}{{ u8 | tojson(ensure_ascii=true) }}")
            << QString("\"q\\\"b\\\\s\\n\\t\\u0001\"\"héllo✓\"\"h\\u00e9llo\\u2713\"");
        QTest::newRow("tojson-indent-and-options")
            << QString(
                   "{{ {'a': [1, {'b': none}], 'c': 'd'} | tojson(indent=4) }}{{ d | tojson(sort_keys=true) }}{{ d | tojson(separators=(',', ':')) }}")
            << QString(
                   "{\n    \"a\": [\n        1,\n        {\n            \"b\": null\n        }\n    ],\n    \"c\": \"d\"\n}{\"a\": 2, \"b\": 1}{\"b\":1,\"a\":2}");
        QTest::newRow("select-reject-map")
            << QString(
                   "{{ msgs | selectattr('role', 'equalto', 'user') | list }}{{ msgs | rejectattr('role', 'equalto', 'user') | map(attribute='content') | list }}{{ msgs | map(attribute='role') | join(',') }}")
            << QString("[{'role': 'user', 'content': ' u1 '}]['sys']system,user");
        QTest::newRow("select-with-tests")
            << QString(
                   "{{ l | select('odd') | list }}{{ l | reject('odd') | list }}{{ [0, 1, '', 'a', none] | select | list }}{{ ['a','B'] | map('upper') | list }}{{ [' a ', 'b '] | map('trim') | join }}")
            << QString("[3, 1][2][1, 'a']['A', 'B']ab");
        QTest::newRow("selectattr-defined")
            << QString(
                   "{{ [{'t':1},{'u':2}] | selectattr('t', 'defined') | list }}{{ [{'t':1},{'u':2}] | selectattr('t') | list }}{{ none | selectattr('x') | list }}{{ [{'a':1},{'b':2}] | map(attribute='a', default=0) | list }}")
            << QString("[{'t': 1}][{'t': 1}][][1, 0]");
        QTest::newRow("sort-unique-minmax")
            << QString(
                   "{{ [3,1,2] | sort | list }}{{ [3,1,2] | sort(reverse=true) | list }}{{ ['b','A','c'] | sort | list }}{{ ['b','A','c'] | sort(case_sensitive=true) | list }}{{ [1,2,1,3] | unique | list }}{{ ['a','A','b'] | unique | list }}{{ [1,5,3] | max }}{{ [1,5,3] | min }}{{ [1,2,3] | sum }}{{ [1.5, 2] | sum }}")
            << QString("[1, 2, 3][3, 2, 1]['A', 'b', 'c']['A', 'b', 'c'][1, 2, 3]['a', 'b']5163.5");
        QTest::newRow("misc-filters")
            << QString(
                   "{{ l | reverse | list }}{{ s | reverse }}{{ 'a b  c' | wordcount }}{{ '<a href=\"x\">&' | e }}{{ s | safe }}{{ l | map('string') | join('-') }}")
            << QString("[2, 1, 3]dlroW olleH3&lt;a href=&#34;x&#34;&gt;&amp;Hello World3-1-2");
        QTest::newRow("string-methods")
            << QString(
                   "{{ 'a,b,,c'.split(',') }}{{ '  a  b '.split() }}{{ 'a b c'.split(' ', 1) }}[{{ ' x '.strip() }}{{ 'xax'.strip('x') }}{{ ' x '.lstrip() }}{{ ' x '.rstrip() }}]")
            << QString("['a', 'b', '', 'c']['a', 'b']['a', 'b c'][xax  x]");
        QTest::newRow("string-methods-2")
            << QString(
                   "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.upper() }}{{ 'ABC'.lower() }}{{ 'hello world'.title() }}{{ 'hELLO'.capitalize() }}{{ 'aXa'.replace('a', 'b') }}")
            << QString("TrueTrueTrueABCabcHello WorldHellobXb");
        QTest::newRow("string-methods-3")
            << QString(
                   "{{ 'hello'.find('l') }}{{ 'hello'.rfind('l') }}{{ 'hello'.find('z') }}{{ 'hello'.count('l') }}{{ ', '.join(['a', 'b']) }}{{ '12'.isdigit() }}{{ 'a1'.isalpha() }}{{ 'x</think>y</think>z'.split('</think>')[-1] }}")
            << QString("23-12a, bTrueFalsez");
        QTest::newRow("globals")
            << QString(
                   "{{ range(3) | list }}{{ range(1, 4) | list }}{{ range(10, 0, -3) | list }}{{ dict(a=1, b='x') }}{{ namespace(a=1).a }}{{ raise_exception is defined }}{{ strftime_now is defined }}")
            << QString("[0, 1, 2][1, 2, 3][10, 7, 4, 1]{'a': 1, 'b': 'x'}1TrueTrue");
        QTest::newRow("strftime-now") << QString("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A %B %-d %y %H:%M:%S %m %%') }}")
                                      << QString("26 Jul 2024|Friday July 26 24 00:00:00 07 %");
        QTest::newRow("tests")
            << QString(
                   "{{ x is number }}{{ s is string }}{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ s is iterable }}{{ x is iterable }}{{ n is none }}{{ nope is iterable }}{{ l is sequence }}{{ t is boolean }}{{ x is integer }}{{ f is float }}{{ t is true }}{{ t is false }}")
            << QString("TrueTrueTrueFalseTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalse");
        QTest::newRow("tests-with-arguments")
            << QString(
                   "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 1 is eq 1 }}{{ 'a' is equalto 'a' }}{{ 2 is gt 1 }}{{ 2 is lt 1 }}{{ 2 is in [1, 2] }}{{ 2 is ne 2 }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ n is sameas none }}{{ range is callable }}")
            << QString("TrueTrueTrueFalseTrueTrueTrueFalseTrueFalseTrueTrueTrueTrue");
        QTest::newRow("negated-tests")
            << QString("{{ x is not none }}{{ x is not defined }}{{ not x is defined }}{{ nope is not defined and true }}")
            << QString("TrueFalseFalseTrue");
        QTest::newRow("literals")
            << QString(
                   "{{ {'a': 1, 'b': [1, 2], 'c': {'d': none}} }}{{ [1, 'two', 3.0, none, true, [], {}] }}{{ \"it's\" }}{{ ['it\\'s', 'a\"b'] }}{{ 'a' 'b' }}{{ True }}{{ None }}{{ 1_000 }}")
            << QString("{'a': 1, 'b': [1, 2], 'c': {'d': None}}[1, 'two', 3.0, None, True, [], {}]it's[\"it's\", 'a\"b']abTrueNone1000");
        QTest::newRow("percent-format")
            << QString(
                   "{{ '%s and %d' % (s, x) }}|{{ '%-6s|%6.2f|%03d' % ('ab', f, x) }}|{{ '%(a)s/%(b)s' % d }}|{{ '%x %r %%' % (255, s) }}")
            << QString("Hello World and 1|ab    |  1.50|001|2/1|ff 'Hello World' %");
        QTest::newRow("numeric-tests-on-floats")
            << QString("{{ 2.0 is even }}{{ 3.0 is odd }}{{ 2.5 is odd }}{{ 7.5 is divisibleby 2.5 }}{{ -3 is odd }}")
            << QString("TrueTrueFalseTrueTrue");
        QTest::newRow("wordcount") << QString("{{ s | wordcount }}{{ 'one-two_three 4.5' | wordcount }}") << QString("24");
        QTest::newRow("string-escapes") << QString("{{ \"tab\\there\" }}|{{ '\\u00e9\\x41' }}|{{ '\\\\' }}|{{ 'line\\nnext' }}")
                                        << QString("tab\there|éA|\\|line\nnext");
        QTest::newRow("raw") << QString("{% raw %}{{ not rendered }}{% endraw %}|{% raw -%}   x   {%- endraw %}|")
                             << QString("{{ not rendered }}|x|");
        QTest::newRow("comments") << QString("text {# comment #} more {#- stripped -#}   tight") << QString("text  moretight");
        QTest::newRow("trim-blocks-lstrip-blocks") << QString("a\n  {% if true %}\n  b\n  {% endif %}\nc\n") << QString("a\n  b\nc");
        QTest::newRow("dash-strips-all-whitespace") << QString("a\n  {%- if true -%}\n  b\n  {%- endif -%}\nc") << QString("abc");
        QTest::newRow("variable-tags-keep-newlines") << QString("{{ 'a' }}\n{{ 'b' }}\n") << QString("a\nb");
        QTest::newRow("only-one-trailing-newline-dropped") << QString("end\n\n") << QString("end\n");
        QTest::newRow("plus-disables-lstrip-and-trim") << QString("  {%+ if true %}kept{% endif +%}\nnext") << QString("  kept\nnext");
        QTest::newRow("comment-lines-vanish") << QString("x\n{# c #}\ny\n  {# indented #}\nz") << QString("x\ny\nz");
        QTest::newRow("loop-lines") << QString("line1\n{% for i in [1,2] %}\n  item {{ i }}\n{% endfor %}\nend")
                                    << QString("line1\n  item 1\n  item 2\nend");
        QTest::newRow("brace-inside-expression")
            << QString("{{ {'a': {'b': 1}} }}|{% set q = {'x': '}}'} %}{{ q.x }}|{{ '%}' }}|{{ 'a' }}}")
            << QString("{'a': {'b': 1}}|}}|%}|a}");
        QTest::newRow("carriage-returns") << QString("{% if x %}\r\nA\r\n{% endif %}\r\nB") << QString("A\nB");
        QTest::newRow("none-attribute-is-undefined")
            << QString("[{{ none.x }}]|{{ s[100] }}|{{ nope.y if false else 'ok' }}") << QString("[]||ok");
    }
    void features() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        Result<std::string> out = render(source);
        QVERIFY2(out.ok(), out.status().message().c_str());
        QCOMPARE(QString::fromStdString(*out), expected);
    }

    void contextParses() { QVERIFY(parse_json(k_context).ok()); }

    // Errors while rendering: the message, with the position for anything but raise_exception.
    void renderErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::newRow("raise_exception") << "{{ raise_exception('boom: ' ~ x) }}"
                                         << "boom: 1";
        QTest::newRow("raise-in-block") << "{% if true %}{{ raise_exception('inner') }}{% endif %}after"
                                        << "inner";
        QTest::newRow("undefined-attribute") << "{{ nope.y }}"
                                             << "line 1:8: 'nope' is undefined";
        QTest::newRow("undefined-arithmetic") << "{{ nope + 1 }}"
                                              << "line 1:9: 'nope' is undefined";
        QTest::newRow("undefined-call") << "{{ nope() }}"
                                        << "line 1:8: 'nope' is undefined";
        QTest::newRow("undefined-compare") << "{{ nope < 1 }}"
                                           << "line 1:4: 'nope' is undefined";
        QTest::newRow("undefined-tojson") << "{{ nope | tojson }}"
                                          << "Object of type Undefined is not JSON serializable";
        QTest::newRow("str-plus-int") << "{{ 'a' + 1 }}"
                                      << "unsupported operand type(s) for +: 'str' and 'int'";
        QTest::newRow("none-plus") << "{{ n + 1 }}"
                                   << "unsupported operand type(s) for +: 'NoneType' and 'int'";
        QTest::newRow("division-by-zero") << "{{ 1 / 0 }}"
                                          << "line 1:6: division by zero";
        QTest::newRow("modulo-by-zero") << "{{ x % 0 }}"
                                        << "modulo by zero";
        QTest::newRow("incomparable") << "{{ 1 < 'a' }}"
                                      << "'<' not supported between instances of 'int' and 'str'";
        QTest::newRow("in-string-needs-string") << "{{ 1 in 'abc' }}"
                                                << "'in <string>' requires string as left operand";
        QTest::newRow("in-none") << "{{ 'a' in n }}"
                                 << "argument of type 'NoneType' is not iterable";
        QTest::newRow("iterate-none") << "{% for i in n %}{% endfor %}"
                                      << "line 1:4: 'NoneType' object is not iterable";
        QTest::newRow("iterate-int") << "{% for i in x %}{% endfor %}"
                                     << "'int' object is not iterable";
        QTest::newRow("unpack-too-many") << "{% for a, b in [[1, 2, 3]] %}{% endfor %}"
                                         << "too many values to unpack";
        QTest::newRow("unpack-too-few") << "{% set a, b = [1] %}"
                                        << "not enough values to unpack (expected 2, got 1)";
        QTest::newRow("set-attribute-on-non-namespace") << "{% set q = 1 %}{% set q.a = 5 %}"
                                                        << "not a namespace()";
        QTest::newRow("macro-too-many-args") << "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"
                                             << "takes not more than 1";
        QTest::newRow("macro-unknown-kwarg") << "{% macro m(a) %}{% endmacro %}{{ m(z=1) }}"
                                             << "no keyword argument 'z'";
        QTest::newRow("not-callable") << "{{ x() }}"
                                      << "'int' object is not callable";
        QTest::newRow("no-list-mutation") << "{{ l.append(4) }}"
                                          << "'list object' has no attribute 'append'";
        QTest::newRow("unknown-method") << "{{ s.nosuch() }}"
                                        << "'str object' has no attribute 'nosuch'";
        QTest::newRow("items-of-list") << "{{ l | items }}"
                                       << "can only get item pairs from a mapping";
        QTest::newRow("length-of-int") << "{{ x | length }}"
                                       << "object of type 'int' has no len()";
        QTest::newRow("integer-overflow") << "{{ 9223372036854775807 + 1 }}"
                                          << "integer overflow";
        QTest::newRow("slice-step-zero") << "{{ l[::0] }}"
                                         << "slice step cannot be zero";
        QTest::newRow("dict-key-type") << "{{ {1: 2} }}"
                                       << "dict keys must be strings";
        QTest::newRow("undefined-int") << "{{ nope | int }}"
                                       << "'nope' is undefined";
        QTest::newRow("undefined-indent") << "{{ nope | indent }}"
                                          << "'nope' is undefined";
        QTest::newRow("test-arity") << "{{ x is odd(3) }}"
                                    << "test 'odd' takes 0 argument(s), 1 given";
        QTest::newRow("test-needs-argument") << "{{ x is divisibleby }}"
                                             << "test 'divisibleby' takes 1 argument(s), 0 given";
        QTest::newRow("format-too-few") << "{{ '%s %s' % (1,) }}"
                                        << "not enough arguments for format string";
        QTest::newRow("format-too-many") << "{{ 'abc' % 5 }}"
                                         << "not all arguments converted during string formatting";
        QTest::newRow("format-type") << "{{ '%d' % 'x' }}"
                                     << "%d format: a real number is required, not str";
        QTest::newRow("position-on-later-line") << "line one\n{% if true %}\n  {{ 1 + none }}\n{% endif %}"
                                                << "line 3:8: unsupported operand";
    }
    void renderErrors() {
        QFETCH(QString, source);
        QFETCH(QString, message);
        Result<std::string> out = render(source);
        QVERIFY2(!out.ok(), "rendering should have failed");
        QCOMPARE(out.status().code(), StatusCode::invalid_argument);
        const QString got = QString::fromStdString(out.status().message());
        if (source.contains("raise_exception")) {
            QCOMPARE(got, message);  // exactly the template's message
        } else {
            QVERIFY2(got.contains(message), qPrintable(got));
        }
    }

    // Syntax errors: parse() fails with "line L:C: what".
    void syntaxErrors_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::newRow("unclosed-if") << "{% if x %}"
                                     << "line 1:11: unexpected end of template, expected 'elif' or 'else' or 'endif'";
        QTest::newRow("wrong-end-tag") << "{% if x %}{% endfor %}"
                                       << "line 1:14: unknown tag 'endfor'";
        QTest::newRow("stray-end-tag") << "ok\n{% endif %}"
                                       << "line 2:4: unknown tag 'endif'";
        QTest::newRow("unknown-tag") << "{% frobnicate %}"
                                     << "line 1:4: unknown tag 'frobnicate'";
        QTest::newRow("unsupported-tag") << "{% include 'x' %}"
                                         << "line 1:4: unsupported tag 'include'";
        QTest::newRow("unclosed-variable") << "{{ x"
                                           << "line 1:1: unexpected end of template: missing '}}'";
        QTest::newRow("unclosed-block") << "a\n  {% if x"
                                        << "line 2:3: unexpected end of template: missing '%}'";
        QTest::newRow("unclosed-comment") << "{# never closed"
                                          << "line 1:1: unterminated comment: missing '#}'";
        QTest::newRow("unclosed-string") << "{{ 'abc }}"
                                         << "line 1:4: unterminated string literal";
        QTest::newRow("unclosed-paren") << "{{ (1, }}"
                                        << "line 1:8: unexpected '}', expected ')'";
        QTest::newRow("unclosed-bracket") << "{{ [1, 2 }}"
                                          << "line 1:10: unexpected '}', expected ']'";
        QTest::newRow("missing-operand") << "{{ 1 + }}"
                                         << "line 1:8: unexpected '}}'";
        QTest::newRow("two-values") << "{{ 1 2 }}"
                                    << "line 1:6: expected '}}', got '2'";
        QTest::newRow("empty-output") << "{{ }}"
                                      << "line 1:4: expected an expression, got '}}'";
        QTest::newRow("bad-character") << "{{ x @ 1 }}"
                                       << "line 1:6: unexpected character '@'";
        QTest::newRow("unknown-filter") << "{{ x | nosuch }}"
                                        << "line 1:8: no filter named 'nosuch'";
        QTest::newRow("unknown-test") << "{{ x is nosuch }}"
                                      << "line 1:9: no test named 'nosuch'";
        QTest::newRow("for-without-in") << "{% for x of y %}{% endfor %}"
                                        << "line 1:10: expected 'in', got 'of'";
        QTest::newRow("break-outside-loop") << "{% break %}"
                                            << "line 1:4: 'break' outside of a loop";
        QTest::newRow("break-in-macro-in-loop") << "{% for i in l %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"
                                                << "line 1:35: 'continue' outside of a loop";
        QTest::newRow("double-else") << "{% if x %}{% else %}{% else %}{% endif %}"
                                     << "line 1:24: unknown tag 'else'";
        QTest::newRow("unclosed-raw") << "{% raw %}text"
                                      << "line 1:10: unterminated raw block: missing '{% endraw %}'";
    }
    void syntaxErrors() {
        QFETCH(QString, source);
        QFETCH(QString, message);
        Result<Template> t = Template::parse(source.toStdString());
        QVERIFY2(!t.ok(), "parsing should have failed");
        QCOMPARE(t.status().code(), StatusCode::invalid_argument);
        QCOMPARE(QString::fromStdString(t.status().message()), message);
    }

    // Hostile templates end with an error, never a crash or a hang.
    void limits_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("code");
        const int invalid = static_cast<int>(StatusCode::invalid_argument);
        const int oom = static_cast<int>(StatusCode::out_of_memory);
        QTest::newRow("infinite-recursion") << "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"
                                            << "recursion deeper than" << invalid;
        QTest::newRow("mutual-recursion") << "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}"
                                             "{{ a() }}"
                                          << "recursion deeper than" << invalid;
        QTest::newRow("exponential-recursion")
            << "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"
            << "template ran too long" << invalid;
        QTest::newRow("nested-loops") << "{% for i in range(60000) %}{% for j in range(60000) %}{% endfor %}{% endfor %}"
                                      << "template ran too long" << invalid;
        QTest::newRow("string-doubling")
            << "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
            << "larger than" << oom;
        QTest::newRow("string-repeat") << "{{ 'abc' * 1000000000 }}"
                                       << "larger than" << oom;
        QTest::newRow("list-doubling") << "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"
                                       << "list longer than 65536 items" << oom;
        QTest::newRow("list-repeat") << "{{ [1, 2] * 100000 }}"
                                     << "list longer than 65536 items" << oom;
        QTest::newRow("huge-range") << "{{ range(100000000) | length }}"
                                    << "list longer than 65536 items" << oom;
        QTest::newRow("self-containing-namespace") << "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"
                                                   << "nested more than 64 levels" << invalid;
        QTest::newRow("deep-parentheses") << "{{ " + QString("(").repeated(400) + "1" + QString(")").repeated(400) + " }}"
                                          << "nested too deeply" << invalid;
        QTest::newRow("deep-blocks") << QString("{% if true %}").repeated(300) + QString("{% endif %}").repeated(300) << "nested too deeply"
                                     << invalid;
        QTest::newRow("long-operator-chain") << "{{ 1" + QString(" + 1").repeated(5000) + " }}"
                                             << "expression too long" << invalid;
        QTest::newRow("long-not-chain") << "{{ " + QString("not ").repeated(5000) + "x }}"
                                        << "nested too deeply" << invalid;
        // Reading, comparing and searching long strings costs steps, not only building them.
        QTest::newRow("long-string-compared-in-loop")
            << "{% set s = 'x' * 1000000 %}{% for i in range(60000) %}{% if s == s %}{% endif %}{% endfor %}"
            << "template ran too long" << invalid;
        QTest::newRow("long-string-searched-in-loop")
            << "{% set s = 'x' * 1000000 %}{% for i in range(60000) %}{% if 'y' in s %}{% endif %}{% endfor %}"
            << "template ran too long" << invalid;
        QTest::newRow("long-string-method-in-loop")
            << "{% set s = 'x' * 1000000 %}{% for i in range(60000) %}{{ s.count('y') }}{% endfor %}"
            << "template ran too long" << invalid;
        QTest::newRow("long-string-indexed-in-loop") << "{% set s = 'x' * 1000000 %}{% for i in range(60000) %}{{ s[5] }}{% endfor %}"
                                                     << "template ran too long" << invalid;
        QTest::newRow("long-string-filtered-in-loop")
            << "{% set s = 'x' * 1000000 %}{% for i in range(60000) %}{{ s | length }}{% endfor %}"
            << "template ran too long" << invalid;
        QTest::newRow("quadratic-search") << "{% set n = 'a' * 500000 ~ 'b' %}{{ n in 'a' * 1000000 }}"
                                          << "template ran too long" << invalid;
        QTest::newRow("split-into-too-many-parts") << "{{ ('a ' * 400000).split() | length }}"
                                                   << "list longer than 65536 items" << oom;
        QTest::newRow("splitlines-into-too-many-parts") << "{{ ('a\\n' * 400000).splitlines() | length }}"
                                                        << "list longer than 65536 items" << oom;
    }
    void limits() {
        QFETCH(QString, source);
        QFETCH(QString, message);
        QFETCH(int, code);
        RenderOptions options = fixed_clock();
        options.limits.max_string_bytes = size_t{1} << 20;
        options.limits.max_steps = 200'000;
        options.limits.max_list_items = 65536;
        Result<std::string> out = render(source, options);
        QVERIFY2(!out.ok(), "should have been stopped");
        QCOMPARE(static_cast<int>(out.status().code()), code);
        QVERIFY2(QString::fromStdString(out.status().message()).contains(message), out.status().message().c_str());
    }

    // At the default limits: a long string is shared, never copied, however often it is
    // read, listed or assigned; iterating over one is refused before it becomes a list.
    void longStringsAtTheDefaultLimits_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        QTest::newRow("listed-a-million-times") << "{% set s = 'x' * 60000000 %}{{ ([s] * 1000000) | length }}"
                                                << "1000000";
        QTest::newRow("assigned-in-a-loop")
            << "{% set s = 'x' * 60000000 %}{% set ns = namespace(t='') %}{% for i in range(100000) %}{% set ns.t = s %}{% endfor %}"
               "{{ ns.t | length }}"
            << "60000000";
        QTest::newRow("method-bound-in-a-loop")
            << "{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{% if s.startswith('y') %}{% endif %}{% endfor %}ok"
            << "ok";
        QTest::newRow("iterated") << "{% for c in 'x' * 2000000 %}{% endfor %}"
                                  << "iterating over a string longer than 1 MiB";
        QTest::newRow("printed-in-a-list") << "{% set s = 'x' * 60000000 %}{{ [s] * 1000 }}"
                                           << "larger than 64 MiB";
        QTest::newRow("printed-in-nested-lists") << "{% set s = 'x' * 60000000 %}{{ [[s] * 1000] }}"
                                                 << "too large to print";
    }
    void longStringsAtTheDefaultLimits() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        QElapsedTimer timer;
        timer.start();
        const Result<std::string> out = render(source);
        const QString text = QString::fromStdString(out.ok() ? *out : out.status().message());
        QVERIFY2(text.contains(expected), qPrintable(text));
        // Copying the string each time would take minutes and gigabytes.
        QVERIFY2(timer.elapsed() < 10'000, qPrintable(QString::number(timer.elapsed())));
    }

    void defaultLimitsAreFinite() {
        // The budgets themselves are tested above with small values; the defaults must be
        // set, and generous enough for a long chat (about 1 s of work at most, optimized).
        const RenderLimits limits;
        QVERIFY(limits.max_steps >= 1'000'000 && limits.max_steps <= 10'000'000);
        QVERIFY(limits.max_depth >= 100 && limits.max_depth <= 1000);
        QVERIFY(limits.max_string_bytes >= (size_t{16} << 20));
        QVERIFY(limits.max_list_items >= 65536 && limits.max_list_items <= (size_t{1} << 22));
    }

    void longContentRendersQuickly() {
        // A long document pasted into a chat: 2 MB through a Llama-3-like loop.
        Result<Template> t = Template::parse(
            "{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim "
            "+ '<|eot_id|>' }}{% endfor %}");
        QVERIFY(t.ok());
        Value message = Value::object();
        message.as_mutable_object().set("role", Value("user"));
        message.as_mutable_object().set("content", Value(std::string(2 << 20, 'w')));
        Value ctx = Value::object();
        ctx.as_mutable_object().set("messages", Value(Array{message, message}));
        Result<std::string> out = t->render(ctx);
        QVERIFY2(out.ok(), out.status().message().c_str());
        QCOMPARE(out->size(), size_t{2} * ((2 << 20) + 52));  // 52: header and <|eot_id|>
    }

    void templatesAreReusable() {
        Result<Template> t = Template::parse("{% set ns = namespace(n=0) %}{% set ns.n = ns.n + x %}{{ ns.n }}");
        QVERIFY(t.ok());
        const Template copy = *t;  // shares the parsed tree
        QCOMPARE(QString::fromStdString(*t->render(context())), QString("1"));
        QCOMPARE(QString::fromStdString(*copy.render(context())), QString("1"));
    }

    void jsonRoundTrip_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("compact");
        QTest::newRow("scalars") << "[1, -2, 1.5, 1e+20, true, false, null, \"s\"]"
                                 << "[1, -2, 1.5, 1e+20, true, false, null, \"s\"]";
        QTest::newRow("key-order-kept") << "{\"z\": 1, \"a\": {\"y\": [], \"b\": {}}}"
                                        << "{\"z\": 1, \"a\": {\"y\": [], \"b\": {}}}";
        // JSON text: "\u00e9\n\"\\\/\ud83d\ude00\u0001" (moc cannot read it as a raw string)
        QTest::newRow("escapes") << "\"\\u00e9\\n\\\"\\\\\\/\\ud83d\\ude00\\u0001\""
                                 << "\"é\\n\\\"\\\\/😀\\u0001\"";
        QTest::newRow("whitespace") << " { \"a\" :\n[ 1 ,2 ] } "
                                    << "{\"a\": [1, 2]}";
    }
    void jsonRoundTrip() {
        QFETCH(QString, json);
        QFETCH(QString, compact);
        Result<Value> v = parse_json(json.toStdString());
        QVERIFY2(v.ok(), v.status().message().c_str());
        QCOMPARE(QString::fromStdString(to_json(*v)), compact);
    }

    void jsonRejectsMalformedInput_data() {
        QTest::addColumn<QString>("json");
        QTest::newRow("truncated") << "{\"a\": [1, 2";
        QTest::newRow("trailing") << "[1] x";
        QTest::newRow("bare-word") << "nul";
        QTest::newRow("single-quotes") << "{'a': 1}";
        QTest::newRow("deep") << QString("[").repeated(1000);
    }
    void jsonRejectsMalformedInput() {
        QFETCH(QString, json);
        Result<Value> v = parse_json(json.toStdString());
        QVERIFY(!v.ok());
        QCOMPARE(v.status().code(), StatusCode::invalid_argument);
        QVERIFY2(QString::fromStdString(v.status().message()).startsWith("JSON at byte"), v.status().message().c_str());
    }

    void floatsPrintLikePython_data() {
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("text");
        QTest::newRow("integral") << 3.0 << "3.0";
        QTest::newRow("fraction") << 0.1 << "0.1";
        QTest::newRow("sum") << 0.1 + 0.2 << "0.30000000000000004";
        QTest::newRow("big") << 1e16 << "1e+16";
        QTest::newRow("below-big") << 1234567890123456.0 << "1234567890123456.0";
        QTest::newRow("small") << 0.0001 << "0.0001";
        QTest::newRow("smaller") << 0.00001 << "1e-05";
        QTest::newRow("negative") << -2.5e-7 << "-2.5e-07";
        QTest::newRow("zero") << 0.0 << "0.0";
    }
    void floatsPrintLikePython() {
        QFETCH(double, value);
        QFETCH(QString, text);
        QCOMPARE(QString::fromStdString(format_float(value)), text);
    }
};

QTEST_GUILESS_MAIN(TestChatJinja)
#include "test_chat_jinja.moc"
