#include "core/kv_cache_book.h"

#include <algorithm>

#include "core/error.h"

namespace speclab {

size_t KvCacheBook::layer_floats() const {
  return static_cast<size_t>(max_ctx) * static_cast<size_t>(kv_dim());
}

void KvCacheBook::check_append(const int32_t* tokens, int64_t n_tokens, int64_t vocab) const {
  SPECLAB_INPUT_CHECK(n_tokens >= 1, "forward needs at least one token, got ", n_tokens);
  SPECLAB_INPUT_CHECK(n_past + n_tokens <= max_ctx, "context of ", n_past + n_tokens,
                      " tokens exceeds the limit ", max_ctx);
  for (int64_t t = 0; t < n_tokens; t++) {
    SPECLAB_INPUT_CHECK(tokens[t] >= 0 && tokens[t] < vocab, "token id ", tokens[t], " at index ",
                        t, " is outside the vocabulary [0, ", vocab, ")");
  }
}

void KvCacheBook::commit_linear(int64_t n_tokens) {
  SPECLAB_ASSERT(!has_tree() && n_tokens >= 1 && n_past + n_tokens <= max_ctx);
  n_past += n_tokens;
  linear_len = n_past;
}

void KvCacheBook::commit_tree(int64_t n_tokens) {
  SPECLAB_ASSERT(n_tokens >= 1 && n_past + n_tokens <= max_ctx);
  n_past += n_tokens;
}

void KvCacheBook::truncate(int64_t n) {
  SPECLAB_ASSERT(n >= 0 && n <= n_past);
  n_past = n;
  linear_len = std::min(linear_len, n);
}

void KvCacheBook::keep_path(int64_t base, int64_t n) {
  SPECLAB_ASSERT(base == linear_len && n >= 0 && base + n <= n_past);
  n_past = linear_len = base + n;
}

KvCacheBook kv_cache_book_make(int64_t max_ctx, int64_t n_kv_heads, int64_t head_dim) {
  SPECLAB_INPUT_CHECK(max_ctx > 0 && n_kv_heads > 0 && head_dim > 0,
                      "KV cache: max_ctx, n_kv_heads and head_dim must be > 0, got ", max_ctx, ", ",
                      n_kv_heads, ", ", head_dim);
  KvCacheBook b;
  b.max_ctx = max_ctx;
  b.n_kv_heads = n_kv_heads;
  b.head_dim = head_dim;
  return b;
}

}  // namespace speclab
