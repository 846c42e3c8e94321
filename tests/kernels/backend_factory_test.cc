// kernels::createBackend, the one place a backend is chosen: names parse,
// the cpu backend is built, and the hip backend is either there (a GPU
// build) or one clear error saying how to get it.
#include "kernels/backend_factory.h"

#include "gtest/gtest.h"

namespace tandem::kernels {
namespace {

TEST(BackendFactoryTest, NamesParseBothWays) {
  for (BackendKind kind : {BackendKind::kCpu, BackendKind::kHip}) {
    auto parsed = parseBackendKind(backendKindName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
  }
  const auto bad = parseBackendKind("cuda");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--backend: 'cuda' is not a backend (cpu or hip)");
}

TEST(BackendFactoryTest, TheCpuBackendUsesHostMemory) {
  BackendOptions options;
  options.num_threads = 1;
  auto backend = createBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "cpu");
  EXPECT_TRUE(backendUsesHostMemory(BackendKind::kCpu));
  EXPECT_FALSE(backendUsesHostMemory(BackendKind::kHip));
}

TEST(BackendFactoryTest, TheHipBackendIsBuiltInOrOneClearError) {
  BackendOptions options;
  options.kind = BackendKind::kHip;
  const auto backend = createBackend(options);
  if (!hipBackendCompiledIn()) {
    ASSERT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(backend.status().message(),
              "this tandem was built without the hip backend; rebuild with -DTANDEM_HIP=ON "
              "(ROCm) or -DTANDEM_CUDA=ON (NVIDIA)");
    return;
  }
  // a GPU build: a device, or the runtime's word that there is none
  if (backend.ok()) {
    EXPECT_EQ((*backend)->name(), "hip");
  } else {
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnavailable) << backend.status();
    EXPECT_NE(backend.status().message().find("no GPU device"), std::string::npos);
  }
}

}  // namespace
}  // namespace tandem::kernels
