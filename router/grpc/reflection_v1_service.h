// grpc.reflection.v1.ServerReflection beside gRPC 1.51's v1alpha, which is
// all its reflection library serves: tools that speak v1 (grpcurl 1.9,
// grpcui, Postman) got UNIMPLEMENTED. v1 is v1alpha under another package
// name (proto/grpc/reflection/v1/reflection.proto says so), so this serves
// the same answers as gRPC's own ProtoServerReflection, from the same
// descriptor pool (the process's generated one) and the same list of
// services (the server's, taken the way gRPC's reflection plugin takes it).
//
//   grpc::ServerBuilder builder;
//   addReflectionV1(builder);   // before BuildAndStart
#pragma once

#include "grpcpp/grpcpp.h"

namespace tandem::router {

// serves grpc.reflection.v1.ServerReflection on the server `builder`
// builds, listing every service registered on it (itself included).
void addReflectionV1(grpc::ServerBuilder& builder);

}  // namespace tandem::router
