#include "kernels/emu/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernels/emu/block_runner.h"

struct ihipGraph_t {
  std::vector<std::function<void()>> tasks;
};

struct ihipGraphExec_t {
  std::vector<std::function<void()>> tasks;
};

struct ihipStream_t {
  std::deque<std::function<void()>> queue;
  ihipGraph_t* capture = nullptr;  // recording instead of queueing
};

struct ihipEvent_t {
  ihipStream_t* stream = nullptr;
  bool pending = false;  // recorded, not yet reached
  std::chrono::steady_clock::time_point when;
};

namespace tandem::emu {
namespace {

struct Device {
  // held by every runtime call (recursive: queued work may call back in)
  std::recursive_mutex mu;
  ihipStream_t null_stream;
  std::set<ihipStream_t*> streams{&null_stream};
  std::set<void*> allocations;
  std::map<const char*, size_t> host_registrations;  // start -> bytes
  int warp_size = 64;
  hipError_t launch_error = hipSuccess;  // reported by hipGetLastError
  hipError_t exec_error = hipSuccess;    // reported by the next synchronizing call
  std::string failure;
  std::unique_ptr<BlockRunner> runner;
};

Device& device() {
  static Device* d = new Device();  // never destroyed: buffers may outlive main's statics
  return *d;
}

// every entry point takes the device's lock for its whole call.
struct Lock {
  Lock() : guard(device().mu) {}
  std::lock_guard<std::recursive_mutex> guard;
};

ihipStream_t* resolve(hipStream_t s) { return s == nullptr ? &device().null_stream : s; }

// queues `task` on `s`, or records it into the graph `s` is capturing.
void push(hipStream_t stream, std::function<void()> task) {
  ihipStream_t* s = resolve(stream);
  if (s->capture != nullptr) {
    s->capture->tasks.push_back(std::move(task));
  } else {
    s->queue.push_back(std::move(task));
  }
}

bool capturing() {
  for (ihipStream_t* s : device().streams) {
    if (s->capture != nullptr) return true;
  }
  return false;
}

// runs the queued work of `s` in order; after a kernel failed, the work
// behind it is dropped, as a GPU context is lost. The null stream is HIP's
// legacy default stream, which synchronizes with every blocking stream:
// draining any stream first drains the null stream's work.
void drain(ihipStream_t* s) {
  if (s != &device().null_stream) drain(&device().null_stream);
  while (!s->queue.empty()) {
    std::function<void()> task = std::move(s->queue.front());
    s->queue.pop_front();
    if (device().exec_error == hipSuccess) task();
  }
}

void drainAll() {
  bool more = true;
  while (more) {
    more = false;
    for (ihipStream_t* s : device().streams) {
      if (!s->queue.empty()) {
        drain(s);
        more = true;
      }
    }
  }
}

hipError_t takeExecError() {
  const hipError_t e = device().exec_error;
  device().exec_error = hipSuccess;
  return e;
}

}  // namespace

void setWarpSize(int warp_size) {
  const Lock lock;
  device().warp_size = warp_size;
}
int configuredWarpSize() {
  const Lock lock;
  return device().warp_size;
}
std::string lastFailure() {
  const Lock lock;
  return device().failure;
}
size_t liveAllocations() {
  const Lock lock;
  return device().allocations.size();
}
size_t liveHostRegistrations() {
  const Lock lock;
  return device().host_registrations.size();
}

hipError_t enqueueLaunch(const char* name, dim3 grid, dim3 block, hipStream_t stream,
                         std::function<void()> body) {
  const Lock lock;
  Device& d = device();
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > BlockRunner::kMaxThreads || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || block.z > 64) {
    d.launch_error = hipErrorInvalidConfiguration;
    d.failure = std::string("kernel ") + name + ": invalid launch configuration";
    return hipErrorInvalidConfiguration;
  }
  const LaunchShape shape{name, grid, block, d.warp_size};
  push(stream, [shape, body = std::move(body)] {
    Device& dev = device();
    if (dev.runner == nullptr) dev.runner = std::make_unique<BlockRunner>();
    for (unsigned z = 0; z < shape.grid.z; ++z) {
      for (unsigned y = 0; y < shape.grid.y; ++y) {
        for (unsigned x = 0; x < shape.grid.x; ++x) {
          std::string failure = dev.runner->run(shape, uint3{x, y, z}, body);
          if (!failure.empty()) {
            dev.exec_error = hipErrorLaunchFailure;
            dev.failure = std::move(failure);
            return;
          }
        }
      }
    }
  });
  return hipSuccess;
}

}  // namespace tandem::emu

using tandem::emu::device;
using tandem::emu::Lock;

hipError_t hipMalloc(void** ptr, size_t bytes) {
  const Lock lock;
  *ptr = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
  if (*ptr == nullptr) return hipErrorOutOfMemory;
  device().allocations.insert(*ptr);
  return hipSuccess;
}

hipError_t hipFree(void* ptr) {
  const Lock lock;
  if (ptr == nullptr) return hipSuccess;
  tandem::emu::drainAll();  // hipFree synchronizes the device
  if (device().allocations.erase(ptr) == 0) return hipErrorInvalidValue;
  std::free(ptr);
  return hipSuccess;
}

hipError_t hipHostMalloc(void** ptr, size_t bytes, unsigned) {
  const Lock lock;
  *ptr = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
  return *ptr == nullptr ? hipErrorOutOfMemory : hipSuccess;
}

hipError_t hipHostFree(void* ptr) {
  const Lock lock;
  tandem::emu::drainAll();
  std::free(ptr);
  return hipSuccess;
}

hipError_t hipHostRegister(void* ptr, size_t bytes, unsigned) {
  const Lock lock;
  if (ptr == nullptr || bytes == 0) return hipErrorInvalidValue;
  auto& regs = device().host_registrations;
  const char* begin = static_cast<const char*>(ptr);
  // refuse an overlap with the registration below or above, as HIP does
  auto next = regs.lower_bound(begin);
  if (next != regs.end() && next->first < begin + bytes) return hipErrorInvalidValue;
  if (next != regs.begin() && std::prev(next)->first + std::prev(next)->second > begin) {
    return hipErrorInvalidValue;
  }
  regs.emplace(begin, bytes);
  return hipSuccess;
}

hipError_t hipHostUnregister(void* ptr) {
  const Lock lock;
  tandem::emu::drainAll();  // copies from or to it finish first
  return device().host_registrations.erase(static_cast<const char*>(ptr)) == 1
             ? hipSuccess
             : hipErrorInvalidValue;
}

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind) {
  const Lock lock;
  if (tandem::emu::capturing()) return hipErrorStreamCaptureUnsupported;
  tandem::emu::drainAll();
  std::memmove(dst, src, bytes);
  return tandem::emu::takeExecError();
}

hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind,
                          hipStream_t stream) {
  const Lock lock;
  tandem::emu::push(stream, [=] { std::memmove(dst, src, bytes); });
  return hipSuccess;
}

hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream) {
  const Lock lock;
  tandem::emu::push(stream, [=] { std::memset(dst, value, bytes); });
  return hipSuccess;
}

hipError_t hipStreamCreate(hipStream_t* stream) {
  const Lock lock;
  *stream = new ihipStream_t();
  device().streams.insert(*stream);
  return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t stream) {
  const Lock lock;
  if (stream == nullptr || device().streams.erase(stream) == 0)
    return hipErrorInvalidResourceHandle;
  tandem::emu::drain(stream);
  delete stream;
  return hipSuccess;
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  const Lock lock;
  if (tandem::emu::resolve(stream)->capture != nullptr) return hipErrorStreamCaptureUnsupported;
  tandem::emu::drain(tandem::emu::resolve(stream));
  return tandem::emu::takeExecError();
}

hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned) {
  const Lock lock;
  if (event == nullptr) return hipErrorInvalidResourceHandle;
  // the waiting stream, when it gets there, first runs the event's stream up
  // to (and past) the event
  tandem::emu::push(stream, [event] {
    if (event->pending && event->stream != nullptr) tandem::emu::drain(event->stream);
  });
  return hipSuccess;
}

hipError_t hipEventCreate(hipEvent_t* event) {
  const Lock lock;
  *event = new ihipEvent_t();
  return hipSuccess;
}

hipError_t hipEventDestroy(hipEvent_t event) {
  const Lock lock;
  delete event;
  return hipSuccess;
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  const Lock lock;
  if (event == nullptr) return hipErrorInvalidResourceHandle;
  ihipStream_t* s = tandem::emu::resolve(stream);
  event->stream = s;
  event->pending = s->capture == nullptr;
  tandem::emu::push(stream, [event] {
    event->pending = false;
    event->when = std::chrono::steady_clock::now();
  });
  return hipSuccess;
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  const Lock lock;
  if (event == nullptr) return hipErrorInvalidResourceHandle;
  if (event->pending) tandem::emu::drain(event->stream);
  return tandem::emu::takeExecError();
}

hipError_t hipEventQuery(hipEvent_t event) {
  const Lock lock;
  return event->pending ? hipErrorNotReady : hipSuccess;
}

hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  const Lock lock;
  if (start->pending || stop->pending) return hipErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(stop->when - start->when).count();
  return hipSuccess;
}

hipError_t hipDeviceSynchronize() {
  const Lock lock;
  if (tandem::emu::capturing()) return hipErrorStreamCaptureUnsupported;
  tandem::emu::drainAll();
  return tandem::emu::takeExecError();
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device_id) {
  const Lock lock;
  if (device_id != 0) return hipErrorInvalidValue;
  *prop = hipDeviceProp_t{};
  std::strncpy(prop->name, "tandem host emulator", sizeof(prop->name) - 1);
  prop->totalGlobalMem = size_t{8} << 30;
  prop->warpSize = device().warp_size;
  prop->maxThreadsPerBlock = tandem::emu::BlockRunner::kMaxThreads;
  prop->sharedMemPerBlock = tandem::emu::BlockRunner::kSharedBytes;
  prop->multiProcessorCount = 1;
  return hipSuccess;
}

hipError_t hipGetDeviceCount(int* count) {
  const Lock lock;
  *count = 1;
  return hipSuccess;
}

hipError_t hipSetDevice(int device_id) {
  const Lock lock;
  return device_id == 0 ? hipSuccess : hipErrorInvalidValue;
}

hipError_t hipGetDevice(int* device_id) {
  const Lock lock;
  *device_id = 0;
  return hipSuccess;
}

hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode) {
  const Lock lock;
  ihipStream_t* s = tandem::emu::resolve(stream);
  if (s == &device().null_stream || s->capture != nullptr) return hipErrorStreamCaptureUnsupported;
  s->capture = new ihipGraph_t();
  return hipSuccess;
}

hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph) {
  const Lock lock;
  ihipStream_t* s = tandem::emu::resolve(stream);
  if (s->capture == nullptr) return hipErrorStreamCaptureInvalidated;
  *graph = s->capture;
  s->capture = nullptr;
  return hipSuccess;
}

hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t*, char*,
                               size_t) {
  const Lock lock;
  if (graph == nullptr) return hipErrorInvalidValue;
  *exec = new ihipGraphExec_t{graph->tasks};
  return hipSuccess;
}

hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  const Lock lock;
  if (exec == nullptr) return hipErrorInvalidValue;
  for (const auto& task : exec->tasks) tandem::emu::push(stream, task);
  return hipSuccess;
}

hipError_t hipGraphDestroy(hipGraph_t graph) {
  const Lock lock;
  delete graph;
  return hipSuccess;
}

hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  const Lock lock;
  delete exec;
  return hipSuccess;
}

hipError_t hipGetLastError() {
  const Lock lock;
  hipError_t e = device().launch_error;
  device().launch_error = hipSuccess;
  if (e == hipSuccess) e = tandem::emu::takeExecError();
  return e;
}

const char* hipGetErrorString(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return "hipSuccess";
    case hipErrorInvalidValue:
      return "hipErrorInvalidValue";
    case hipErrorOutOfMemory:
      return "hipErrorOutOfMemory";
    case hipErrorInvalidConfiguration:
      return "hipErrorInvalidConfiguration";
    case hipErrorInvalidResourceHandle:
      return "hipErrorInvalidResourceHandle";
    case hipErrorNotReady:
      return "hipErrorNotReady";
    case hipErrorLaunchFailure:
      return "hipErrorLaunchFailure";
    case hipErrorStreamCaptureUnsupported:
      return "hipErrorStreamCaptureUnsupported";
    case hipErrorStreamCaptureInvalidated:
      return "hipErrorStreamCaptureInvalidated";
  }
  return "unknown hip error";
}
