// Reactors that end a callback-API call at once with a status, for a
// handler that refuses the call before doing anything (ClusterAuth::check
// failed, say). Each deletes itself when gRPC is done with it.
//
//   if (grpc::Status s = auth.check(*context); !s.ok()) return rejectedWrite<Msg>(s);
#pragma once

#include "common/grpc/server_stream_writer.h"
#include "grpcpp/grpcpp.h"

namespace tandem::grpc_util {

// a unary call answered with `status`.
inline grpc::ServerUnaryReactor* rejectedUnary(grpc::CallbackServerContext* context,
                                               grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

// a server-streaming call answered with `status` and no message (through
// the one stream writer).
template <typename Response>
grpc::ServerWriteReactor<Response>* rejectedWrite(grpc::Status status) {
  auto* reactor = new ServerStreamReactor<Response>();
  reactor->writer()->finish(std::move(status));
  return reactor;
}

// a client-streaming call answered with `status` before reading anything.
template <typename Request>
grpc::ServerReadReactor<Request>* rejectedRead(grpc::Status status) {
  class Rejected final : public grpc::ServerReadReactor<Request> {
   public:
    explicit Rejected(grpc::Status status) { this->Finish(std::move(status)); }
    void OnDone() override { delete this; }
  };
  return new Rejected(std::move(status));
}

}  // namespace tandem::grpc_util
