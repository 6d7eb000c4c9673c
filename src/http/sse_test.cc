#include "http/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ib::http {
namespace {

struct Collected {
  std::vector<std::string> data;
  std::vector<std::string> unknown;
};

Collected feed_in_pieces(const std::string& stream, const std::vector<size_t>& cuts,
                         bool finish = false) {
  SseParser p;
  Collected c;
  auto on = [&](const SseEvent& e) {
    if (!e.data.empty() || e.unknown_field.empty()) c.data.emplace_back(e.data);
    if (!e.unknown_field.empty()) {
      c.unknown.push_back(std::string(e.unknown_field) + "=" + std::string(e.unknown_value));
    }
  };
  size_t prev = 0;
  for (size_t cut : cuts) {
    p.feed(std::string_view(stream).substr(prev, cut - prev), on);
    prev = cut;
  }
  p.feed(std::string_view(stream).substr(prev), on);
  if (finish) p.finish(on);
  return c;
}

const std::string kStream =
    "data: {\"a\":1}\n\n"
    ": keep-alive comment\n\n"
    "data:{\"b\":2}\n\n"
    "data: {\"c\":3} \n\n"  // TensorRT-LLM's space before the blank line
    "data: [DONE]\n\n";

const std::vector<std::string> kExpected = {"{\"a\":1}", "{\"b\":2}", "{\"c\":3} ", "[DONE]"};

TEST(SseParser, WholeStreamInOneRead) {
  auto c = feed_in_pieces(kStream, {});
  EXPECT_EQ(c.data, kExpected);
}

TEST(SseParser, SplitAtEveryBytePosition) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    auto c = feed_in_pieces(kStream, {cut});
    EXPECT_EQ(c.data, kExpected) << "cut at " << cut;
  }
}

TEST(SseParser, EveryByteSeparately) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(feed_in_pieces(kStream, cuts).data, kExpected);
}

TEST(SseParser, SplitAtEveryPairOfPositions) {
  for (size_t a = 0; a <= kStream.size(); a += 3) {
    for (size_t b = a; b <= kStream.size(); b += 5) {
      EXPECT_EQ(feed_in_pieces(kStream, {a, b}).data, kExpected) << a << "," << b;
    }
  }
}

TEST(SseParser, CrLfAndCrLineEndingsSplitAnywhere) {
  const std::string s = "data: x\r\n\r\ndata: y\r\rdata: z\n\n";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    auto c = feed_in_pieces(s, {cut});
    EXPECT_EQ(c.data, (std::vector<std::string>{"x", "y", "z"})) << "cut at " << cut;
  }
}

TEST(SseParser, MultiLineDataIsJoinedWithNewline) {
  auto c = feed_in_pieces("data: one\ndata: two\n\n", {});
  EXPECT_EQ(c.data, (std::vector<std::string>{"one\ntwo"}));
}

TEST(SseParser, OnlyOneLeadingSpaceIsStripped) {
  auto c = feed_in_pieces("data:  two spaces\n\n", {});
  EXPECT_EQ(c.data, (std::vector<std::string>{" two spaces"}));
}

TEST(SseParser, EventWithoutDataIsNotDispatched) {
  auto c = feed_in_pieces("event: ping\n\nid: 3\n\n: comment\n\n", {});
  EXPECT_TRUE(c.data.empty());
}

TEST(SseParser, EventTypeIsReported) {
  SseParser p;
  std::string type;
  p.feed("event: message\ndata: x\n\n", [&](const SseEvent& e) { type = e.type; });
  EXPECT_EQ(type, "message");
}

TEST(SseParser, UnknownFieldIsSurfaced) {
  // Older llama.cpp builds sent mid-stream errors as `error: {...}` lines.
  auto c = feed_in_pieces("data: a\n\nerror: {\"code\":500}\n\n", {4, 17});
  EXPECT_EQ(c.data, (std::vector<std::string>{"a"}));
  EXPECT_EQ(c.unknown, (std::vector<std::string>{"error={\"code\":500}"}));
}

TEST(SseParser, StreamCutMidEventLeavesPartialState) {
  SseParser p;
  int events = 0;
  p.feed("data: {\"a\":1}\n\ndata: {\"b\"", [&](const SseEvent&) { ++events; });
  EXPECT_EQ(events, 1);
  EXPECT_TRUE(p.has_partial());
}

TEST(SseParser, CompleteStreamHasNoPartialState) {
  SseParser p;
  p.feed(kStream, [](const SseEvent&) {});
  EXPECT_FALSE(p.has_partial());
}

TEST(SseParser, FinishDispatchesAnEventMissingItsBlankLine) {
  auto c = feed_in_pieces("data: a\n\ndata: [DONE]", {}, /*finish=*/true);
  EXPECT_EQ(c.data, (std::vector<std::string>{"a", "[DONE]"}));
}

TEST(SseParser, ResetForgetsPartialInput) {
  SseParser p;
  p.feed("data: half", [](const SseEvent&) {});
  p.reset();
  std::vector<std::string> got;
  p.feed("data: b\n\n", [&](const SseEvent& e) { got.emplace_back(e.data); });
  EXPECT_EQ(got, (std::vector<std::string>{"b"}));
}

// A server that never ends its event (one huge line, or data lines with no blank line) cannot
// grow the client without bound (issue 30): the parser stops at its limit and frees what it held.
TEST(SseParser, AnEventPastTheLimitOverflowsInsteadOfGrowing) {
  SseParser p;
  p.set_max_event_bytes(1024);
  int events = 0;
  auto on = [&](const SseEvent&) { ++events; };
  p.feed("data: ok\n\n", on);
  EXPECT_EQ(events, 1);
  const std::string chunk(100, 'x');
  p.feed("data: ", on);
  for (int i = 0; i < 20 && !p.overflowed(); ++i) p.feed(chunk, on);  // no newline ever
  EXPECT_TRUE(p.overflowed());
  p.feed("\n\ndata: later\n\n", on);  // nothing more is parsed
  EXPECT_EQ(events, 1);
  EXPECT_FALSE(p.has_partial());
  p.reset();
  p.feed("data: again\n\n", on);
  EXPECT_EQ(events, 2);
  // Many data lines of one event add up the same way.
  for (int i = 0; i < 30 && !p.overflowed(); ++i) p.feed("data: " + chunk + "\n", on);
  EXPECT_TRUE(p.overflowed());
  EXPECT_EQ(events, 2);
  EXPECT_EQ(SseParser().max_event_bytes(), SseParser::kDefaultMaxEventBytes);
}

}  // namespace
}  // namespace ib::http
