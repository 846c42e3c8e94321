// Protobuf messages in and out of raw gRPC methods (grpc::ByteBuffer), for
// the services that parse their own requests: gRPC's callback API answers a
// body that does not parse with UNIMPLEMENTED and no details (it reads as
// "no such method"); a service that takes the bytes answers
// INVALID_ARGUMENT saying what it expected, and chooses where the parsing
// runs.
#pragma once

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"  // SerializationTraits for protobuf messages

namespace tandem::grpc_util {

// `message` serialized (protobuf's wire format), as a raw method sends it.
template <typename Message>
grpc::ByteBuffer toByteBuffer(const Message& message) {
  grpc::ByteBuffer buffer;
  bool own_buffer = false;
  // fails only for a message over 2 GiB, which no tandem response is.
  (void)grpc::SerializationTraits<Message>::Serialize(message, &buffer, &own_buffer);
  return buffer;
}

// parses `buffer` into `message` with protobuf's own parser (the one gRPC
// would have run). INVALID_ARGUMENT naming the message type and the size
// when it does not parse (bad wire format, a truncated field, invalid UTF-8
// in a string field). `buffer` is not consumed.
template <typename Message>
grpc::Status fromByteBuffer(const grpc::ByteBuffer& buffer, Message* message) {
  grpc::ByteBuffer copy(buffer);  // shares the slices; parsing drains the copy
  const size_t bytes = buffer.Length();
  if (grpc::SerializationTraits<Message>::Deserialize(&copy, message).ok()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("the request body (", bytes, " bytes) does not parse as ",
                                   message->GetTypeName(),
                                   ": not protobuf wire format, a truncated field, or a string "
                                   "field that is not UTF-8"));
}

}  // namespace tandem::grpc_util
