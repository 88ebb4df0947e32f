// Causal multi-head attention of a few new query tokens over a KV cache, with grouped-query
// attention (GQA): query head h reads kv head h / (n_heads / n_kv_heads).
#pragma once

#include <cstddef>
#include <cstdint>

namespace speclab {

// Query token t sits at position n_past + t and attends to cache positions [0, n_past + t].
// The cache must already hold the new tokens' K/V at positions [n_past, n_past + n_tokens).
//   out:     [n_tokens, n_heads, head_dim]
//   q:       [n_tokens, n_heads, head_dim]   (RoPE applied)
//   k_cache: [>= n_past + n_tokens, n_kv_heads, head_dim]   (RoPE applied)
//   v_cache: [>= n_past + n_tokens, n_kv_heads, head_dim]
// Scores are scaled by 1/sqrt(head_dim). Parallel over (token, head) with each output
// computed by one thread in a fixed order, so results depend only on cache positions that
// are read, never on what lies beyond them or on the thread count.
void attention(float* out, const float* q, const float* k_cache, const float* v_cache,
               int64_t n_tokens, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
               int64_t head_dim);

// Tree attention (speculative token trees, seed 004 section 2.1): query t attends to the
// cache positions [0, prefix_len[t]) followed by extra_slots[extra_offset[t] ..
// extra_offset[t+1]) (ascending, each >= prefix_len[t]: the query's ancestors in the tree
// and itself). The cache must already hold every listed slot.
//   out, q:        [n_tokens, n_heads, head_dim]
//   prefix_len:    [n_tokens]
//   extra_offset:  [n_tokens + 1]    extra_slots: [extra_offset[n_tokens]]
// A query that reads the positions [0, n) gets bit-identical output to attention() with
// the same n, so a path of the tree computes exactly what the linear sequence would.
void attention_tree(float* out, const float* q, const float* k_cache, const float* v_cache,
                    int64_t n_tokens, const int64_t* prefix_len, const int64_t* extra_offset,
                    const int64_t* extra_slots, int64_t n_heads, int64_t n_kv_heads,
                    int64_t head_dim);

// Attention runs as AVX-512 code where the CPU has it (chosen at run time), with the plain
// code's arithmetic bit for bit (same lanes, same order, no FMA); true: the plain code (tests
// compare the two). Not thread-safe: call it between kernel calls.
void attention_force_plain(bool plain);

// One (query token t, head h) of attention() / attention_tree(), the unit they hand to their
// threads (the step team calls these directly): writes out's [t, h] head vector.
//   scores: scratch [n_past + t + 1] (tree: [prefix_len[t] + the token's extra slots])
void attention_one(float* out, const float* q, const float* k_cache, const float* v_cache,
                   int64_t t, int64_t h, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                   int64_t head_dim, float* scores);
void attention_tree_one(float* out, const float* q, const float* k_cache, const float* v_cache,
                        int64_t t, int64_t h, const int64_t* prefix_len,
                        const int64_t* extra_offset, const int64_t* extra_slots, int64_t n_heads,
                        int64_t n_kv_heads, int64_t head_dim, float* scores);

// The work items attention() hands its threads (the step team and the batched runner call
// them directly): per query token, attention_items_per_token(n_heads, n_kv_heads) items; on
// the AVX-512 path item j is up to 4 query heads of one KV group at once, so each K and V
// slice is read once for them; on the plain path one head. Either way each head's output is
// attention_one's, bit for bit. The count depends on the path in use: ask before each call.
//   scores: scratch [attention_item_scores(n_past + t + 1)]
int64_t attention_items_per_token(int64_t n_heads, int64_t n_kv_heads);
size_t attention_item_scores(int64_t n_ctx);
void attention_item(float* out, const float* q, const float* k_cache, const float* v_cache,
                    int64_t t, int64_t item, int64_t n_past, int64_t n_heads, int64_t n_kv_heads,
                    int64_t head_dim, float* scores);

}  // namespace speclab
