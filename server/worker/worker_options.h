// What a `tandem worker` process is: its role in disaggregated serving, the
// model it serves, where it listens, where it registers, and how it moves KV
// blocks. Filled from the command line (cli/worker_command.cc) or by tests.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/grpc/cluster_auth.h"
#include "common/host_port.h"
#include "proto/convert/worker_enum_names.h"
#include "server/engine/engine_assembly.h"
#include "server/kv_transport/kv_transport_factory.h"

namespace tandem::worker {

// prefill: serves Prefill only (pushes KV to decode workers).
// decode: serves Generate, prefilling locally or on a prefill worker.
// both: serves every call. The flag's names: rpc::parseWorkerRole and
// rpc::workerRoleName (proto/convert/worker_enum_names.h).
using WorkerRole = tandem::v1::WorkerRole;
using rpc::parseWorkerRole;
using rpc::workerRoleName;
inline bool servesPrefill(WorkerRole role) { return role != tandem::v1::WORKER_ROLE_DECODE; }
inline bool servesGenerate(WorkerRole role) { return role != tandem::v1::WORKER_ROLE_PREFILL; }

// "host:port" as flags and peers spell it (common/host_port.h).
using tandem::formatHostPort;
using tandem::HostPort;
using tandem::parseHostPort;

struct WorkerOptions {
  WorkerRole role = tandem::v1::WORKER_ROLE_BOTH;
  // HF dir or .gguf.
  std::string model_path;
  // the name clients use; empty = the model file's name without extension.
  std::string model_name;
  // where the Worker gRPC service listens (port 0 = any free port).
  std::string host = "127.0.0.1";
  int port = 0;
  // the host others should dial (WorkerInfo.address, the KV endpoint);
  // empty = `host`, or this machine's hostname when `host` is a wildcard.
  std::string advertise_host;
  // the router's internal (registry) gRPC address to register with; empty = none.
  std::string router_address;
  // how the cluster's processes authenticate each other: the Worker API
  // (and the KV receiver) require it, and calls to the router and to
  // prefill workers carry it. none(): loopback listeners only.
  grpc_util::ClusterAuthPtr cluster_auth = grpc_util::ClusterAuth::none();
  // /metrics and /health over HTTP: 0 = any free port, -1 = none.
  int metrics_port = 0;
  // P: how to push blocks; D: which receivers to serve (auto = grpc and
  // shm; ucx = UCX alone).
  kv_transport::TransportChoice kv_transport = kv_transport::TransportChoice::kAuto;
  // with a GPU backend, the page-locked host memory KV transfers stage
  // through, for each direction this worker's role has (P's sends, D's
  // receives): it bounds the blocks in flight; a transfer that finds too
  // few free is refused (D then prefills locally).
  uint64_t kv_staging_bytes = uint64_t{1} << 30;
  // D: how long a remote prefill (the Prefill call and the transfer) may take.
  std::chrono::milliseconds prefill_timeout{10000};
  // P: faults tests inject into blocks in transit; null (outside tests) =
  // none (server/kv_transport/kv_fault_injector.h).
  kv_transport::KvFaultInjectorPtr kv_faults;
  engine::EngineAssemblyOptions engine;
  // the drain deadline (Worker::beginDrain): how long the streams in
  // progress may take to finish here; past it the worker leaves routing
  // and the router migrates what is left.
  std::chrono::milliseconds drain_timeout{30000};
};

}  // namespace tandem::worker
