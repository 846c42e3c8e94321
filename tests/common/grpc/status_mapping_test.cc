#include "common/grpc/status_mapping.h"

#include "gtest/gtest.h"

namespace tandem::grpc_util {
namespace {

TEST(StatusMappingTest, AbslToGrpcKeepsTheCodeAndTheMessage) {
  EXPECT_TRUE(toGrpcStatus(absl::OkStatus()).ok());
  const grpc::Status s = toGrpcStatus(absl::OutOfRangeError("gone"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "gone");
  const grpc::Status prefixed = toGrpcStatus(absl::DataLossError("bad block"), "KV transfer failed");
  EXPECT_EQ(prefixed.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_EQ(prefixed.error_message(), "KV transfer failed: bad block");
}

TEST(StatusMappingTest, GrpcToAbslKeepsTheCodeAndTheMessage) {
  EXPECT_TRUE(toAbslStatus(grpc::Status::OK).ok());
  const absl::Status s = toAbslStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "down");
  EXPECT_EQ(toAbslStatus(toGrpcStatus(absl::DeadlineExceededError("late"))),
            absl::DeadlineExceededError("late"));
}

TEST(StatusMappingTest, ARefusalIsUnavailableResourceExhaustedOrTheRequestsFault) {
  EXPECT_EQ(refusalToGrpc(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refusalToGrpc(absl::FailedPreconditionError("stopping")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refusalToGrpc(absl::ResourceExhaustedError("full")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refusalToGrpc(absl::InvalidArgumentError("bad")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refusalToGrpc(absl::InternalError("odd")).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refusalToGrpc(absl::InvalidArgumentError("bad")).error_message(), "bad");
}

}  // namespace
}  // namespace tandem::grpc_util
