// The one blocking client against the real server on loopback: a reply of
// any status is OK, a refused connection and an unanswered request are
// Unavailable naming where they failed, and the resolver is the caller's.
#include "common/http/http_client.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/common/http/server_test_util.h"

namespace tandem::http {
namespace {

using namespace std::chrono_literals;

std::string urlOf(const HttpServer& server, const std::string& target) {
  return absl::StrCat("http://127.0.0.1:", server.port(), target);
}

TEST(HttpClientTest, PostsABodyAndReadsTheReply) {
  HttpServerPtr server = testing::startServer({}, testing::echoHandler());
  ASSERT_NE(server, nullptr);
  absl::StatusOr<HttpReply> reply =
      httpCall({.method = "POST", .url = urlOf(*server, "/echo"), .body = "hello"}, systemResolve);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "path=/echo body=hello");
}

TEST(HttpClientTest, AnUnansweredRequestIsUnavailableAfterItsTimeout) {
  testing::WriterInbox inbox;  // takes requests and never answers them
  HttpServerPtr server = testing::startServer({}, inbox.handler());
  ASSERT_NE(server, nullptr);
  absl::StatusOr<HttpReply> reply = httpCall({.url = urlOf(*server, "/slow"), .timeout = 200ms}, systemResolve);
  ASSERT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
  EXPECT_NE(reply.status().message().find("no answer within 200 ms (read)"), std::string::npos)
      << reply.status();
}

TEST(HttpClientTest, NamesAreResolvedByTheResolverGiven) {
  HttpServerPtr server = testing::startServer({}, testing::echoHandler());
  ASSERT_NE(server, nullptr);
  std::string asked;
  auto resolver = [&](const std::string& host, int port, std::chrono::milliseconds timeout) {
    asked = absl::StrCat(host, ":", port);
    return systemResolve("127.0.0.1", port, timeout);
  };
  absl::StatusOr<HttpReply> reply =
      httpCall({.url = absl::StrCat("http://tandem.invalid:", server->port(), "/x")}, resolver);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(asked, absl::StrCat("tandem.invalid:", server->port()));
}

TEST(HttpClientTest, ARefusedConnectionAndABadUrlAreErrors) {
  EXPECT_TRUE(absl::IsUnavailable(httpCall({.url = "http://127.0.0.1:1/"}, systemResolve).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(httpCall({.url = "ftp://x/"}, systemResolve).status()));
}

}  // namespace
}  // namespace tandem::http
