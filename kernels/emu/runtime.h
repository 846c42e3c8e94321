// The host side of the HIP runtime, emulated: device memory is host memory,
// a stream is a queue of work that runs (on the calling thread, in order)
// when something waits for it, events mark points in those queues, and a
// kernel launch runs every block of the grid through a BlockRunner. The API
// is HIP's own subset that tandem uses, so host code written for HIP
// compiles unchanged. Errors are HIP's: a launch with a bad shape fails at
// once (hipGetLastError); a kernel that fails (shared out of bounds, barrier
// divergence...) makes the next synchronizing call return
// hipErrorLaunchFailure, and tandem::emu::lastFailure() says why. One
// device: every call holds one lock while it runs, so host threads may use
// different streams side by side (a thread that waits runs the queued work,
// the others' included, as the device would).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/emu/device_types.h"

enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidConfiguration = 9,
  hipErrorInvalidResourceHandle = 400,
  hipErrorNotReady = 600,
  hipErrorLaunchFailure = 719,
  hipErrorStreamCaptureUnsupported = 900,
  hipErrorStreamCaptureInvalidated = 901,
};

enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
};

struct ihipStream_t;
struct ihipEvent_t;
struct ihipGraph_t;
struct ihipGraphExec_t;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;
using hipGraph_t = ihipGraph_t*;
using hipGraphExec_t = ihipGraphExec_t*;
using hipGraphNode_t = void*;

enum hipStreamCaptureMode {
  hipStreamCaptureModeGlobal = 0,
  hipStreamCaptureModeThreadLocal = 1,
  hipStreamCaptureModeRelaxed = 2,
};

struct hipDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  int warpSize;
  int maxThreadsPerBlock;
  size_t sharedMemPerBlock;
  int multiProcessorCount;
};

[[nodiscard]] hipError_t hipMalloc(void** ptr, size_t bytes);
[[nodiscard]] hipError_t hipFree(void* ptr);
[[nodiscard]] hipError_t hipHostMalloc(void** ptr, size_t bytes, unsigned flags = 0);
[[nodiscard]] hipError_t hipHostFree(void* ptr);
// page-locks existing host memory (here: remembers the range, which
// hipHostUnregister must name exactly; overlapping ranges are refused).
inline constexpr unsigned hipHostRegisterDefault = 0;
[[nodiscard]] hipError_t hipHostRegister(void* ptr, size_t bytes, unsigned flags);
[[nodiscard]] hipError_t hipHostUnregister(void* ptr);
[[nodiscard]] hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
[[nodiscard]] hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes,
                                        hipMemcpyKind kind, hipStream_t stream = nullptr);
[[nodiscard]] hipError_t hipMemsetAsync(void* dst, int value, size_t bytes,
                                        hipStream_t stream = nullptr);
[[nodiscard]] hipError_t hipStreamCreate(hipStream_t* stream);
[[nodiscard]] hipError_t hipStreamDestroy(hipStream_t stream);
[[nodiscard]] hipError_t hipStreamSynchronize(hipStream_t stream);
[[nodiscard]] hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event,
                                            unsigned flags = 0);
[[nodiscard]] hipError_t hipEventCreate(hipEvent_t* event);
[[nodiscard]] hipError_t hipEventDestroy(hipEvent_t event);
[[nodiscard]] hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream = nullptr);
[[nodiscard]] hipError_t hipEventSynchronize(hipEvent_t event);
[[nodiscard]] hipError_t hipEventQuery(hipEvent_t event);
[[nodiscard]] hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
[[nodiscard]] hipError_t hipDeviceSynchronize();
[[nodiscard]] hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device);
// the emulator is one device, id 0.
[[nodiscard]] hipError_t hipGetDeviceCount(int* count);
[[nodiscard]] hipError_t hipSetDevice(int device);
[[nodiscard]] hipError_t hipGetDevice(int* device);
[[nodiscard]] hipError_t hipGetLastError();
// stream capture, as HIP's graphs: between begin and end the stream's work
// is recorded into a graph instead of queued (a synchronizing call on the
// stream meanwhile fails, as on a GPU); launching an instantiated graph
// queues the recorded work again, in order, on any stream.
[[nodiscard]] hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode);
[[nodiscard]] hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph);
[[nodiscard]] hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph,
                                             hipGraphNode_t* error_node, char* log,
                                             size_t log_bytes);
[[nodiscard]] hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream);
[[nodiscard]] hipError_t hipGraphDestroy(hipGraph_t graph);
[[nodiscard]] hipError_t hipGraphExecDestroy(hipGraphExec_t exec);
const char* hipGetErrorString(hipError_t error);

namespace tandem::emu {

// the wavefront size kernels see (64 as CDNA, 32 as RDNA/NVIDIA); applies to
// launches made after the call.
void setWarpSize(int warp_size);
int configuredWarpSize();
// why the last failed kernel failed ("" when none did).
std::string lastFailure();
// device allocations not yet freed (tests check backends free what they take).
size_t liveAllocations();
// host ranges registered with hipHostRegister and not yet unregistered.
size_t liveHostRegistrations();

// queues a launch of `body` (one call per emulated thread) on `stream`.
hipError_t enqueueLaunch(const char* name, dim3 grid, dim3 block, hipStream_t stream,
                         std::function<void()> body);

// kernel<<<grid, block, 0, stream>>>(args...), with the arguments converted
// to the kernel's parameter types and copied, as a launch does.
template <class... Params, class... Args>
hipError_t launchKernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                        hipStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel argument count");
  std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  return enqueueLaunch(name, grid, block, stream, [kernel, params] { std::apply(kernel, params); });
}

}  // namespace tandem::emu
