// Server-sent events arrive in arbitrary pieces; the events must not care.
#include "bench/loadgen/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tandem::bench {
namespace {

std::vector<std::string> parseInPieces(const std::string& stream, const std::vector<size_t>& cuts, bool finish) {
  SseParser p;
  std::vector<std::string> out;
  auto cb = [&](std::string_view d) { out.emplace_back(d); };
  size_t prev = 0;
  for (size_t c : cuts) {
    p.feed(std::string_view(stream).substr(prev, c - prev), cb);
    prev = c;
  }
  p.feed(std::string_view(stream).substr(prev), cb);
  if (finish) p.finish(cb);
  return out;
}

const std::string kStream =
    "data: {\"choices\":[{\"text\":\"Once\"}]}\n\n"
    ": keep-alive comment\n\n"
    "event: message\nid: 7\ndata: {\"choices\":[{\"text\":\" upon\"}]}\n\n"
    "data:no-space\r\n\r\n"
    "data: line one\ndata: line two\n\n"
    "data: [DONE]\n\n";
const std::vector<std::string> kEvents = {"{\"choices\":[{\"text\":\"Once\"}]}", "{\"choices\":[{\"text\":\" upon\"}]}",
                                          "no-space", "line one\nline two", "[DONE]"};

TEST(SseParserTest, ReadsEventsInOnePiece) { EXPECT_EQ(parseInPieces(kStream, {}, false), kEvents); }

TEST(SseParserTest, ReadsTheSameEventsSplitAtEveryByte) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    EXPECT_EQ(parseInPieces(kStream, {cut}, false), kEvents) << "cut at " << cut;
  }
}

TEST(SseParserTest, ReadsTheSameEventsOneByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(parseInPieces(kStream, cuts, false), kEvents);
}

TEST(SseParserTest, CrLfSplitBetweenItsTwoBytesEndsOneLine) {
  std::string s = "data: a\r\n\r\ndata: b\r\n\r\n";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(parseInPieces(s, {cut}, false), (std::vector<std::string>{"a", "b"})) << cut;
  }
}

TEST(SseParserTest, FinishHandsOutAnUnterminatedEvent) {
  EXPECT_EQ(parseInPieces("data: last", {}, false), std::vector<std::string>{});
  EXPECT_EQ(parseInPieces("data: last", {}, true), std::vector<std::string>{"last"});
  EXPECT_EQ(parseInPieces("data: last\n", {}, true), std::vector<std::string>{"last"});
}

TEST(SseParserTest, EventsWithoutDataAreNotHandedOut) {
  EXPECT_EQ(parseInPieces("event: ping\n\n:comment\n\n", {}, true), std::vector<std::string>{});
}

}  // namespace
}  // namespace tandem::bench
