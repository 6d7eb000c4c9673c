// Unit tests of the chat template interpreter (chat_template.h, jinja*.cc): Jinja semantics
// checked against python3-jinja2 3.1 configured as transformers does (the expected strings of
// RendersLikeJinja2 were produced by jinja2 itself), whitespace control, error reporting,
// limits against runaway input, and tokenizer_config.json loading. Always run; the real models'
// templates are in chat_template_golden_test.cc.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <fstream>
#include <random>
#include <thread>

#include "core/files.h"
#include "core/temp_dir.h"

namespace ib::tokenizer {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// 2025-08-05 09:30:00 UTC: what strftime_now formats in these tests.
constexpr std::time_t kNow = 1754386200;

json::object parse_object(std::string_view text) {
  return text.empty() ? json::object() : json::parse(text).as_object();
}

// The rendering, or "ERROR: message".
std::string render(std::string_view tmpl, std::string_view context = "") {
  auto t = ChatTemplate::parse(tmpl, "test");
  if (!t) return "ERROR: " + t.error().message;
  RenderOptions options;
  options.now = kNow;
  auto out = t->render(parse_object(context), options);
  if (!out) return "ERROR: " + out.error().message;
  return *out;
}

#define EXPECT_ERROR(tmpl, context, message)                                \
  do {                                                                      \
    const std::string got = render(tmpl, context);                          \
    EXPECT_EQ(got.rfind("ERROR: ", 0), 0u) << tmpl << " rendered " << got;  \
    EXPECT_NE(got.find(message), std::string::npos) << tmpl << ": " << got; \
  } while (0)

TEST(ChatTemplate, RendersLikeJinja2) {
  EXPECT_EQ(
      render(
          R"j({{ 1e20 }} {{ 1.0 }} {{ 0.1+0.2 }} {{ 1e-5 }} {{ 10/4 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 2**-1 }} {{ 1_000 }} {{ 0x1f }} {{ 3.5 // 2 }})j"),
      R"j(1e+20 1.0 0.30000000000000004 1e-05 2.5 3 -4 2 1024 0.5 1000 31 1.0)j");
  EXPECT_EQ(
      render(
          R"j({{ [1,'a',None,True,1.5,{'k':(1,)}] }} {{ (1,2) }} {{ (1,) }} {{ () }} {{ {} }})j"),
      R"j([1, 'a', None, True, 1.5, {'k': (1,)}] (1, 2) (1,) () {})j");
  EXPECT_EQ(render(R"j({{ ['a\'b', 'x"y', 'q\'"', '\n', 'é', '\x01'] }})j"),
            R"j(["a'b", 'x"y', 'q\'"', '\n', 'é', '\x01'])j");
  EXPECT_EQ(
      render(
          R"j({{ x }}|{{ x|length }}|{{ x is iterable }}|{{ x is defined }}|{{ x is sequence }})j"),
      R"j(|0|True|False|True)j");
  EXPECT_EQ(render(R"j({{ 'ab' * 3 }} {{ [1] * 2 }} {{ 'x' ~ 1 ~ none ~ true ~ x }})j"),
            R"j(ababab [1, 1] x1NoneTrue)j");
  EXPECT_EQ(
      render(
          R"j({{ 'abc'[::-1] }} {{ 'abc'[1:] }} {{ [1,2,3][-1] }} {{ [1,2,3][5] }}| {{ [1,2,3,4,5][1:4:2] }} {{ [1,2,3][:-1] }} {{ 'héllo'[1:3] }})j"),
      R"j(cba bc 3 | [2, 4] [1, 2] él)j");
  EXPECT_EQ(
      render(
          R"j({{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }} {{ 1 != 2 }} {{ none == none }} {{ x == none }})j"),
      R"j(True True True True True True False)j");
  EXPECT_EQ(render(R"j({{ 'it''s' }} {{ "a\tb\u00e9\x41\q" }} {{ 'line\
next' }})j"),
            R"j(its a	béA\q linenext)j");
  EXPECT_EQ(render(R"j(  {% if true %}
  x
  {% endif %}
  {{ 'y' }}  
{# c #}
z
)j"),
            R"j(  x
  y  
z)j");
  EXPECT_EQ(render(R"j(a  {%- if true -%}  b  {%- endif -%}  c)j"), R"j(abc)j");
  EXPECT_EQ(
      render(
          R"j({{ 'Hello world-foo bar'|title }} {{ 'hELLO wORLD'|capitalize }} {{ ' x '|trim }}|{{ 'a\nb'|indent(2) }}|{{ 'a\n\nb\n'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }})j"),
      R"j(Hello World-Foo Bar Hello world x|a
  b|  a

  b
|a
  
  b)j");
  EXPECT_EQ(
      render(
          R"j({{ [3,1,2]|sort }} {{ ['B','a','C']|sort }} {{ ['a','A','b']|unique|list }} {{ [1,2]|reverse|list }} {{ [3,1,2]|sort(reverse=true) }})j"),
      R"j([1, 2, 3] ['a', 'B', 'C'] ['a', 'b'] [2, 1] [3, 2, 1])j");
  EXPECT_EQ(
      render(
          R"j({{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 5|round }} {{ -1|abs }} {{ 2.7|round(0, 'floor') }} {{ 2.1|round(method='ceil') }})j"),
      R"j(2.0 4.0 2.67 5 1 2.0 3.0)j");
  EXPECT_EQ(
      render(
          R"j({% for a in [1,2,3] if a > 1 %}{{ loop.index }}/{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.first }}{{ loop.last }}{{ loop.revindex }}{{ loop.revindex0 }};{% else %}E{% endfor %})j"),
      R"j(1/23TrueFalse21;2/22FalseTrue10;)j");
  EXPECT_EQ(
      render(
          R"j({% for a in [] %}x{% else %}empty{% endfor %}|{% for a in [1] if false %}x{% else %}filtered{% endfor %})j"),
      R"j(empty|filtered)j");
  EXPECT_EQ(
      render(
          R"j({% for k, v in {'a':1,'b':2}.items() %}{{k}}={{v}};{% endfor %}{% for k in {'a':1,'b':2} %}{{k}}{% endfor %})j"),
      R"j(a=1;b=2;ab)j");
  EXPECT_EQ(
      render(
          R"j({{ namespace(a=1) }} {{ none is none }} {{ 1 is number }} {{ true is number }} {{ true is integer }} {{ 1.0 is float }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is mapping }} {{ true is boolean }} {{ false is false }} {{ 0 is false }})j"),
      R"j(<Namespace {'a': 1}> True True True False True True True False True True False)j");
  EXPECT_EQ(
      render(
          R"j({{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'xxaxx'.strip('x') }} {{ 'a b c'.split(none, 1) }} {{ '  a b c  '.rsplit(none, 1) }} {{ 'a,b,c'.split(',', 1) }})j"),
      R"j(['a', 'b', '', 'c'] ['a', 'b'] ['a,b', 'c'] a ['a', 'b c'] ['  a b', 'c'] ['a', 'b,c'])j");
  EXPECT_EQ(
      render(
          R"j({{ 3 }}{{ 1e16 }} {{ 123456789012345678.0 }} {{ 1.5e-7 }} {{ -0.0 }} {{ 1e15 }} {{ 0.0001 }} {{ 1/3 }})j"),
      R"j(31e+16 1.2345678901234568e+17 1.5e-07 -0.0 1000000000000000.0 0.0001 0.3333333333333333)j");
  EXPECT_EQ(
      render(
          R"j({{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|default('d') }} {{ x|d }}|)j"),
      R"j(d  d None |)j");
  EXPECT_EQ(
      render(
          R"j({{ {'a':1}|items|list }} {{ 'abc'|list }} {{ 'abc'|first }} {{ []|first }}| {{ [1,2,3]|last }} {{ 'xyz'|last }})j"),
      R"j([('a', 1)] ['a', 'b', 'c'] a | 3 z)j");
  EXPECT_EQ(
      render(
          R"j({{ x if false }}|{{ 'a' if true else 'b' }}|{{ 'a' if false else 'b' if true else 'c' }})j"),
      R"j(|a|b)j");
  EXPECT_EQ(
      render(
          R"j({{ 'abc' in 'xabcx' }} {{ 1 in [1,2] }} {{ 'a' in {'a':1} }} {{ 'a' not in x }} {{ 3 not in (1,2) }})j"),
      R"j(True True True True True)j");
  EXPECT_EQ(render(R"j({{ m }})j", R"j({"m": [{"role": "user", "content": "hi"}], "n": null})j"),
            R"j([{'role': 'user', 'content': 'hi'}])j");
  EXPECT_EQ(
      render(
          R"j({{ 'héllo'|length }} {{ 'héllo'[1] }} {{ 'héllo'|upper }} {{ 'ÀÉÎ'|lower }} {{ 'straße'|upper }})j"),
      R"j(5 é HÉLLO àéî STRASSE)j");
  EXPECT_EQ(render(R"j({% raw %}{{ x }}{% if %}{% endraw %})j"), R"j({{ x }}{% if %})j");
  EXPECT_EQ(
      render(
          R"j({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ -2|abs }} {{ not true }} {{ not none }} {{ true and 'x' }} {{ 0 or 'y' }} {{ [] or none }} {{ '' and 1 }})j"),
      R"j(True False 2 False True x y None )j");
  EXPECT_EQ(
      render(
          R"j({% set ns = namespace(n=0, items=[]) %}{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }} {{ ns['n'] }})j"),
      R"j(2 2)j");
  EXPECT_EQ(
      render(
          R"j({% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = i+10 %}{{x}},{% endfor %}{{x}})j"),
      R"j(110,111,112,1)j");
  EXPECT_EQ(
      render(
          R"j({% for i in range(3) %}{% if i == 0 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %})j"),
      R"j([a][][])j");
  EXPECT_EQ(
      render(
          R"j({% macro m(a, b='B', c=none) %}<{{ a }}|{{ b }}|{{ c }}>{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(1, c=3) }}{{ m() }})j"),
      R"j(<1|B|None><1|2|None><1|B|3><|B|None>)j");
  EXPECT_EQ(
      render(
          R"j({% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * (fact(n - 1)|int) }}{% endif %}{% endmacro %}{{ fact(10) }})j"),
      R"j(3628800)j");
  EXPECT_EQ(
      render(R"j({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set (c, d) = [3, 4] %}{{ c }}{{ d }})j"),
      R"j(1234)j");
  EXPECT_EQ(render(R"j({% set x %}
  block {{ 1 + 1 }}
{% endset %}[{{ x }}])j"),
            R"j([  block 2
])j");
  EXPECT_EQ(
      render(
          R"j({{ {'a': [1, 2.0, 'é"\n<'], 'b': none, 'c': true}|tojson }} {{ {'a':[1,{}],'b':[]}|tojson(indent=2) }} {{ 'é'|tojson(ensure_ascii=true) }} {{ {'b':1,'a':2}|tojson(sort_keys=true) }} {{ [1,2]|tojson(separators=(',',':')) }})j"),
      R"j({"a": [1, 2.0, "é\"\n<"], "b": null, "c": true} {
  "a": [
    1,
    {}
  ],
  "b": []
} "\u00e9" {"a": 2, "b": 1} [1,2])j");
  EXPECT_EQ(
      render(
          R"j({{ "😀\u0007"|tojson }} {{ "😀"|tojson(true) }} {{ 1.5|tojson }} {{ 10|tojson }} {{ (1, 'a')|tojson }} {{ {1: 'a', none: 2, true: 3}|tojson }})j"),
      R"j("😀\u0007" "\ud83d\ude00" 1.5 10 [1, "a"] {"1": 3, "null": 2})j");
  EXPECT_EQ(
      render(
          R"j({{ ['a', 'b']|join(', ') }} {{ [1, 2]|join }} {{ [{'n': 'x'}, {'n': 'y'}]|join('/', attribute='n') }} {{ 'abc'|join('-') }})j"),
      R"j(a, b 12 x/y a-b-c)j");
  EXPECT_EQ(
      render(
          R"j({{ users|selectattr('active')|map(attribute='name')|list }} {{ users|rejectattr('active')|map(attribute='name')|join }} {{ users|selectattr('age', 'gt', 30)|map(attribute='name')|list }} {{ users|selectattr('name', 'equalto', 'b')|list|length }})j",
          R"j({"users": [{"name": "a", "active": true, "age": 20}, {"name": "b", "active": false, "age": 40}, {"name": "c", "active": true, "age": 50}]})j"),
      R"j(['a', 'c'] b ['b', 'c'] 1)j");
  EXPECT_EQ(
      render(
          R"j({{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }} {{ ['a', 'B']|map('upper')|list }} {{ [1, 2]|map('string')|join('+') }})j"),
      R"j([1, 3] [1, 3] [1, 'a'] ['A', 'B'] 1+2)j");
  EXPECT_EQ(
      render(
          R"j({{ users|sort(attribute='age', reverse=true)|map(attribute='name')|join }} {{ users|map(attribute='missing', default='?')|join }} {{ users|sum(attribute='age') }} {{ [1, 2.5]|sum }} {{ users|max(attribute='age') }} {{ [3, 1, 2]|min }})j",
          R"j({"users": [{"name": "a", "age": 20}, {"name": "b", "age": 40}, {"name": "c", "age": 30}]})j"),
      R"j(bca ??? 90 3.5 {'name': 'b', 'age': 40} 1)j");
  EXPECT_EQ(
      render(
          R"j({{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1f'|int(0, 16) }} {{ '1e3'|float }} {{ 'x'|float }} {{ 2|float }} {{ ' 12 '|int }} {{ none|int }} {{ true|int }})j"),
      R"j(42 4 0 7 3 31 1000.0 0.0 2.0 12 0 1)j");
  EXPECT_EQ(
      render(
          R"j({{ 'a%sb%d'|format('X', 3) }} {{ '%s and %s' % ('x', 1) }} {{ '%.2f' % 3.14159 }} {{ '{} {}!'.format('hi', 1) }} {{ '{0}{name}{0!r}'.format('q', name='n') }})j"),
      R"j(aXb3 x and 1 3.14 hi 1! qn'q')j");
  EXPECT_EQ(
      render(
          R"j({{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'aXbX'.replace('X', '-') }} {{ 'aXbX'.replace('X', '-', 1) }} {{ 'abcab'.count('ab') }} {{ '-'.join(['a', 'b']) }} {{ 'Hello World'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.capitalize() }} {{ 'hello'.upper() }})j"),
      R"j(True True 2 5 a-b- a-bX 2 a-b hello world Hello World Hello HELLO)j");
  EXPECT_EQ(
      render(
          R"j({{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ '  '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ 'a\nb\r\nc'.splitlines() }} {{ 'prefix-x'.removeprefix('prefix-') }})j"),
      R"j(True True True True True ['a', 'b', 'c'] x)j");
  EXPECT_EQ(
      render(
          R"j({{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d['a'] }} {{ d.a }} {{ d.b.c }})j",
          R"j({"d": {"a": 1, "b": {"c": [1, 2]}}})j"),
      R"j(1 None 5 ['a', 'b'] [1, {'c': [1, 2]}] [('a', 1), ('b', {'c': [1, 2]})] 1 1 [1, 2])j");
  EXPECT_EQ(
      render(
          R"j({{ d.items is callable }}|{{ d['items'] is callable }}|{{ d.missing }}|{{ d['missing'] }}|{{ l.append }}|{{ l[10] }}|{{ none.x }}|{{ 1.x }})j",
          R"j({"d": {"a": 1}, "l": [1]})j"),
      R"j(True|True||||||)j");
  EXPECT_EQ(
      render(
          R"j({{ 'a b  c'|wordcount }} {{ 'x'|string }}{{ 1|string }} {{ '<a href="x">&\''|e }} {{ [1]|safe }} {{ 'abc'|replace('b', 'B') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'ab'|replace('', '-') }})j"),
      R"j(3 x1 &lt;a href=&#34;x&#34;&gt;&amp;&#39; [1] aBc bba -a-b-)j");
  EXPECT_EQ(
      render(
          R"j({{ {'b': 1, 'A': 2, 'c': 0}|dictsort }} {{ {'b': 1, 'A': 2, 'c': 0}|dictsort(by='value') }} {{ {'b': 1, 'A': 2}|dictsort(true) }} {{ {'b': 1, 'A': 2}|dictsort(reverse=true) }})j"),
      R"j([('A', 2), ('b', 1), ('c', 0)] [('c', 0), ('b', 1), ('A', 2)] [('A', 2), ('b', 1)] [('b', 1), ('A', 2)])j");
  EXPECT_EQ(
      render(
          R"j({{ 10 is divisibleby 5 }} {{ 3 is odd }} {{ 4 is even }} {{ 'a' is in 'abc' }} {{ 2 is in [1, 2] }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is ge 2 }} {{ none is sameas none }} {{ range is callable }} {{ 'upper' is filter }} {{ 'odd' is test }})j"),
      R"j(True True True True True True True True True True True True True True True)j");
  EXPECT_EQ(
      render(
          R"j({{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }} {{ range(0)|list }})j"),
      R"j([0, 1, 2] [1, 3, 5] [5, 3, 1] {'a': 1, 'b': 'x'} [])j");
  EXPECT_EQ(
      render(
          R"j({{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %B %Y') }} {{ strftime_now('%A %b %j') }})j"),
      R"j(2025-08-05 09:30:00 05 August 2025 Tuesday Aug 217)j");
  EXPECT_EQ(
      render(
          R"j({% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}|{% filter upper %}hello {{ 'x' }}{% endfilter %}|{% print 'p' %})j"),
      R"j(3|HELLO X|p)j");
  EXPECT_EQ(
      render(
          R"j({%- for m in messages -%}
    {%- if m.role == 'user' %}
U: {{ m.content }}
    {%- elif m.role == 'assistant' %}
A: {{ m.content }}
    {%- else %}
{{ raise_exception('bad role ' + m.role) }}
    {%- endif %}
{%- endfor %})j",
          R"j({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})j"),
      R"j(U: hiA: yo)j");
  EXPECT_ERROR(
      R"j({% for m in messages %}{{ raise_exception('bad role ' + m.role) }}{% endfor %})j",
      R"j({"messages": [{"role": "tool", "content": "hi"}]})j", "bad role tool");  // TemplateError
  EXPECT_ERROR(R"j({{ x.y }})j", R"j({})j", "'x' is undefined");                   // UndefinedError
  EXPECT_ERROR(R"j({{ 'a' + x }})j", R"j({})j", "'x' is undefined");               // UndefinedError
  EXPECT_ERROR(R"j({{ [].append(1) }})j", R"j({})j",
               "access to attribute 'append' of 'list' object is unsafe.");  // SecurityError
  EXPECT_ERROR(R"j({{ 1 < 'a' }})j", R"j({})j",
               "'<' not supported between instances of 'int' and 'str'");  // TypeError
  EXPECT_ERROR(R"j({{ 1 / 0 }})j", R"j({})j", "division by zero");         // ZeroDivisionError
  EXPECT_ERROR(R"j({{ -'a' }})j", R"j({})j", "bad operand type for unary -: 'str'");  // TypeError
  EXPECT_ERROR(R"j({{ 'a' + 1 }})j", R"j({})j",
               "can only concatenate str (not \"int\") to str");  // TypeError
  EXPECT_ERROR(R"j({{ 1 + 'a' }})j", R"j({})j",
               "unsupported operand type(s) for +: 'int' and 'str'");  // TypeError
  EXPECT_ERROR(R"j({{ 'a' in 1 }})j", R"j({})j",
               "argument of type 'int' is not iterable");  // TypeError
  EXPECT_ERROR(R"j({% set n.x = 1 %})j", R"j({"n": {"x": 1}})j",
               "cannot assign attribute on non-namespace object");  // TemplateRuntimeError
  EXPECT_ERROR(R"j({{ m() }})j", R"j({})j", "'m' is undefined");    // UndefinedError
  EXPECT_ERROR(R"j({% for a, b in [[1, 2, 3]] %}{% endfor %})j", R"j({})j",
               "too many values to unpack (expected 2)");  // ValueError
  EXPECT_ERROR(R"j({% for x in 5 %}{% endfor %})j", R"j({})j",
               "'int' object is not iterable");  // TypeError
  EXPECT_ERROR(R"j({{ none|tojson }} {{ x|tojson }})j", R"j({})j",
               "Object of type Undefined is not JSON serializable");  // TypeError
  EXPECT_EQ(
      render(
          R"j({{ {'a': 1}|first }} {{ [[1, 2], [3]]|first|last }} {{ ([1, 2] + [3])|length }} {{ (1, 2) + (3,) }} {{ 'x' * 0 }}|)j"),
      R"j(a 2 3 (1, 2, 3) |)j");
  EXPECT_EQ(
      render(
          R"j({% if a is defined and a is not none and a|length > 0 %}yes{% else %}no{% endif %})j",
          R"j({"a": [1]})j"),
      R"j(yes)j");
  EXPECT_EQ(render(R"j({%- set tools = none -%}
{{- 'T' if tools else 'F' -}}{{ tools is none }})j"),
            R"j(FTrue)j");
  EXPECT_EQ(render(R"j(   {%+ if true %}keep{% endif +%}   
next)j"),
            R"j(   keep   
next)j");
  EXPECT_EQ(render(R"j({% if true %}
line
{% endif %}
{# comment #}
{%- if true %}   
  x
{%- endif %}
  {% if true %}y{% endif %})j"),
            R"j(line
   
  xy)j");
  EXPECT_EQ(render(R"j({{ 'a' }}  {% if true %}b{% endif %}
  {#- c -#}
  {{ 'd' }})j"),
            R"j(a  bd)j");
  EXPECT_EQ(
      render(
          R"j({{ messages[0]['content'] | trim }}{{ messages[-1].content }}{{ messages|length - 1 }})j",
          R"j({"messages": [{"role": "user", "content": "  hi  "}, {"role": "user", "content": "last"}]})j"),
      R"j(hilast1)j");
  EXPECT_EQ(
      render(R"j({% for message in messages[::-1] %}{{ loop.index0 }}{{ message }}{% endfor %})j",
             R"j({"messages": ["a", "b", "c"]})j"),
      R"j(0c1b2a)j");
  EXPECT_EQ(render(R"j({{ '\u00e9'|length }} {{ "tab\there" }} {{ 'q\'q' }})j"),
            R"j(1 tab	here q'q)j");
  EXPECT_ERROR(R"j({{ 7 % 0 }})j", R"j({})j", "integer modulo by zero");  // ZeroDivisionError
  EXPECT_ERROR(R"j({{ 7 // 0 }})j", R"j({})j",
               "integer division or modulo by zero");                       // ZeroDivisionError
  EXPECT_ERROR(R"j({{ 7.0 / 0 }})j", R"j({})j", "float division by zero");  // ZeroDivisionError
  EXPECT_EQ(
      render(
          R"j({{ '0b101'|int(0, 2) }} {{ '0o17'|int(0, 8) }} {{ 'ff'|int(0, 16) }} {{ '1_000'|int }} {{ '-5'|int }}====
{% for i in [1, 2] %}{% if i == 1 %}{% break %}{% endif %}{% else %}E{% endfor %}|{% for i in [1, 2] %}{% continue %}{% else %}E{% endfor %}|{% for i in [1, 2] %}x{% if i == 2 %}{% break %}{% endif %}{% else %}E{% endfor %})j"),
      R"j(5 15 255 1000 -5====
E|E|xx)j");
  EXPECT_ERROR(R"j({{ none|indent }})j", R"j({})j",
               "unsupported operand type(s) for +=: 'NoneType' and 'str'");    // TypeError
  EXPECT_ERROR(R"j({{ [1] in {} }})j", R"j({})j", "unhashable type: 'list'");  // TypeError
  EXPECT_EQ(
      render(
          R"j({{ 'abc' % [1] }} {{ 'abc' % {'a': 1} }} {{ range(2) }} {{ range(1, 5, 2) }} {{ range(3)|list }})j"),
      R"j(abc abc range(0, 2) range(1, 5, 2) [0, 1, 2])j");
  EXPECT_ERROR(R"j({{ 1 is callable 2 }})j", R"j({})j",
               "callable() takes exactly one argument (2 given)");  // TypeError
  EXPECT_EQ(
      render(
          R"j({% set s = 'str' %}{% set y %}{% set s = 'inner' %}{{ s }}{% endset %}{{ y }}{{ s }}|{% for i in range(3) %}{% set y %}{% if i == 1 %}{% continue %}{% endif %}<{{ i }}>{% endset %}{{ y }}{% endfor %}|{{ [[1, 2]][0][:1] }}|{{ 'abc' % undef }})j"),
      R"j(innerstr|<0><2>|[1]|abc)j");
  EXPECT_EQ(
      render(
          R"j({{ 0.1 is odd }} {{ 0.5 is even }} {{ 3.0 is odd }} {{ 4 is even }} {{ true is odd }}
)j"),
      R"j(False False True True True)j");
}

TEST(ChatTemplate, ParseErrorsNameSourceLineAndConstruct) {
  auto err = [](std::string_view tmpl) {
    auto t = ChatTemplate::parse(tmpl, "cfg.json chat_template");
    return t ? std::string("parsed") : t.error().message;
  };
  EXPECT_EQ(err("a\n{{ x | wordwrap }}"), "cfg.json chat_template:2: unknown filter 'wordwrap'");
  EXPECT_EQ(err("{% if x is wobbly %}{% endif %}"),
            "cfg.json chat_template:1: unknown test 'wobbly'");
  EXPECT_EQ(err("\n\n{% include 'x' %}"),
            "cfg.json chat_template:3: the 'include' tag is not supported");
  EXPECT_EQ(err("{% extends 'x' %}"),
            "cfg.json chat_template:1: the 'extends' tag is not supported");
  EXPECT_EQ(err("{% frobnicate %}"),
            "cfg.json chat_template:1: Encountered unknown tag 'frobnicate'");
  EXPECT_EQ(err("{% for x in y recursive %}{% endfor %}"),
            "cfg.json chat_template:1: recursive for loops are not supported");
  EXPECT_EQ(
      err("{% if x %}\nno end"),
      "cfg.json chat_template:2: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(err("{{ 'abc }}"), "cfg.json chat_template:1: unterminated string literal");
  EXPECT_EQ(err("{{ x $ y }}"), "cfg.json chat_template:1: unexpected char '$'");
  EXPECT_EQ(err("{{ (1 }}"), "cfg.json chat_template:1: unexpected '}', expected ')'");
  EXPECT_EQ(err("{{ (1"), "cfg.json chat_template:1: unexpected end of template, expected '}}'");
  EXPECT_EQ(err("{# never closed"), "cfg.json chat_template:1: Missing end of comment tag");
  EXPECT_EQ(err("{% break %}"), "cfg.json chat_template:1: 'break' outside of a loop");
  EXPECT_EQ(err("{{ f(*args) }}"),
            "cfg.json chat_template:1: *args and **kwargs in calls are not supported");
  EXPECT_EQ(err("{% set x | upper %}a{% endset %}"),
            "cfg.json chat_template:1: filters on a block set ({% set x | f %}) are not supported");
  EXPECT_EQ(err("{{ 99999999999999999999 }}"),
            "cfg.json chat_template:1: integer literal '99999999999999999999' is too large");
  EXPECT_EQ(err("{{ }}"),
            "cfg.json chat_template:1: expected an expression, got 'end of print statement'");
}

TEST(ChatTemplate, RenderErrorsNameSourceAndLine) {
  auto t = ChatTemplate::parse("line 1\n{{ raise_exception('stop: ' ~ why) }}", "t.jinja");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto out = t->render(json::object{{"why", "bad input"}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "t.jinja:2: stop: bad input");

  auto u =
      ChatTemplate::parse("{% for m in messages %}\n\n{{ m.content.strip() }}{% endfor %}", "u");
  ASSERT_TRUE(u.ok());
  auto bad = u->render(json::object{{"messages", json::array{json::object{{"role", "user"}}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "u:3: 'dict object' has no attribute 'content'");
}

TEST(ChatTemplate, StrftimeNowDefaultsToTheCurrentTime) {
  auto t = ChatTemplate::parse("{{ strftime_now('%Y') }}", "t");
  ASSERT_TRUE(t.ok());
  auto out = t->render({});
  ASSERT_TRUE(out.ok());
  char year[8];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(year, sizeof year, "%Y", &tm);
  EXPECT_EQ(*out, year);
}

TEST(ChatTemplate, RunawayTemplatesStopWithAnError) {
  // Deep recursion, huge loops, huge output and deeply nested expressions are errors, not
  // crashes or hangs.
  EXPECT_ERROR("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "",
               "maximum recursion depth exceeded");
  // The loop limit: its default is 10^7 (and the message says so); the limit is tested at 10^5,
  // the same check, so that the sanitizer pass does not spend a minute on 10^7 empty iterations.
  EXPECT_EQ(RenderOptions().max_iterations, 10'000'000);
  {
    auto t = ChatTemplate::parse(
        "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}",
        "test");
    ASSERT_TRUE(t.ok());
    RenderOptions options;
    options.now = kNow;
    options.max_iterations = 100'000;
    auto out = t->render({}, options);
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.error().message.find("test:1: more than 100000 loop iterations"),
              std::string::npos)
        << out.error().message;
    EXPECT_TRUE(ChatTemplate::parse("{% for i in range(300) %}{% for j in range(300) %}"
                                    "{% endfor %}{% endfor %}ok",
                                    "test")
                    ->render({}, options)
                    .ok());  // 90,300 iterations: under the limit
  }
  EXPECT_ERROR("{{ range(100000000)|length }}", "", "range() made more than 10^6 items");
  EXPECT_ERROR("{{ ([1, 2] * 1000000)|length }}", "", "list too long");
  EXPECT_ERROR("{{ 'x' * 100000000 }}", "", "string longer than 64 MiB");
  EXPECT_ERROR("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", "",
               "output longer than 64 MiB");
  EXPECT_ERROR("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", "",
               "nested too deeply");
  EXPECT_ERROR("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}", "",
               "nested too deeply");
  EXPECT_ERROR("{{ " + std::string(3000, '-') + "1 }}", "", "nested too deeply");
  std::string ifs;
  for (int k = 0; k < 500; ++k) ifs += "{% if true %}";
  EXPECT_ERROR(ifs, "", "nested too deeply");
}

TEST(ChatTemplate, ArbitraryInputNeverCrashes) {
  // Random snippets of template syntax: parse and render must return (ok or Error).
  const std::vector<std::string> pieces = {
      "{{",     "}}", "{%",  "%}",       "{#",    "#}",       "-",     "+",
      " ",      "\n", "if",  "for",      "in",    "endfor",   "endif", "else",
      "set",    "x",  "=",   "messages", "[",     "]",        "(",     ")",
      "'",      "\"", "|",   "length",   "loop",  ".",        ",",     ":",
      "1",      "0",  "raw", "endraw",   "macro", "endmacro", "is",    "defined",
      "not",    "~",  "*",   "/",        "%",     "{",        "}",     "namespace",
      "tojson", "é",  "\\",  "break",    "range", "99",       "and"};
  std::mt19937 rng(1234);
  const json::object context{
      {"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}, {"x", 1}};
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int n = int(rng() % 30);
    for (int k = 0; k < n; ++k) text += pieces[rng() % pieces.size()];
    auto t = ChatTemplate::parse(text, "fuzz");
    if (!t) {
      EXPECT_FALSE(t.error().message.empty());
      continue;
    }
    auto out = t->render(context);
    if (!out) {
      EXPECT_EQ(out.error().message.rfind("fuzz:", 0), 0u) << out.error().message;
    }
  }
}

TEST(ChatTemplate, CopiesShareTheParsedTemplateAcrossThreads) {
  auto t = ChatTemplate::parse(
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{{ strftime_now('%Y') }}",
      "t");
  ASSERT_TRUE(t.ok());
  const ChatTemplate copy = *t;
  EXPECT_EQ(copy.source(), "t");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      const json::object ctx{{"messages", json::array{json::object{
                                              {"role", "user"}, {"content", std::to_string(k)}}}}};
      RenderOptions o;
      o.now = kNow;
      for (int r = 0; r < 200; ++r) {
        auto out = copy.render(ctx, o);
        if (out.ok() && *out == "<user>" + std::to_string(k) + "2025") ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 800);
}

void write(const fs::path& p, std::string_view text) {
  std::ofstream(p) << text;
}

TEST(TokenizerConfig, ReadsTokensFlagsAndTemplate) {
  TempDir dir("chat-template");
  const fs::path cfg = dir.path() / "tokenizer_config.json";
  write(cfg, R"({"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
                 "eos_token": "</s>", "add_bos_token": true, "chat_template": "{{ bos_token }}hi"})");
  auto c = load_tokenizer_config(cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->source, cfg.string());
  EXPECT_EQ(c->bos_token, "<s>");
  EXPECT_EQ(c->eos_token, "</s>");
  EXPECT_TRUE(c->add_bos_token);
  EXPECT_FALSE(c->add_eos_token);
  EXPECT_EQ(c->chat_template, "{{ bos_token }}hi");
  EXPECT_EQ(c->chat_template_source, cfg.string() + " chat_template");
}

TEST(TokenizerConfig, NamedTemplatesTakeDefaultAndJinjaFileIsTheFallback) {
  TempDir dir("chat-template");
  const fs::path cfg = dir.path() / "tokenizer_config.json";
  write(
      cfg,
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  auto c = load_tokenizer_config(cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->chat_template, "D");
  EXPECT_FALSE(c->bos_token.has_value());

  write(cfg, R"({"eos_token": null})");
  c = load_tokenizer_config(cfg);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->chat_template.has_value());
  write(dir.path() / "chat_template.jinja", "{{ 'J' }}");
  c = load_tokenizer_config(cfg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->chat_template, "{{ 'J' }}");
  EXPECT_EQ(c->chat_template_source, (dir.path() / "chat_template.jinja").string());
}

TEST(TokenizerConfig, ErrorsNameFileAndField) {
  TempDir dir("chat-template");
  const fs::path cfg = dir.path() / "tokenizer_config.json";
  const std::string f = cfg.string();
  auto err = [&](std::string_view text) {
    write(cfg, text);
    auto c = load_tokenizer_config(cfg);
    return c ? std::string("ok") : c.error().message;
  };
  EXPECT_EQ(
      err(R"({"bos_token": 5})"),
      f + ": bos_token is neither a string nor an AddedToken object with a string \"content\"");
  EXPECT_EQ(err(R"({"add_eos_token": "yes"})"), f + ": add_eos_token is not a boolean");
  EXPECT_EQ(err(R"({"chat_template": 3})"),
            f + ": chat_template is neither a string nor a list of named templates");
  EXPECT_EQ(err(R"({"chat_template": [{"name": "x", "template": "y"}]})"),
            f + ": chat_template: a list of named templates without one named \"default\"");
  EXPECT_EQ(err(R"({"chat_template": [1]})"),
            f + ": chat_template: a list entry is not {\"name\": string, \"template\": string}");
  EXPECT_EQ(err("[1]"), f + ": not a JSON object");
  EXPECT_EQ(
      err("{"), f + ": not valid JSON: " + [] {
        boost::system::error_code ec;
        json::parse("{", ec);
        return ec.message();
      }());
  auto missing = load_tokenizer_config(dir.path() / "nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("nope.json"), std::string::npos);
}

TEST(TokenizerConfig, ChatContextIsWhatApplyChatTemplatePasses) {
  TokenizerConfig config;
  config.bos_token = "<s>";
  const std::vector<ChatMessage> messages = {{"system", "be brief"}, {"user", "hi"}};
  const json::object ctx =
      chat_context(messages, config, true, json::object{{"enable_thinking", false}});
  EXPECT_EQ(
      json::serialize(ctx),
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],)"
      R"("tools":null,"documents":null,"add_generation_prompt":true,"bos_token":"<s>","enable_thinking":false})");
  auto t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
      "{% if add_generation_prompt %}>{% endif %}{{ eos_token is defined }}{{ enable_thinking }}",
      "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->render(ctx), "<s>[system]be brief[user]hi>FalseFalse");
  // `extra` wins over the defaults.
  const json::object over = chat_context(messages, config, false, json::object{{"bos_token", "B"}});
  EXPECT_EQ(over.at("bos_token").as_string(), "B");
}

}  // namespace
}  // namespace ib::tokenizer
