#include "common/http/response_encoder.h"

#include <string>

#include "gtest/gtest.h"
#include "router/openai/api_error.h"

namespace tandem::http {
namespace {

using openai::ApiError;
using openai::errorBody;
using openai::errorFor;

TEST(ResponseEncoderTest, FramesChunksWithHexSizes) {
  EXPECT_EQ(encodeChunk("a"), "1\r\na\r\n");
  EXPECT_EQ(encodeChunk(std::string(255, 'x')), "ff\r\n" + std::string(255, 'x') + "\r\n");
  EXPECT_EQ(encodeChunk(std::string(4096, 'y')).substr(0, 6), "1000\r\n");
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

TEST(ResponseEncoderTest, HeadOwnsFramingAndDropsInjectedLines) {
  std::string head = encodeResponseHead(
      200,
      {{"Content-Type", "text/plain"},
       {"Content-Length", "999"},
       {"transfer-encoding", "gzip"},
       {"X-Evil", "a\r\nSet-Cookie: x=1"},
       {"Connection", "upgrade"}},
      BodyFraming::kContentLength, 5, ConnectionHeader::kOmit);
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\nServer: tandem\r\nDate: ", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("999"), std::string::npos);
  EXPECT_EQ(head.find("gzip"), std::string::npos);
  EXPECT_EQ(head.find("Set-Cookie"), std::string::npos);
  EXPECT_EQ(head.find("upgrade"), std::string::npos);
}

TEST(ResponseEncoderTest, StreamHeadsSayHowTheBodyEnds) {
  std::string chunked = encodeResponseHead(200, {}, BodyFraming::kChunked, 0, ConnectionHeader::kOmit);
  EXPECT_NE(chunked.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_EQ(chunked.find("Content-Length"), std::string::npos);
  std::string until_close = encodeResponseHead(200, {}, BodyFraming::kUntilClose, 0, ConnectionHeader::kClose);
  EXPECT_EQ(until_close.find("Transfer-Encoding"), std::string::npos);
  EXPECT_NE(until_close.find("Connection: close\r\n"), std::string::npos);
  std::string keep_alive = encodeResponseHead(204, {}, BodyFraming::kNone, 0, ConnectionHeader::kKeepAlive);
  EXPECT_EQ(keep_alive.rfind("HTTP/1.1 204 No Content\r\n", 0), 0u);
  EXPECT_NE(keep_alive.find("Connection: keep-alive\r\n"), std::string::npos);
  EXPECT_EQ(keep_alive.find("Content-Length"), std::string::npos);
}

TEST(ResponseEncoderTest, ErrorResponseCarriesTheOpenAiBody) {
  std::string body = errorBody(errorFor(413, "too big"));
  std::string response = encodeErrorResponse(413, body);
  EXPECT_EQ(response.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u);
  EXPECT_NE(response.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(response.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos);
  EXPECT_EQ(response.substr(response.size() - body.size()), body);
}

TEST(ResponseEncoderTest, DatesAreImfFixdate) {
  EXPECT_EQ(httpDate(std::chrono::system_clock::from_time_t(784111777)), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(ResponseEncoderTest, OnlyInterimAndEmptyStatusesHaveNoBody) {
  EXPECT_TRUE(statusHasNoBody(100));
  EXPECT_TRUE(statusHasNoBody(204));
  EXPECT_TRUE(statusHasNoBody(304));
  EXPECT_FALSE(statusHasNoBody(200));
  EXPECT_FALSE(statusHasNoBody(500));
}

}  // namespace
}  // namespace tandem::http
