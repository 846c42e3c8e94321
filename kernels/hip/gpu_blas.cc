#include "kernels/hip/gpu_blas.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernels/hip/device_utils.h"

#if defined(TANDEM_GPU_VENDOR_BLAS)
#include <dlfcn.h>
#endif

namespace tandem::kernels::hip {

namespace {

bool disabledByEnvironment() {
  const char* v = std::getenv("TANDEM_VENDOR_BLAS");
  return v != nullptr && std::strcmp(v, "off") == 0;
}

}  // namespace

#if defined(TANDEM_GPU_VENDOR_BLAS)

namespace {

#define TANDEM_BLAS_NAME2(x) #x
#define TANDEM_BLAS_NAME(x) TANDEM_BLAS_NAME2(x)

// the library's entry points, typed by its own header's declarations
struct Api {
  decltype(&hipblasLtCreate) create = nullptr;
  decltype(&hipblasLtDestroy) destroy = nullptr;
  decltype(&hipblasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&hipblasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&hipblasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&hipblasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&hipblasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&hipblasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&hipblasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&hipblasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&hipblasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&hipblasLtMatmul) matmul = nullptr;
};

template <class F>
bool resolve(void* lib, const char* symbol, F* f) {
  *f = reinterpret_cast<F>(dlsym(lib, symbol));
  return *f != nullptr;
}
#define TANDEM_BLAS_RESOLVE(lib, field, fn) resolve(lib, TANDEM_BLAS_NAME(fn), &api.field)

bool resolveAll(void* lib, Api& api) {
  return TANDEM_BLAS_RESOLVE(lib, create, hipblasLtCreate) &&
         TANDEM_BLAS_RESOLVE(lib, destroy, hipblasLtDestroy) &&
         TANDEM_BLAS_RESOLVE(lib, desc_create, hipblasLtMatmulDescCreate) &&
         TANDEM_BLAS_RESOLVE(lib, desc_destroy, hipblasLtMatmulDescDestroy) &&
         TANDEM_BLAS_RESOLVE(lib, desc_set, hipblasLtMatmulDescSetAttribute) &&
         TANDEM_BLAS_RESOLVE(lib, layout_create, hipblasLtMatrixLayoutCreate) &&
         TANDEM_BLAS_RESOLVE(lib, layout_destroy, hipblasLtMatrixLayoutDestroy) &&
         TANDEM_BLAS_RESOLVE(lib, pref_create, hipblasLtMatmulPreferenceCreate) &&
         TANDEM_BLAS_RESOLVE(lib, pref_destroy, hipblasLtMatmulPreferenceDestroy) &&
         TANDEM_BLAS_RESOLVE(lib, pref_set, hipblasLtMatmulPreferenceSetAttribute) &&
         TANDEM_BLAS_RESOLVE(lib, heuristic, hipblasLtMatmulAlgoGetHeuristic) &&
         TANDEM_BLAS_RESOLVE(lib, matmul, hipblasLtMatmul);
}

hipDataType dataType(BlasOperand t) {
  switch (t) {
    case BlasOperand::kF16: return HIP_R_16F;
    case BlasOperand::kBF16: return HIP_R_16BF;
    case BlasOperand::kF32: break;
  }
  return HIP_R_32F;
}

// 32 MiB: what cuBLASLt's heuristics ask for at most on Hopper-class
// devices for these shapes; below it some fast algorithms are excluded.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
// plans kept before the cache is emptied: prefill chunks vary m, so the
// shapes are many over a server's life but few at any time.
constexpr size_t kMaxPlans = 512;

}  // namespace

struct VendorBlas::Library {
  // one shape's descriptors and the algorithm the heuristic chose
  struct Plan {
    hipblasLtMatmulDesc_t op = nullptr;
    hipblasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
    hipblasLtMatmulHeuristicResult_t choice{};
    bool ok = false;
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;

  void* dl = nullptr;
  Api api;
  hipblasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<Key, Plan> plans;

  ~Library() {
    clearPlans();
    if (handle != nullptr) (void)api.destroy(handle);
    if (workspace != nullptr) (void)hipFree(workspace);
    if (dl != nullptr) dlclose(dl);
  }
  void clearPlans() {
    for (auto& [key, p] : plans) {
      if (p.w != nullptr) (void)api.layout_destroy(p.w);
      if (p.x != nullptr) (void)api.layout_destroy(p.x);
      if (p.y != nullptr) (void)api.layout_destroy(p.y);
      if (p.op != nullptr) (void)api.desc_destroy(p.op);
    }
    plans.clear();
  }
  // y^T [n, m] = w [n, k] * x^T in the library's column-major terms: w is
  // a k x n column-major matrix used transposed, x a k x m one as is.
  Plan makePlan(BlasOperand type, int64_t m, int64_t n, int64_t k) {
    Plan p;
    const hipDataType t = dataType(type);
    const hipblasOperation_t trans = HIPBLAS_OP_T, no_trans = HIPBLAS_OP_N;
    if (api.desc_create(&p.op, HIPBLAS_COMPUTE_32F, HIP_R_32F) != HIPBLAS_STATUS_SUCCESS ||
        api.desc_set(p.op, HIPBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)) !=
            HIPBLAS_STATUS_SUCCESS ||
        api.desc_set(p.op, HIPBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)) !=
            HIPBLAS_STATUS_SUCCESS ||
        api.layout_create(&p.w, t, k, n, k) != HIPBLAS_STATUS_SUCCESS ||
        api.layout_create(&p.x, t, k, m, k) != HIPBLAS_STATUS_SUCCESS ||
        api.layout_create(&p.y, HIP_R_32F, n, m, n) != HIPBLAS_STATUS_SUCCESS) {
      return p;
    }
    hipblasLtMatmulPreference_t pref = nullptr;
    if (api.pref_create(&pref) != HIPBLAS_STATUS_SUCCESS) return p;
    const size_t bytes = kWorkspaceBytes;
    int found = 0;
    if (api.pref_set(pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes)) ==
            HIPBLAS_STATUS_SUCCESS &&
        api.heuristic(handle, p.op, p.w, p.x, p.y, p.y, pref, 1, &p.choice, &found) ==
            HIPBLAS_STATUS_SUCCESS) {
      p.ok = found > 0;
    }
    (void)api.pref_destroy(pref);
    return p;
  }
};

VendorBlasPtr VendorBlas::open(std::string* why) {
  if (disabledByEnvironment()) {
    *why = "TANDEM_VENDOR_BLAS=off";
    return nullptr;
  }
  auto lib = std::make_unique<Library>();
  std::string tried;
  std::vector<std::string> names = TANDEM_GPU_VENDOR_BLAS_LIBS;
  if (const char* path = std::getenv("TANDEM_VENDOR_BLAS_LIB")) names.insert(names.begin(), path);
  std::string loaded;
  for (const std::string& n : names) {
    lib->dl = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->dl != nullptr) {
      loaded = n;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + n;
  }
  if (lib->dl == nullptr) {
    *why = "vendor BLAS not found (tried " + tried + ")";
    return nullptr;
  }
  if (!resolveAll(lib->dl, lib->api)) {
    *why = loaded + " lacks an entry point tandem calls";
    return nullptr;
  }
  if (lib->api.create(&lib->handle) != HIPBLAS_STATUS_SUCCESS) {
    lib->handle = nullptr;
    *why = loaded + ": cannot create a handle";
    return nullptr;
  }
  if (hipMalloc(&lib->workspace, kWorkspaceBytes) != hipSuccess) {
    lib->workspace = nullptr;
    *why = "cannot allocate the vendor BLAS's workspace";
    return nullptr;
  }
#if defined(TANDEM_GPU_NVIDIA)
  const std::string vendor = "cuBLASLt (";
#else
  const std::string vendor = "hipBLASLt (";
#endif
  return VendorBlasPtr(new VendorBlas(std::move(lib), vendor + loaded + ")"));
}

hipError_t VendorBlas::gemm(BlasOperand type, const void* a, const void* b, float* y, int64_t m,
                            int64_t n, int64_t k, hipStream_t stream) {
  if (m == 0 || n == 0) return hipSuccess;
  Library& l = *lib_;
  const Library::Key key{static_cast<int>(type), m, n, k};
  auto it = l.plans.find(key);
  if (it == l.plans.end()) {
    if (l.plans.size() >= kMaxPlans) l.clearPlans();
    it = l.plans.emplace(key, l.makePlan(type, m, n, k)).first;
  }
  const Library::Plan& p = it->second;
  if (!p.ok) return hipErrorInvalidValue;
  const float alpha = 1.0f, beta = 0.0f;
  const hipblasStatus_t s =
      l.api.matmul(l.handle, p.op, &alpha, b, p.w, a, p.x, &beta, y, p.y, y, p.y, &p.choice.algo,
                   l.workspace, kWorkspaceBytes, stream);
  return s == HIPBLAS_STATUS_SUCCESS ? hipSuccess : hipErrorInvalidValue;
}

#elif defined(TANDEM_GPU_EMU)

namespace {

constexpr int kThreads = 256;

// the emulator's stand-in: thread (x, row) sums one output in F32, k in order.
template <class T>
static __global__ void referenceGemmKernel(const T* a, const T* b, float* y, int64_t n, int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t row = blockIdx.y;
  if (col >= n) return;
  float acc = 0.0f;
  for (int64_t j = 0; j < k; ++j) acc += gpu::toFloat(a[row * k + j]) * gpu::toFloat(b[col * k + j]);
  y[row * n + col] = acc;
}

}  // namespace

struct VendorBlas::Library {};

VendorBlasPtr VendorBlas::open(std::string* why) {
  if (disabledByEnvironment()) {
    *why = "TANDEM_VENDOR_BLAS=off";
    return nullptr;
  }
  return VendorBlasPtr(new VendorBlas(std::make_unique<Library>(), "emulator reference"));
}

hipError_t VendorBlas::gemm(BlasOperand type, const void* a, const void* b, float* y, int64_t m,
                            int64_t n, int64_t k, hipStream_t stream) {
  if (m == 0 || n == 0) return hipSuccess;
  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), static_cast<unsigned>(m));
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return gpu::launch("vendor_blas_reference", referenceGemmKernel<T>, grid, dim3(kThreads),
                       stream, static_cast<const T*>(a), static_cast<const T*>(b), y, n, k);
  };
  switch (type) {
    case BlasOperand::kF16: return run(static_cast<gpu::F16*>(nullptr));
    case BlasOperand::kBF16: return run(static_cast<gpu::BF16*>(nullptr));
    case BlasOperand::kF32: break;
  }
  return run(static_cast<float*>(nullptr));
}

#else

struct VendorBlas::Library {};

VendorBlasPtr VendorBlas::open(std::string* why) {
  if (disabledByEnvironment()) {
    *why = "TANDEM_VENDOR_BLAS=off";
    return nullptr;
  }
  *why = "this build has no vendor BLAS (hipBLASLt's headers were not found at build time)";
  return nullptr;
}

hipError_t VendorBlas::gemm(BlasOperand, const void*, const void*, float*, int64_t, int64_t,
                            int64_t, hipStream_t) {
  return hipErrorInvalidValue;
}

#endif

VendorBlas::VendorBlas(std::unique_ptr<Library> lib, std::string name)
    : lib_(std::move(lib)), name_(std::move(name)) {}
VendorBlas::~VendorBlas() = default;

}  // namespace tandem::kernels::hip
