// respondError over the recording writer: the OpenAI error body with its
// status, and the headers a 429 and a 401 call for.
#include "router/generate/call_answer.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "tests/fakes/fake_response_writer.h"

namespace tandem::router {
namespace {

using tandem::testing::FakeResponseWriter;

std::string header(const FakeResponseWriter::Answer& answer, const std::string& name) {
  for (const http::HttpHeader& h : answer.headers) {
    if (h.name == name) return h.value;
  }
  return "";
}

TEST(CallAnswerTest, RespondErrorAnswersTheErrorBodyAsJson) {
  FakeResponseWriter writer;
  respondError(writer, openai::errorFor(400, "bad field", "temperature"));
  const FakeResponseWriter::Answer answer = writer.answer();
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(header(answer, "Content-Type"), "application/json");
  EXPECT_EQ(header(answer, "Retry-After"), "");
  EXPECT_EQ(nlohmann::json::parse(answer.body)["error"]["message"], "bad field");
}

TEST(CallAnswerTest, ATooManyRequestsSaysRetryAfterAtLeastOneSecond) {
  FakeResponseWriter soon;
  respondError(soon, openai::errorFor(429, "overloaded"));
  EXPECT_EQ(header(soon.answer(), "Retry-After"), "1");

  FakeResponseWriter later;
  openai::ApiError limited = openai::errorFor(429, "rate limited");
  limited.retry_after_s = 7;
  respondError(later, limited);
  EXPECT_EQ(header(later.answer(), "Retry-After"), "7");
}

TEST(CallAnswerTest, AnUnauthorizedAsksForABearerToken) {
  FakeResponseWriter writer;
  respondError(writer, openai::errorFor(401, "no key"));
  EXPECT_EQ(header(writer.answer(), "WWW-Authenticate"), "Bearer");
}

}  // namespace
}  // namespace tandem::router
