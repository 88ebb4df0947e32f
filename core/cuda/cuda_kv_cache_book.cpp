#include "core/cuda/cuda_kv_cache_book.h"

#include "core/error.h"

namespace speclab {

size_t CudaKvCacheBook::layer_bytes() const {
  return sizeof(float) * static_cast<size_t>(max_ctx) * static_cast<size_t>(kv_dim());
}

void CudaKvCacheBook::check_append(int64_t n_tokens) const {
  SPECLAB_INPUT_CHECK(n_tokens >= 1, "forward needs at least one token, got ", n_tokens);
  SPECLAB_INPUT_CHECK(n_past + n_tokens <= max_ctx, "context of ", n_past + n_tokens,
                      " tokens exceeds the limit ", max_ctx);
}

void CudaKvCacheBook::commit(int64_t n_tokens) {
  SPECLAB_ASSERT(n_tokens >= 1 && n_past + n_tokens <= max_ctx);
  n_past += n_tokens;
}

void CudaKvCacheBook::truncate(int64_t n) {
  SPECLAB_ASSERT(n >= 0 && n <= n_past);
  n_past = n;
}

CudaKvCacheBook cuda_kv_cache_book_make(int64_t max_ctx, int64_t n_kv_heads, int64_t head_dim) {
  SPECLAB_INPUT_CHECK(max_ctx > 0 && n_kv_heads > 0 && head_dim > 0,
                      "KV cache: max_ctx, n_kv_heads and head_dim must be > 0, got ", max_ctx, ", ",
                      n_kv_heads, ", ", head_dim);
  CudaKvCacheBook b;
  b.max_ctx = max_ctx;
  b.n_kv_heads = n_kv_heads;
  b.head_dim = head_dim;
  return b;
}

}  // namespace speclab
