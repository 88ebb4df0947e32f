// The Llama forward pass over one sequence, with its KV cache.
//
// One LlamaRunner holds the activations and the KV cache of one sequence for one model.
// forward() runs a batch of new tokens (a prompt chunk, a decode step, or the k+1 tokens of
// a speculative verification) and appends their K/V; truncate() rolls the cache back after
// rejected drafts. The computation follows llama2.c's order, in FP32 with weights converted
// row by row from their stored dtype (see core/cpu_matmul.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/kv_cache_book.h"
#include "core/step_team.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner_params.h"
#include "models/llama/token_runner.h"

namespace speclab {

class LlamaRunner : public TokenRunner {
 public:
  // max_ctx = 0 -> min(config.max_seq_len, 4096). skip_layers (size n_layers, may be empty)
  // marks layers whose blocks are skipped entirely (self-speculation drafts; their cache is
  // never written nor allocated). The model must outlive the runner.
  LlamaRunner(const LlamaModel& model, int64_t max_ctx = 0, std::vector<bool> skip_layers = {});

  // Runs tokens[0..n_tokens) at positions [n_past, n_past + n_tokens), appends their K/V and
  // advances n_past. Returns logits [n_tokens, vocab] row-major, or only the last token's
  // row [vocab] if last_only; valid until the next call. Bad token ids, n_tokens < 1 or
  // n_past + n_tokens > max_ctx throw InputError and leave the runner unchanged.
  const float* forward(const int32_t* tokens, int64_t n_tokens, bool last_only = false) override;

  // O(1): forgets cache positions >= n (n <= n_past). The next forward starts at position n.
  void truncate(int64_t n) override;

  // Tree speculation (TokenRunner): nodes attend to their ancestors via attention_tree.
  // forward() requires a linear cache (no tree slots): call keep_path or truncate first.
  const float* forward_tree(const int32_t* tokens, const int32_t* parent_slot,
                            int64_t n_tokens) override;
  void keep_path(int64_t base, const int32_t* path, int64_t n) override;

  // Decode-sized batches (<= kMatmulItemsMaxTokens tokens) run as one step team by default:
  // the threads enter one parallel region per call and share every kernel's work items
  // (core/step_team.h); off: every kernel opens its own parallel region (the per-call path,
  // kept as the reference). The logits are bit-identical either way.
  void set_step_team(bool on) { step_team_ = on; }

  int64_t n_past() const override { return kv_.n_past; }
  int64_t max_ctx() const override { return kv_.max_ctx; }
  int64_t vocab() const override { return model_.config.vocab_size; }
  ForwardSplit last_forward_split() const override { return split_; }
  const LlamaModel& model() const { return model_; }

 private:
  void ensure_batch_capacity(int64_t n_tokens);
  // The layers and the head over n_tokens tokens appended at slots [n_past, n_past + n);
  // the caller commits them to kv_.
  // tree == nullptr: linear (causal) batch at positions n_past + t.
  struct TreeBatch {
    const int64_t* positions;     // [n_tokens]
    const int64_t* prefix_len;    // [n_tokens]  attention_tree arguments
    const int64_t* extra_offset;  // [n_tokens + 1]
    const int64_t* extra_slots;
  };
  const float* run(const int32_t* tokens, int64_t n_tokens, bool last_only, const TreeBatch* tree);
  // run() for n_tokens <= kMatmulItemsMaxTokens as one step team.
  const float* run_team(int64_t n_tokens, bool last_only, const TreeBatch* tree);

  const LlamaModel& model_;
  KvCacheBook kv_;                 // n_past, linear_len, max_ctx (shared with the CUDA runner)
  std::vector<bool> skip_layers_;  // [n_layers]
  LlamaRunnerParams params_;       // FP32 norms, inv_freq, RoPE pairing
  // Tree bookkeeping per cache slot: the slots [0, kv_.linear_len) hold the linear sequence
  // (slot s at position s); tree slots beyond have their own position and parent slot.
  std::vector<int64_t> slot_position_;  // [max_ctx]
  std::vector<int64_t> slot_parent_;    // [max_ctx] (-1: none)

  // KV cache, F32, per layer [max_ctx, n_kv_heads, head_dim]; null for skipped layers.
  // Left uninitialized: positions >= n_past are never read.
  std::vector<std::unique_ptr<float[]>> key_cache_;
  std::vector<std::unique_ptr<float[]>> value_cache_;

  // Activations for a batch of up to batch_capacity_ tokens.
  int64_t batch_capacity_ = 0;
  std::vector<float> x_;       // [n_tokens, dim]        residual stream
  std::vector<float> xb_;      // [n_tokens, dim]        normed input of a sublayer
  std::vector<float> xb2_;     // [n_tokens, dim]        sublayer output
  std::vector<float> q_;       // [n_tokens, n_heads * head_dim]
  std::vector<float> att_;     // [n_tokens, n_heads * head_dim]  attention output
  std::vector<float> hb_;      // [n_tokens, hidden_dim] gate, then silu(gate) * up
  std::vector<float> hb2_;     // [n_tokens, hidden_dim] up
  std::vector<float> logits_;  // [n_tokens or 1, vocab]
  ForwardSplit split_;         // of the last run()
  std::chrono::steady_clock::time_point head_start_;  // when the last run()'s head began

  // The step team (run_team): shared work counters, and per thread its own normed sublayer
  // input and packed activations (so that no thread waits for another's packing) and its
  // attention scores.
  struct TeamThread {
    std::vector<float> xb;      // [n_tokens, dim]
    std::vector<float> scores;  // [attention_item_scores(max_ctx)]
    MatmulActivations act;
  };
  bool step_team_ = true;
  StepTeam team_;
  std::vector<TeamThread> team_threads_;  // [threads]
  std::vector<float> rope_cos_;           // [n_tokens, head_dim/2]
  std::vector<float> rope_sin_;           // [n_tokens, head_dim/2]
};

}  // namespace speclab
