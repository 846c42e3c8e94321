// grpc.health.v1.Health/Check as a probe asks it, for tests: the messages
// are encoded by hand (HealthCheckRequest{service = 1},
// HealthCheckResponse{status = 1}), since gRPC ships the service but no C++
// stubs for it.
#pragma once

#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/client_unary_call.h"

namespace tandem::grpc_util::testing {

// "SERVING", "NOT_SERVING", or the failed call's code and message
// ("NOT_FOUND: ...", "UNAVAILABLE: ...").
inline std::string healthCheck(grpc::Channel& channel, const std::string& service) {
  std::string request;
  if (!service.empty()) request = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
  grpc::Slice slice(request);
  grpc::ByteBuffer in(&slice, 1), out;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::internal::RpcMethod check("/grpc.health.v1.Health/Check",
                                        grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status status = grpc::internal::BlockingUnaryCall(&channel, check, &context, in, &out);
  if (!status.ok()) {
    const char* code = status.error_code() == grpc::StatusCode::NOT_FOUND     ? "NOT_FOUND"
                       : status.error_code() == grpc::StatusCode::UNAVAILABLE ? "UNAVAILABLE"
                                                                              : "FAILED";
    return std::string(code) + ": " + status.error_message();
  }
  std::vector<grpc::Slice> slices;
  if (!out.Dump(&slices).ok()) return "unreadable response";
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  if (bytes == std::string("\x08\x01", 2)) return "SERVING";
  if (bytes == std::string("\x08\x02", 2)) return "NOT_SERVING";
  return "unexpected response of " + std::to_string(bytes.size()) + " bytes";
}

}  // namespace tandem::grpc_util::testing
