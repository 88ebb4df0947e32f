// What the batch-invariance tests of the CPU (tests/llama/test_batched_forward.cpp) and the
// CUDA (tests/cuda/test_cuda_batched_forward.cpp) batched runners share: the small model they
// run, the bitwise comparison, and the planted bugs, a test-only subclass of either runner
// overriding its two seams (the product never does).
#pragma once

#include <cstdint>
#include <cstring>

#include "models/llama/llama_config.h"
#include "models/llama/llama_model.h"

namespace speclab {
namespace batched_test {

constexpr int64_t kSlots = 4;
constexpr int64_t kCtx = 96;

// Small shapes whose matrix widths (64, 96) are multiples of the Q8_0 block (32) and of the
// CUDA BF16 kernel's 8-weight vectors.
inline LlamaConfig batch_config() {
  LlamaConfig c;
  c.vocab_size = 64;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.max_seq_len = 128;
  c.tie_embeddings = true;
  return c;
}

inline bool same_bits(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

enum class Plant {
  kNone,
  kCrossSlotAttention,  // slot 1's rows attend over slot 0's cache instead of their own
  kRollbackOffByOne,    // truncate(2, n) keeps n + 1 positions when n < n_past(2)
};

// Runner: BatchedLlamaRunner or CudaBatchedLlamaRunner (the same constructor and seams).
template <class Runner>
class PlantedRunner : public Runner {
 public:
  PlantedRunner(const LlamaModel& m, int64_t n_slots, int64_t max_ctx, Plant plant)
      : Runner(m, n_slots, max_ctx), plant_(plant) {}

 protected:
  int64_t attention_cache_slot(int64_t row_slot) const override {
    return plant_ == Plant::kCrossSlotAttention && row_slot == 1 ? 0 : row_slot;
  }
  int64_t rollback_keep(int64_t slot, int64_t n) const override {
    return plant_ == Plant::kRollbackOffByOne && slot == 2 && n < this->n_past(slot) ? n + 1 : n;
  }

 private:
  Plant plant_;
};

}  // namespace batched_test
}  // namespace speclab
