// The server's request parsing fed as a socket feeds it: bytes in pieces,
// the unconsumed rest offered again with what arrives next.
#include "common/http/request_parser.h"

#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "gtest/gtest.h"

namespace tandem::http {
namespace {

namespace bhttp = boost::beast::http;

// feeds `pieces` one after another as HttpConnection::processInput does;
// returns the parser's last error (none when the request completed).
boost::system::error_code feed(RequestParser& parser, const std::vector<std::string_view>& pieces) {
  boost::beast::flat_buffer input;
  boost::system::error_code ec;
  for (std::string_view piece : pieces) {
    auto buf = input.prepare(piece.size());
    std::copy(piece.begin(), piece.end(), static_cast<char*>(buf.data()));
    input.commit(piece.size());
    ec = {};
    input.consume(parseRequestBytes(parser, input.data(), ec));
    if (ec && ec != bhttp::error::need_more) return ec;
  }
  return ec;
}

TEST(RequestParserTest, ParsesAnEmptyChunkedBodyThatArrivesAByteAtATime) {
  // found by fuzz/http_request_fuzzer.cc: Boost 1.74 asserted (n >= 5) on
  // the "\r" after a first chunk "0\r\n" (boostorg/beast#2861); builds
  // without NDEBUG (the sanitizer passes) aborted.
  RequestParser parser;
  configureRequestParser(parser, HttpServerOptions{});
  boost::system::error_code ec = feed(
      parser, {"POST /c?x=1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", "\r", "\n"});
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_done());
  HttpRequest request = takeRequest(parser, "192.0.2.1:1");
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.target, "/c?x=1");
  EXPECT_EQ(request.path, "/c");
  EXPECT_EQ(request.body, "");
  EXPECT_EQ(request.remote_address, "192.0.2.1:1");
}

TEST(RequestParserTest, ParsesChunksSplitAnywhere) {
  const std::string wire =
      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
  for (size_t cut = 1; cut < wire.size(); ++cut) {
    RequestParser parser;
    configureRequestParser(parser, HttpServerOptions{});
    std::string_view w(wire);
    ASSERT_FALSE(feed(parser, {w.substr(0, cut), w.substr(cut)})) << "cut at " << cut;
    ASSERT_TRUE(parser.is_done()) << "cut at " << cut;
    EXPECT_EQ(takeRequest(parser, "").body, "hello");
  }
}

TEST(RequestParserTest, RefusesABodyOverTheLimitByItsContentLength) {
  RequestParser parser;
  HttpServerOptions options;
  options.max_body_bytes = 4;
  configureRequestParser(parser, options);
  EXPECT_EQ(feed(parser, {"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"}), bhttp::error::body_limit);
}

}  // namespace
}  // namespace tandem::http
