#include "bench/planner_sim/sim_profile_model.h"

namespace tandem::bench {

SimWorkerModel profileModel(const planner::WorkerProfile& profile, int block_size) {
  SimWorkerModel m;
  m.block_size = block_size;
  m.kv_capacity_tokens = static_cast<int64_t>(profile.kvCapacityTokens());
  m.chunk_tokens = 2048;
  m.pack_prefills = false;
  m.max_batch = profile.maxBatch();
  m.reserve_kv = true;
  m.max_run_steps = 32;
  m.decode_step_s = [&profile](double batch, double context) { return profile.decodeItlMs(batch, context) / 1000; };
  m.prefill_s = [&profile](double tokens, double prompt) { return profile.prefillSeconds(tokens, prompt); };
  return m;
}

}  // namespace tandem::bench
