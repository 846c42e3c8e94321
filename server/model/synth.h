// `tandem model synth`: a deterministic random-weight Llama-family model of
// any shape, as an HF directory or a GGUF file, for load tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/dtype.h"

namespace tandem::model {

struct SynthShape {
  int dim = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;  // 0: = heads
  int ffn = 0;
  int vocab = 0;     // 0: the tokenizer's vocabulary size (needs vocab_from)
  int head_dim = 0;  // 0: dim / heads
  int max_pos = 2048;
  std::string arch = "llama";  // llama, mistral, qwen2, qwen3, qwen3moe, mixtral
  // a mixture of experts (arch qwen3moe or mixtral, which need it): every
  // layer's FFN is `experts` experts of expert_ffn (0: ffn) of which
  // experts_used run a token. In GGUF a layer's experts are llama.cpp's
  // stacked ffn_{gate,up,down}_exps and the router ffn_gate_inp is F32 (as
  // llama.cpp's converter keeps it; values rounded through the file's dtype,
  // so HF and GGUF hold the same model); Mixtral is GGUF "llama" with
  // llama.expert_count.
  int experts = 0;
  int experts_used = 0;
  int expert_ffn = 0;
  // "llama3": Llama 3.1's rope scaling (factor 8, low_freq_factor 1,
  // high_freq_factor 4, original_max_position_embeddings 8192), as an HF
  // rope_scaling object or a GGUF rope_freqs.weight tensor; llama and
  // mistral only (llama.cpp reads rope_freqs for those). Empty: none.
  std::string rope_scaling;
};

struct SynthOptions {
  enum class Format { kHf, kGguf };
  std::string out;  // a directory (hf) or a .gguf file path
  Format format = Format::kHf;
  SynthShape shape;
  // f32, f16 or bf16; in GGUF also q8_0, q4_0, q4_k or q6_k for every
  // matrix (1-D tensors stay f32).
  DType dtype = DType::kF32;
  // GGUF only: llama.cpp's Q4_K_M mix instead of one dtype for every
  // matrix: q6_k for output.weight and for the attn_v / ffn_down of the
  // layers llama.cpp's use_more_bits() picks (the first and last eighth and
  // every third between), q4_k for the rest; a matrix whose rows are not a
  // multiple of 256 falls back to q8_0 (llama.cpp would use q5_0 / q8_0).
  bool q4_k_m = false;
  // an HF dir with tokenizer.json or a .gguf whose tokenizer.* keys to copy.
  std::string vocab_from;
  uint64_t seed = 0;
};

// parses "dim=768,layers=12,heads=12,kv_heads=12,ffn=2048,vocab=32000"
// (also head_dim=, max_pos=, arch=, rope_scaling=llama3, experts=,
// experts_used=, expert_ffn=). InvalidArgument naming the bad part.
absl::StatusOr<SynthShape> parseShape(const std::string& spec);

// writes the model. The same options give byte-identical files. Weights are
// uniform with standard deviation 0.02 from a counter-based PRNG keyed by
// (seed, HF tensor name, element), so the HF and GGUF files of one seed hold
// the same model (GGUF q/k rows permuted to llama.cpp's interleaved layout);
// norm weights are 1 and biases 0. In GGUF, 1-D tensors are always f32, as
// llama.cpp's converter writes them. With --vocab-from, the tokenizer is
// copied when the formats match and converted when they do not (an HF
// tokenizer.json into GGUF keys, a GGUF vocabulary into tokenizer.json).
absl::Status writeSynthModel(const SynthOptions& options);

}  // namespace tandem::model
