#include "server/kv_transport/block_copy.h"

#include <algorithm>
#include <cstring>

#include "server/kv_transport/block_checksum.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tandem::kv_transport {

namespace {

// below this a copy is left to memcpy: its lines are few and may be reused.
constexpr size_t kStreamingMinBytes = 16 << 10;

#if defined(__x86_64__)
// `bytes` is a multiple of 128 and `dst` 64-byte aligned.
__attribute__((target("avx512f"))) void streamAvx512(char* dst, const char* src, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 128) {
    __m512i a = _mm512_loadu_si512(src + i);
    __m512i b = _mm512_loadu_si512(src + i + 64);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
  }
}

__attribute__((target("avx2"))) void streamAvx2(char* dst, const char* src, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 128) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
}

void streamSse2(char* dst, const char* src, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 64) {
    for (size_t j = 0; j < 64; j += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + j));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + j), v);
    }
  }
}

using StreamFn = void (*)(char*, const char*, size_t);

StreamFn pickStream() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return streamAvx512;
  if (__builtin_cpu_supports("avx2")) return streamAvx2;
  return streamSse2;
}

const StreamFn kStream = pickStream();

// copies without fencing: the unaligned head and the tail go through memcpy.
void streamUnfenced(char* dst, const char* src, size_t bytes) {
  if (bytes < kStreamingMinBytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t head = (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64;
  std::memcpy(dst, src, head);
  const size_t body = (bytes - head) / 128 * 128;
  kStream(dst + head, src + head, body);
  std::memcpy(dst + head + body, src + head + body, bytes - head - body);
}

void fence() { _mm_sfence(); }
#else
void streamUnfenced(char* dst, const char* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void fence() {}
#endif

}  // namespace

void streamingCopy(void* dst, const void* src, size_t bytes) {
  streamUnfenced(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  fence();
}

uint64_t copyWithChecksum(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  BlockChecksum checksum;
  for (size_t off = 0; off < bytes; off += kCopySliceBytes) {
    const size_t n = std::min(kCopySliceBytes, bytes - off);
    // the copy's loads bring the slice into cache; hashing it then costs no
    // second trip to memory.
    streamUnfenced(d + off, s + off, n);
    checksum.update(s + off, n);
  }
  fence();
  return checksum.digest();
}

}  // namespace tandem::kv_transport
