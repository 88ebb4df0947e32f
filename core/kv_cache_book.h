// The bookkeeping of one sequence's KV cache, shared by the CPU runner (LlamaRunner) and the
// CUDA runner (CudaLlamaRunner), so both check their arguments and roll back the same way.
// Plain C++: the buffers themselves belong to the runner (host or device memory).
//
// Each layer's cache is one buffer [max_ctx, n_kv_heads, head_dim] of floats for K and one
// for V; slot s is row s. Slots [0, linear_len) hold the linear sequence (slot s at position
// s). A tree pass (tree speculation, SpecInfer-style) appends slots [linear_len, n_past)
// whose positions and parents the runner tracks; keep_path turns one root-to-node path back
// into linear slots. Rollback is truncation by position (O(1): nothing is freed or cleared;
// rows >= n_past are never read).
#pragma once

#include <cstddef>
#include <cstdint>

namespace speclab {

struct KvCacheBook {
  int64_t max_ctx = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_past = 0;      // slots in use
  int64_t linear_len = 0;  // slots [0, linear_len) are the linear sequence; <= n_past

  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // Floats (and bytes) of one layer's K (or V) buffer.
  size_t layer_floats() const;
  size_t layer_bytes() const { return sizeof(float) * layer_floats(); }
  // Float offset of slot `slot` inside a layer buffer.
  int64_t row_offset(int64_t slot) const { return slot * kv_dim(); }
  // A tree pass is pending: forward() needs keep_path or truncate first.
  bool has_tree() const { return linear_len < n_past; }

  // The one argument check of a forward pass over tokens[0..n_tokens): n_tokens >= 1,
  // n_past + n_tokens <= max_ctx, every id in [0, vocab). Throws InputError; changes nothing.
  void check_append(const int32_t* tokens, int64_t n_tokens, int64_t vocab) const;
  // After a linear pass wrote slots [n_past, n_past + n_tokens) (asserts: no tree pending).
  void commit_linear(int64_t n_tokens);
  // After a tree pass wrote slots [n_past, n_past + n_tokens): they are not linear yet.
  void commit_tree(int64_t n_tokens);
  // O(1) rollback: forgets slots >= n (0 <= n <= n_past; asserts).
  void truncate(int64_t n);
  // After the runner moved a kept tree path into slots [base, base + n): base must be
  // linear_len; everything from base + n on is forgotten (asserts).
  void keep_path(int64_t base, int64_t n);
};

// Throws InputError unless max_ctx, n_kv_heads and head_dim are > 0.
KvCacheBook kv_cache_book_make(int64_t max_ctx, int64_t n_kv_heads, int64_t head_dim);

}  // namespace speclab
