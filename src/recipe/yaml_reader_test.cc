#include "recipe/yaml_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ib::recipe {
namespace {

struct Parsed {
  bool ok = false;
  std::vector<Diagnostic> diagnostics;
  std::string text() const { return join_diagnostics(diagnostics); }
};

Parsed parse_yaml(const std::string& text, YamlLimits limits = {}) {
  Parsed p;
  YamlReader reader("t.yaml", &p.diagnostics, limits);
  p.ok = reader.parse(text).has_value();
  return p;
}

// The classic "billion laughs": nine levels of nine aliases each, 9^9 (387 million) leaves after
// expansion, in about 300 bytes.
std::string billion_laughs() {
  std::string doc = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char name = 'b'; name <= 'i'; ++name) {
    std::string line = std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 9; ++i) line += (i ? ", *" : "*") + prev;
    doc += line + "]\n";
    prev = std::string(1, name);
  }
  return doc;
}

TEST(YamlLimits, BillionLaughsIsRejectedAtTheAliasThatCrossesTheNodeLimit) {
  const std::string doc = billion_laughs();
  ASSERT_LT(doc.size(), 400u);
  auto p = parse_yaml(doc);
  EXPECT_FALSE(p.ok);
  ASSERT_EQ(p.diagnostics.size(), 1u) << p.text();
  const Diagnostic& d = p.diagnostics[0];
  EXPECT_EQ(d.kind, "yaml-limit");
  // a..e expand to at most 9^5 + ... nodes (< 1M); f's aliases cross it, on line 6.
  EXPECT_EQ(d.line, 7) << p.text();
  EXPECT_EQ(p.text().rfind("t.yaml:7:", 0), 0u) << p.text();
  EXPECT_NE(p.text().find("too many nodes after alias expansion (limit 1000000)"),
            std::string::npos)
      << p.text();
}

TEST(YamlLimits, NodeLimitCountsEveryExpandedNodeExactly) {
  // seq + 3 items; the alias repeats a 3-node sequence: 1 (map) + 2 keys + 4 + 4 = 11 nodes.
  const std::string doc = "a: &a [1, 2, 3]\nb: *a\n";
  YamlLimits at;
  at.max_nodes = 11;
  EXPECT_TRUE(parse_yaml(doc, at).ok) << parse_yaml(doc, at).text();
  YamlLimits below;
  below.max_nodes = 10;
  auto p = parse_yaml(doc, below);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.text().find("t.yaml:2:4: too many nodes after alias expansion (limit 10): each alias "
                          "counts every node of what it repeats"),
            std::string::npos)
      << p.text();
  // Without aliases the message does not blame them.
  below.max_nodes = 3;
  p = parse_yaml("[1, 2, 3]\n", below);
  EXPECT_NE((p.text() + "\n").find("too many nodes after alias expansion (limit 3)\n"),
            std::string::npos)
      << p.text();
}

TEST(YamlLimits, AliasCount) {
  YamlLimits limits;
  limits.max_aliases = 3;
  EXPECT_TRUE(parse_yaml("a: &a 1\nb: [*a, *a, *a]\n", limits).ok);
  auto p = parse_yaml("a: &a 1\nb: [*a, *a, *a, *a]\n", limits);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.text().find("t.yaml:2:17: more than 3 aliases (the limit)"), std::string::npos)
      << p.text();
}

TEST(YamlLimits, AnchorCount) {
  YamlLimits limits;
  limits.max_anchors = 2;
  EXPECT_TRUE(parse_yaml("[&a 1, &b 2]\n", limits).ok);
  auto p = parse_yaml("[&a 1, &b 2, &c [3]]\n", limits);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.text().rfind("t.yaml:1:", 0), 0u) << p.text();
  EXPECT_NE(p.text().find(": more than 2 anchors (the limit)"), std::string::npos) << p.text();
}

TEST(YamlLimits, ScalarTextAfterAliasExpansion) {
  YamlLimits limits;
  limits.max_scalar_bytes = 40;
  // "a", "b" and 10 bytes, then three more copies of the 10 bytes: 42 bytes.
  auto p = parse_yaml("a: &a xxxxxxxxxx\nb: [*a, *a, *a]\n", limits);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.text().find("t.yaml:2:13: more than 40 bytes of scalar text after alias expansion"),
            std::string::npos)
      << p.text();
  limits.max_scalar_bytes = 42;
  EXPECT_TRUE(parse_yaml("a: &a xxxxxxxxxx\nb: [*a, *a, *a]\n", limits).ok);
}

TEST(YamlLimits, DocumentSize) {
  YamlLimits limits;
  limits.max_bytes = 16;
  EXPECT_TRUE(parse_yaml("k: 0123456789ab\n", limits).ok);  // 16 bytes
  auto p = parse_yaml("k: 0123456789abc\n", limits);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.text(), "t.yaml: 17 bytes is more than the limit for a YAML document (16 bytes)");
  // The default: 16 MiB.
  p = parse_yaml("k: \"" + std::string((16 << 20) + 1, 'x') + "\"\n");
  EXPECT_NE(p.text().find("is more than the limit for a YAML document (16 MiB)"),
            std::string::npos);
  EXPECT_LT(p.text().size(), 200u);
}

TEST(YamlLimits, FlowNestingIsCaughtOnTheBytesBeforeYamlCppBuffersIt) {
  // 100 levels are allowed, 101 are not; 100000 '[' fail as fast as 101.
  EXPECT_TRUE(parse_yaml("k: " + std::string(99, '[') + std::string(99, ']') + "\n").ok);
  for (size_t n : {101, 100000}) {
    auto p = parse_yaml("k: " + std::string(n, '[') + std::string(n, ']') + "\n");
    EXPECT_FALSE(p.ok);
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].kind, "yaml-limit");
    EXPECT_EQ(p.text(),
              "t.yaml:1:104: flow collections ('[' or '{') nested more than 100 levels deep (the "
              "limit); a recipe needs only a few levels");
  }
  // After an anchor or a tag, and in mappings.
  auto p = parse_yaml("k: &a !!seq " + std::string(1000, '{') + "\n");
  EXPECT_NE(p.text().find("nested more than 100 levels deep"), std::string::npos) << p.text();
  EXPECT_EQ(p.text().find("bad file"), std::string::npos) << p.text();
}

TEST(YamlLimits, BlockNestingStopsYamlCppsRecursionAtTheLimit) {
  std::string deep = "k:\n";
  for (int i = 0; i < 100000; ++i) deep += "- ";
  deep += "x\n";
  auto p = parse_yaml(deep);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.text().find("t.yaml:2:"), std::string::npos) << p.text();
  EXPECT_NE(p.text().find("mappings and lists nested more than 100 levels deep (the limit)"),
            std::string::npos)
      << p.text();
  EXPECT_EQ(p.text().find("bad file"), std::string::npos) << p.text();
}

TEST(YamlLimits, NestingAfterAliasExpansion) {
  YamlLimits limits;
  limits.max_depth = 4;
  // a's list is 2 deep inside the top mapping (3); an alias to it one level further down is 4.
  EXPECT_TRUE(parse_yaml("a: &a [[x]]\nb: [*a]\n", limits).ok);
  auto p = parse_yaml("a: &a [[x]]\nb: [[*a]]\n", limits);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.text().find(
                "t.yaml:2:6: nesting deeper than 4 levels after alias expansion (the limit) at "
                "alias *a"),
            std::string::npos)
      << p.text();
}

TEST(YamlLimits, AnAliasInsideItsOwnAnchorIsRejected) {
  auto p = parse_yaml("k: &a [1, *a]\n");
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.text().find("t.yaml:1:11: alias *a refers to a node that contains it"),
            std::string::npos)
      << p.text();
  p = parse_yaml("k: &m {x: *m}\n");
  EXPECT_FALSE(p.ok);
}

TEST(YamlLimits, BracketsInTextAreNotNesting) {
  const std::string many(300, '[');
  // Quoted, in a comment, in a plain scalar, in a block scalar: none of these nest.
  EXPECT_TRUE(parse_yaml("a: \"" + many + "\"\nb: '" + many + "'\n").ok);
  EXPECT_TRUE(parse_yaml("a: 1  # " + many + "\n").ok);
  EXPECT_TRUE(parse_yaml("a: x" + many + "\n").ok);
  auto p = parse_yaml("a: |\n  " + many + "\n  " + many + "\n\n  more\nb: [1]\n");
  EXPECT_TRUE(p.ok) << p.text();
  p = parse_yaml("- >-\n    {{{{" + many + "\n- [x]\n");
  EXPECT_TRUE(p.ok) << p.text();
  // Real recipes (tests/data/inferencex) are covered by recipe_test's RealMasterConfigs test.
}

TEST(YamlMessages, SyntaxErrorsHaveNoEmptyPath) {
  auto p = parse_yaml("k:\n  a: [1, 2\n  b: c\n");
  EXPECT_FALSE(p.ok);
  ASSERT_EQ(p.diagnostics.size(), 1u);
  EXPECT_EQ(p.diagnostics[0].kind, "yaml-syntax");
  EXPECT_EQ(p.text().rfind("t.yaml:3:4: YAML syntax error: ", 0), 0u) << p.text();
  EXPECT_EQ(p.text().find(": :"), std::string::npos) << p.text();
}

TEST(YamlMessages, DiagnosticLeavesOutWhatIsUnknown) {
  EXPECT_EQ((Diagnostic{"f.yaml", 3, 4, "a.b", "bad", ""}).str(), "f.yaml:3:4: a.b: bad");
  EXPECT_EQ((Diagnostic{"f.yaml", 3, 4, "", "bad", ""}).str(), "f.yaml:3:4: bad");
  EXPECT_EQ((Diagnostic{"f.yaml", 0, 0, "", "bad", ""}).str(), "f.yaml: bad");
  EXPECT_EQ((Diagnostic{"", 0, 0, "", "bad", ""}).str(), "bad");
}

TEST(YamlMessages, HugeAndHostileValuesAreEscapedAndCut) {
  std::vector<Diagnostic> out;
  YamlReader reader("t.yaml", &out);
  // A long string where a number is expected: echoed cut, not whole.
  auto doc = reader.parse("k: \"" + std::string(1 << 20, 'x') + "\"\n");
  ASSERT_TRUE(doc);
  EXPECT_FALSE(reader.integer((*doc)["k"], "k", 1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_LT(out[0].str().size(), 300u) << out[0].str().substr(0, 400);
  EXPECT_NE(out[0].str().find("(1048576 bytes in all)"), std::string::npos);
  // A megabyte of digits types without recursing per character (std::regex would overflow the
  // stack): an int too large for int64.
  out.clear();
  doc = reader.parse("k: " + std::string(1 << 20, '1') + "\n");
  ASSERT_TRUE(doc);
  EXPECT_FALSE(reader.integer((*doc)["k"], "k", 1, 100));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].str().find("expected a positive integer at most 100, got 1111"),
            std::string::npos);
  EXPECT_LT(out[0].str().size(), 300u);
  // Control characters in keys and values: escaped, never raw.
  out.clear();
  doc = reader.parse("\"k\\e[2J\": \"v\\e[31m\\r\"\n");
  ASSERT_TRUE(doc);
  auto fields = reader.open_mapping(*doc, "");
  ASSERT_TRUE(fields);
  const std::string key = fields->values.begin()->first;
  EXPECT_EQ(key, "k\x1b[2J");
  EXPECT_FALSE(reader.integer(fields->values.begin()->second, field_path("", key), 1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].str(),
            "t.yaml:1:11: k\\x1b[2J: expected a positive integer, got \"v\\x1b[31m\\r\"");
}

TEST(YamlNumbers, RangesAndOverflow) {
  std::vector<Diagnostic> out;
  YamlReader reader("t.yaml", &out);
  auto doc = reader.parse(
      "a: 3000000000\nb: 99999999999999999999\nc: 0\nd: 1.0e+999\ne: .nan\nf: .inf\ng: 2.5\n"
      "h: 7\n");
  ASSERT_TRUE(doc);
  EXPECT_FALSE(reader.integer((*doc)["a"], "a", 1, 100000));
  EXPECT_FALSE(reader.integer((*doc)["b"], "b", 1));
  EXPECT_FALSE(reader.integer((*doc)["c"], "c", 1, 10));
  EXPECT_FALSE(reader.number((*doc)["d"], "d"));
  EXPECT_FALSE(reader.number((*doc)["e"], "e"));
  EXPECT_FALSE(reader.number((*doc)["f"], "f"));
  EXPECT_FALSE(reader.number((*doc)["g"], "g", 0, 1));
  EXPECT_EQ(reader.integer((*doc)["h"], "h", 1, 7), 7);
  EXPECT_EQ(reader.number((*doc)["g"], "g", 0, 2.5), 2.5);
  EXPECT_EQ(join_diagnostics(out),
            "t.yaml:1:4: a: expected a positive integer at most 100000, got 3000000000\n"
            "t.yaml:2:4: b: expected a positive integer, got 99999999999999999999\n"
            "t.yaml:3:4: c: expected a positive integer, got 0\n"
            "t.yaml:4:4: d: expected a number, got \"1.0e+999\"\n"
            "t.yaml:5:4: e: expected a number, got \".nan\"\n"
            "t.yaml:6:4: f: expected a number, got \".inf\"\n"
            "t.yaml:7:4: g: expected a number from 0 to 1, got 2.5");
  out.clear();
  doc = reader.parse("l: [1, 2, 3, 4]\n");
  EXPECT_FALSE(reader.integer_list((*doc)["l"], "l", 1, 10, 3));
  EXPECT_EQ(join_diagnostics(out), "t.yaml:1:4: l: a list of 4 values; the limit is 3");
}

TEST(YamlNumbers, ScalarTypingMatchesPyYaml) {
  std::vector<Diagnostic> out;
  YamlReader reader("t.yaml", &out);
  auto doc = reader.parse(
      "[1, -2, +3, 2_063_837, 0, 1.5, .5, 1., -1.5e+3, 1e5, 1.5e3, ., x1, '4', 1_0.2_5]\n");
  ASSERT_TRUE(doc);
  std::vector<ScalarKind> kinds;
  for (const auto& n : *doc) kinds.push_back(scalar_kind(n));
  using K = ScalarKind;
  EXPECT_EQ(kinds, (std::vector<K>{K::kInt, K::kInt, K::kInt, K::kInt, K::kInt, K::kFloat,
                                   K::kFloat, K::kFloat, K::kFloat, K::kString, K::kString,
                                   K::kString, K::kString, K::kString, K::kFloat}));
  EXPECT_EQ(to_json((*doc)[3]).as_int64(), 2063837);
  EXPECT_EQ(to_json((*doc)[14]).as_double(), 10.25);
}

}  // namespace
}  // namespace ib::recipe
