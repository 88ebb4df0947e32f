// When a CUDA graph of a forward pass is captured, replayed, or not used: the bookkeeping of
// CudaLlamaRunner's graphs as plain C++, unit-tested without a GPU
// (tests/cuda/test_cuda_graph_book.cpp).
//
// A decode step launches some 10 to 15 kernels per layer from the host; on an H100 the 1B and
// 3B BF16 steps ran at 28% and 39% of the copy bandwidth, launch-bound (docs/device.md). A CUDA
// graph queues the whole step with one launch. Its kernels' arguments are frozen at capture,
// so a graph serves one step shape: the key is (n_tokens, last_only) (one sequence: no batch
// dimension), and what changes between replays (token ids, n_past) lives in device memory the
// kernels read. Like llama.cpp's CUDA backend and gpt-fast's "reduce-overhead" compile, the
// first call of a shape runs plain (it warms lazy module loading and cuBLAS's handle, which
// must not happen inside a capture, and keeps one-off prompt lengths from being captured);
// later calls capture once and then replay. Buffers that move (a larger batch reallocates
// the activations) invalidate every graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace speclab {

struct CudaGraphKey {
  int64_t n_tokens = 0;
  bool last_only = false;
  bool operator<(const CudaGraphKey& o) const {
    return n_tokens != o.n_tokens ? n_tokens < o.n_tokens : last_only < o.last_only;
  }
};

struct CudaGraphPolicy {
  bool enabled = false;
  // Steps of more tokens run plain: prefill lengths vary per prompt and their launches are
  // amortized over many tokens. 32 covers a speculative round's k + 1 for gamma <= 31.
  int64_t max_tokens = 32;
  int warmup_calls = 1;    // plain calls of a key before it is captured
  size_t max_graphs = 64;  // distinct keys captured at most (each holds device memory)
};

enum class CudaGraphAction {
  kPlain,    // launch the kernels one by one
  kCapture,  // capture this call's launches into a graph, then launch it
  kReplay,   // launch the key's graph
};
const char* cuda_graph_action_name(CudaGraphAction a);

struct CudaGraphStats {
  int64_t plain = 0, captures = 0, replays = 0, failures = 0, invalidations = 0;
};

class CudaGraphBook {
 public:
  explicit CudaGraphBook(CudaGraphPolicy policy = {}) : policy_(policy) {}

  // What the next forward pass of this key does; counts it.
  CudaGraphAction next(const CudaGraphKey& key);
  // After kCapture: the graph exists (later calls replay) or the capture failed (the key
  // runs plain from now on; the call itself ran plain).
  void captured(const CudaGraphKey& key);
  void capture_failed(const CudaGraphKey& key);
  // The buffers the graphs captured moved: every graph is gone; keys start over (warm-up
  // again, as the first call after a reallocation is a new shape for the allocator too).
  void invalidate();

  void set_enabled(bool on) { policy_.enabled = on; }
  const CudaGraphPolicy& policy() const { return policy_; }
  const CudaGraphStats& stats() const { return stats_; }
  size_t n_graphs() const { return n_graphs_; }

 private:
  enum class State { kWarming, kCaptured, kFailed };
  struct Entry {
    int calls = 0;
    State state = State::kWarming;
  };
  CudaGraphPolicy policy_;
  std::map<CudaGraphKey, Entry> keys_;
  size_t n_graphs_ = 0;
  CudaGraphStats stats_;
};

// SPECLAB_CUDA_GRAPHS: unset or empty -> `fallback`, "0" -> off, "1" -> on; anything else is
// an InputError naming the variable and the value.
bool cuda_graphs_env_value(const char* value, bool fallback);
// The environment's SPECLAB_CUDA_GRAPHS; unset or empty: on (an H200 run of 2026-12-04 found
// every replayed step's logits bit-identical to plain launches, whole speculative requests
// equal, no capture failing, and steps 5-20% faster; docs/device.md). 0 turns them off.
bool cuda_graphs_from_env();

}  // namespace speclab
