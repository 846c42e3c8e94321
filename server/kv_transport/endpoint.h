// Receiver endpoints as strings P can be handed: "grpc://host:port",
// "shm://<unix socket name>?boot_id=<id>" and "ucx://<worker address>?…"
// (ucx_protocol.h), several joined with ','. The shm
// endpoint carries its host's boot id so a sender can tell whether it runs
// on the same host (and kernel) and may use shared memory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::kv_transport {

enum class TransportKind { kGrpc, kShm, kUcx };

std::string_view transportName(TransportKind kind);

struct Endpoint {
  TransportKind kind = TransportKind::kGrpc;
  // grpc: "host:port" ("[v6]:port"); shm: the abstract unix socket name;
  // ucx: everything after "ucx://" (parseUcxEndpoint reads it).
  std::string address;
  // shm: the receiver host's boot id (see localBootId()).
  std::string boot_id;
};

// "grpc://…", "shm://…" or "ucx://…"; the inverse of parseEndpoints for one endpoint.
std::string formatEndpoint(const Endpoint& endpoint);

// parses a ','-separated list. InvalidArgument for an unknown scheme, an
// empty address, or an empty list.
absl::StatusOr<std::vector<Endpoint>> parseEndpoints(std::string_view list);

// this host's identity for "same host" decisions: the kernel's boot id
// (/proc/sys/kernel/random/boot_id), which differs between hosts and across
// reboots; the hostname when it cannot be read.
const std::string& localBootId();

}  // namespace tandem::kv_transport
