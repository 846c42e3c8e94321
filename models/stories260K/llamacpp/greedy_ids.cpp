// llama.cpp greedy continuations by token id: reads lines of space-separated
// prompt ids (with BOS) on stdin; for each prints the n greedy completion ids,
// a tab, their text (backslash and newline escaped as \\ and \n), a tab and
// the gap between the top two logits at each step. The KV cache is F32 (as
// tandem's) unless KV_F16 is set (llama.cpp's default).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s model.gguf n_predict < prompts\n", argv[0]); return 2; }
  const int n_predict = std::atoi(argv[2]);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<llama_token> toks;
    std::istringstream in(line);
    for (llama_token t; in >> t;) toks.push_back(t);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = toks.size() + n_predict;
    cp.n_batch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = 1;
    if (std::getenv("KV_F16") == nullptr) cp.type_k = cp.type_v = GGML_TYPE_F32;
    llama_context* ctx = llama_init_from_model(model, cp);
    llama_sampler* smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
    llama_batch batch = llama_batch_get_one(toks.data(), toks.size());
    llama_token next;
    std::string text, gaps;
    for (int i = 0; i < n_predict; ++i) {
      if (llama_decode(ctx, batch) != 0) return 1;
      next = llama_sampler_sample(smpl, ctx, -1);
      const float* lg = llama_get_logits_ith(ctx, -1);
      float second = -1e30f;
      for (int k = 0; k < n_vocab; ++k) if (k != next && lg[k] > second) second = lg[k];
      char g[32];
      snprintf(g, sizeof(g), i == 0 ? "%.6f" : " %.6f", lg[next] - second);
      gaps += g;
      printf(i == 0 ? "%d" : " %d", next);
      char piece[256];
      const int n = llama_token_to_piece(vocab, next, piece, sizeof(piece), 0, true);
      for (int k = 0; k < n; ++k) {
        if (piece[k] == '\\') text += "\\\\";
        else if (piece[k] == '\n') text += "\\n";
        else text += piece[k];
      }
      batch = llama_batch_get_one(&next, 1);
    }
    printf("\t%s\t%s\n", text.c_str(), gaps.c_str());
    llama_sampler_free(smpl);
    llama_free(ctx);
  }
  llama_model_free(model);
  return 0;
}
