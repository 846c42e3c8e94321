#include "kernels/backend.h"

#include <numeric>
#include <vector>

namespace tandem::kernels {

namespace {

// staging memory seen as a storage of ids.size() consecutive blocks.
KvCacheView stagingView(const void* staging, const KvCacheView& cache, size_t n) {
  return KvCacheView{const_cast<void*>(staging), cache.layout, static_cast<int>(n)};
}

}  // namespace

void Backend::gatherBlocks(const KvCacheView& cache, std::span<const int32_t> ids,
                           void* staging) {
  std::vector<int32_t> seq(ids.size());
  std::iota(seq.begin(), seq.end(), 0);
  copyBlocks(cache, ids, stagingView(staging, cache, ids.size()), seq);
}

void Backend::scatterBlocks(const void* staging, std::span<const int32_t> ids,
                            const KvCacheView& cache) {
  std::vector<int32_t> seq(ids.size());
  std::iota(seq.begin(), seq.end(), 0);
  copyBlocks(stagingView(staging, cache, ids.size()), seq, cache, ids);
}

}  // namespace tandem::kernels
