// The fused steps of kernels/backend.h (addRmsNorm, ropeWriteKv) on every
// backend: the same bits as the ops each names, run one by one on the same
// backend (a backend that runs a step as one launch changes nothing).
#include <cmath>
#include <cstring>
#include <numeric>

#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

using FusedOpsTest = BackendTest;

TEST_P(FusedOpsTest, AddRmsNormIsTheAddThenTheNorm) {
  for (DType wd : {DType::kF32, DType::kBF16}) {
    for (int64_t dim : {37, 300, 1024}) {
      const Tensor x = random(DType::kF32, 5, dim, 2.0f);
      const Tensor delta = random(DType::kF32, 5, dim, 2.0f);
      const Tensor w = random(wd, 1, dim);
      // fused, the output over delta (as the model runner calls it)
      const Tensor fx = toDevice(x), fd = toDevice(delta), dw = toDevice(w);
      backend().addRmsNorm(fx, fd, dw, 1e-5f, fd);
      // the ops one by one
      const Tensor sx = toDevice(x), sd = toDevice(delta);
      const Tensor sout = toDevice(zeros(DType::kF32, 5, dim));
      backend().add(sx, sd, sx);
      backend().rmsNorm(sx, dw, 1e-5f, sout);
      expectNear(toHost(fx), toHost(sx), 0.0f);
      expectNear(toHost(fd), toHost(sout), 0.0f);
      // and the reference, within the norm's tolerance
      const Tensor want_x = copyOf(x), want = zeros(DType::kF32, 5, dim);
      ref_.add(want_x, delta, want_x);
      ref_.rmsNorm(want_x, w, 1e-5f, want);
      expectNear(toHost(fd), want, tol().norm);
    }
  }
}

TEST_P(FusedOpsTest, RopeWriteKvIsTheTwoRopesThenTheWrite) {
  for (DType kv_dtype : {DType::kF32, DType::kF16}) {
    for (RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
      constexpr int kHeads = 4, kKvHeads = 2, kD = 32, kTokens = 7, kLayers = 2;
      const kvcache::KvLayout layout{kLayers, kKvHeads, kD, 4, kv_dtype};
      const int blocks = 4;
      RopeParams p;
      p.style = style;
      p.head_dim = kD;
      p.theta = 500000.0f;
      const Tensor q = random(DType::kF32, kTokens, kHeads * kD);
      const Tensor k = random(DType::kF32, kTokens, kKvHeads * kD);
      const Tensor v = random(DType::kF32, kTokens, kKvHeads * kD);
      const Tensor pos = ints({3, 4, 5, 6, 7, 8, 900});
      const Tensor slots = ints({3, 4, 5, 6, 7, 8, 15});
      const size_t cache_bytes = layout.blockBytes() * blocks;
      const Tensor zero_cache = zeros(DType::kI32, 1, static_cast<int64_t>(cache_bytes / 4));
      const Tensor dpos = toDevice(pos), dslots = toDevice(slots);
      const Tensor fq = toDevice(q), fk = toDevice(k), fv = toDevice(v);
      const Tensor fcache = toDevice(zero_cache);
      backend().ropeWriteKv(fq, fk, fv, dpos, p, dslots, {fcache.data, layout, blocks}, 1);
      const Tensor sq = toDevice(q), sk = toDevice(k), sv = toDevice(v);
      const Tensor scache = toDevice(zero_cache);
      backend().rope(sq, dpos, p);
      backend().rope(sk, dpos, p);
      backend().writeKv(sk, sv, dslots, {scache.data, layout, blocks}, 1);
      expectNear(toHost(fq), toHost(sq), 0.0f);
      expectNear(toHost(fk), toHost(sk), 0.0f);
      const Tensor fc = toHost(fcache), sc = toHost(scache);
      EXPECT_EQ(std::memcmp(fc.data, sc.data, cache_bytes), 0) << "the caches differ";
    }
  }
}

TANDEM_ON_EVERY_BACKEND(Parity, FusedOpsTest);

}  // namespace
}  // namespace tandem::kernels
