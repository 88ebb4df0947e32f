// The Llama forward pass on a CUDA device: the twin of LlamaRunner
// (models/llama/llama_runner.h) with the same API and the same order of operations, the
// weights uploaded once from a LlamaModel and the KV cache in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/cuda/cuda_buffer.h"
#include "core/cuda/cuda_draft_sample.h"
#include "core/cuda/cuda_graph.h"
#include "core/cuda/cuda_graph_book.h"
#include "core/cuda/cuda_kernel_timeline.h"
#include "core/cuda/cuda_weights.h"
#include "core/kv_cache_book.h"
#include "models/llama/cuda/cuda_llama_weights.h"
#include "models/llama/llama_model.h"
#include "models/llama/token_runner.h"

namespace speclab {

class CudaLlamaRunner : public TokenRunner {
 public:
  // As LlamaRunner: max_ctx = 0 -> min(config.max_seq_len, 4096); skip_layers marks layers
  // skipped entirely (neither uploaded nor cached). Uploads every used matrix as stored
  // (any DType) and the norms as F32; throws InputError for bad shapes, CudaError when the
  // device is missing or out of memory. The model may be freed after construction.
  // CUDA graphs start as SPECLAB_CUDA_GRAPHS says (unset: on; see set_cuda_graphs).
  CudaLlamaRunner(const LlamaModel& model, int64_t max_ctx = 0, std::vector<bool> skip_layers = {});
  ~CudaLlamaRunner();
  CudaLlamaRunner(const CudaLlamaRunner&) = delete;
  CudaLlamaRunner& operator=(const CudaLlamaRunner&) = delete;

  // LlamaRunner::forward: returns host logits [n_tokens, vocab] (or [vocab] if last_only),
  // valid until the next call. Synchronizes the stream.
  const float* forward(const int32_t* tokens, int64_t n_tokens, bool last_only = false) override;

  // The same pass leaving the logits on the device (for cuda_sampling_standardize and
  // cuda_speculative_verify, so only accepted ids cross to the host). Asynchronous; the
  // device pointer is valid until the next call.
  const float* forward_device(const int32_t* tokens, int64_t n_tokens, bool last_only = false);

  // The device round: forward_device -> cuda_sampling_standardize -> cuda_speculative_verify,
  // so only the verify record crosses to the host. q rows a CudaLlamaRunner drafter left on
  // the device are read in place, host rows are uploaded first. Synchronizes.
  // Declines (false) greedy lenience < 1, whose rule reads the raw softmax.
  bool verify_on_device(const int32_t* batch, int n_draft, const DraftRows& q,
                        const SamplingParams& sampling, const VerifyConfig& config, RngKey base,
                        VerifyOutcome* out) override;

  // The device draft step: forward_device (last row) -> cuda_sampling_standardize into
  // draft row `row` -> cuda_draft_sample at u; only the id and its scalars come back.
  // Synchronizes (the host needs the id to feed the next step). Never declines.
  bool draft_on_device(const int32_t* tokens, int64_t n_tokens, int row,
                       const SamplingParams& sampling, double u, DraftStep* out) override;
  // k draft steps with one synchronization: step 0 as draft_on_device(tokens, n_tokens, 0);
  // each step's draw kernel then writes its id and the next position into the step buffer
  // the next step's forward pass reads (a graph replay where graphs are on), so no id
  // crosses to the host until the k records come back in one copy. Every argument is
  // checked before any device work (the uniforms, the room for all k positions). Never
  // declines.
  bool draft_chain_on_device(const int32_t* tokens, int64_t n_tokens, int k,
                             const SamplingParams& sampling, const double* u,
                             DraftStep* out) override;
  void download_draft_rows(int n_rows, float* host) override;

  // CUDA graphs of the forward pass (core/cuda/cuda_graph_book.h): on, a step shape
  // (n_tokens, last_only) of at most 32 tokens runs plain once, is then captured once and
  // replayed; the token ids and n_past reach the kernels through device memory, so a replay
  // computes exactly what the plain launches compute. Off: every kernel is launched from the
  // host (the path measured on 2026-11-24, apart from the fused kernels). Switching off drops
  // the captured graphs.
  void set_cuda_graphs(bool on);
  bool cuda_graphs() const { return graph_book_.policy().enabled; }
  const CudaGraphStats& cuda_graph_stats() const { return graph_book_.stats(); }
  // The last capture failure's message ("" if none); the failed shape runs plain.
  const std::string& cuda_graph_failure() const { return graph_failure_; }

  // Times each kernel class of every following step on the device (core/cuda/
  // cuda_kernel_timeline.h: "embedding", "attn_norm", "qkv", "rope_kv", "attention",
  // "wo_add", "ffn_norm", "gate_up", "down_add", "final_norm", "head"); such steps run plain
  // launches even with graphs on. nullptr stops it. The timeline outlives the steps it times.
  void set_kernel_timeline(CudaKernelTimeline* timeline) { timeline_ = timeline; }

  // O(1): forgets cache positions >= n (n <= n_past).
  void truncate(int64_t n) override { kv_.truncate(n); }

  int64_t n_past() const override { return kv_.n_past; }
  int64_t max_ctx() const override { return kv_.max_ctx; }
  int64_t vocab() const override { return config_.vocab_size; }
  cudaStream_t stream() const { return stream_; }

 private:
  struct LayerCache {
    CudaBuffer<float> key_cache, value_cache;  // [max_ctx, n_kv_heads, head_dim] each
  };
  void ensure_batch_capacity(int64_t n_tokens);
  // Queues the pass's kernels on stream_ for a step of n_tokens whose ids and n_past are in
  // step_ (what a graph captures). Every pointer and size it passes depends only on
  // (n_tokens, last_only) and the buffers, never on n_past or the ids.
  void enqueue_forward(int64_t n_tokens, bool last_only);
  // The kernels of one step over what step_ holds (a graph replay, a capture or plain
  // launches), then n_past advances by n_tokens; returns the device logits.
  const float* run_step(int64_t n_tokens, bool last_only);
  void ensure_draft_rows(int n_rows);

  LlamaConfig config_;
  std::vector<bool> skip_layers_;  // [n_layers]
  cudaStream_t stream_ = nullptr;
  KvCacheBook kv_;  // the CPU runner's bookkeeping; linear only (no tree attention here)

  CudaLlamaWeights w_;              // models/llama/cuda/cuda_llama_weights.h
  std::vector<LayerCache> caches_;  // [n_layers]; a skipped layer's stays empty

  // Activations for up to batch_capacity_ tokens (device).
  int64_t batch_capacity_ = 0;
  CudaBuffer<int32_t> step_;        // [1 + n_tokens]: n_past, then the token ids
  std::vector<int32_t> step_host_;  // [1 + n_tokens], the host side of step_'s one copy
  CudaBuffer<float> x_;             // [n_tokens, dim]
  CudaBuffer<float> xb_;            // [n_tokens, dim]
  CudaBuffer<float> xb2_;           // [n_tokens, dim]
  CudaBuffer<float> q_;             // [n_tokens, n_heads * head_dim]
  CudaBuffer<float> k_cur_;         // [n_tokens, n_kv_heads * head_dim] before RoPE
  CudaBuffer<float> v_cur_;         // [n_tokens, n_kv_heads * head_dim]
  CudaBuffer<float> att_;           // [n_tokens, n_heads * head_dim]
  CudaBuffer<float> scores_;        // [min(n_tokens, graph max) * n_heads, max_ctx]
  CudaBuffer<float> hb_;            // [n_tokens, hidden_dim]
  CudaBuffer<float> hb2_;           // [n_tokens, hidden_dim]
  CudaBuffer<float> logits_;        // [n_tokens or 1, vocab]
  CudaBuffer<float> probs_;         // [n_draft + 1, vocab] standardized target rows
  CudaBuffer<float> draft_q_;       // [n_draft, vocab] a host drafter's q, uploaded
  CudaBuffer<float> draft_rows_;    // [>= rows drafted this round, vocab] q of draft_on_device
  int n_draft_rows_ = 0;            // rows [0, n) hold the last draft_on_device's round
  CudaBuffer<CudaDraftSample> chain_records_;  // [k] a draft chain's records
  std::vector<float> logits_host_;             // [n_tokens or 1, vocab]

  CudaGraphBook graph_book_;
  std::map<CudaGraphKey, CudaGraphExec> graphs_;  // one per captured step shape
  std::string graph_failure_;
  CudaKernelTimeline* timeline_ = nullptr;  // set_kernel_timeline
};

}  // namespace speclab
