// Rotary position embedding, in place, for both pair layouts: rotate-half
// (i, i + d/2) as HF stores q/k, interleaved (2i, 2i + 1) as GGUF's llama.
// The inverse frequencies (plain or llama3-scaled) come precomputed from
// kernels/rope_frequencies.h, so every backend rotates by the same angles.
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/kv_cache.h"

namespace tandem::kernels::hip {

// x [tokens, heads * head_dim] F32, positions [tokens] I32, inv_freq
// [head_dim / 2] F32; interleaved picks the pair layout.
hipError_t launchRope(float* x, const int32_t* positions, const float* inv_freq, int64_t tokens,
                      int heads, int head_dim, bool interleaved, hipStream_t stream);

// one launch for a layer's rope of q and k and its KV write: q [tokens,
// q_heads * head_dim] and k [tokens, kv_heads * head_dim] rotated in place
// as launchRope, then k and v written to the cache slots as launchWriteKv
// (the same bits as the three launches).
hipError_t launchRopeWriteKv(float* q, float* k, const float* v, const int32_t* positions,
                             const float* inv_freq, int64_t tokens, int q_heads, int kv_heads,
                             int head_dim, bool interleaved, const int32_t* slots, void* cache,
                             const KvShape& shape, int layer, hipStream_t stream);

}  // namespace tandem::kernels::hip
