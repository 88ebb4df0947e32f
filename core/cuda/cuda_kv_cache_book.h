// Bookkeeping of a device KV cache, as plain C++ (unit-tested without a GPU).
//
// The cache of one layer is one device buffer [max_ctx, n_kv_heads, head_dim] of floats for
// K and one for V. Only n_past changes at run time: appending n tokens writes rows
// [n_past, n_past + n) and truncating to n just lowers n_past (O(1), nothing is freed or
// cleared, rows >= n_past are never read).
#pragma once

#include <cstddef>
#include <cstdint>

namespace speclab {

struct CudaKvCacheBook {
  int64_t max_ctx = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_past = 0;

  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // Bytes of one layer's K (or V) buffer.
  size_t layer_bytes() const;
  // Float offset of cache row `pos` inside a layer buffer.
  int64_t row_offset(int64_t pos) const { return pos * kv_dim(); }
  // Throws InputError unless n_tokens >= 1 and n_past + n_tokens <= max_ctx.
  void check_append(int64_t n_tokens) const;
  // After the forward pass wrote rows [n_past, n_past + n_tokens).
  void commit(int64_t n_tokens);
  // O(1) rollback: forgets rows >= n (n <= n_past; asserts).
  void truncate(int64_t n);
};

// Throws InputError unless max_ctx, n_kv_heads, head_dim are > 0.
CudaKvCacheBook cuda_kv_cache_book_make(int64_t max_ctx, int64_t n_kv_heads, int64_t head_dim);

}  // namespace speclab
