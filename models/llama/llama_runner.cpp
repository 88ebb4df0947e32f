#include "models/llama/llama_runner.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "core/cpu_attention.h"
#include "core/cpu_matmul.h"
#include "core/cpu_ops.h"
#include "core/cpu_rope.h"
#include "core/error.h"
#include "core/threads.h"

namespace speclab {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

LlamaRunner::LlamaRunner(const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip_layers)
    : model_(model), skip_layers_(std::move(skip_layers)) {
  const LlamaConfig& c = model.config;
  kv_ = kv_cache_book_make(token_runner_check_setup(model, max_ctx, &skip_layers_), c.n_kv_heads,
                           c.head_dim);
  params_ = llama_runner_params_make(model, skip_layers_);
  key_cache_.resize(c.n_layers);
  value_cache_.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers_[l]) continue;
    // new float[] without () leaves the pages untouched until written.
    key_cache_[l].reset(new float[kv_.layer_floats()]);
    value_cache_[l].reset(new float[kv_.layer_floats()]);
  }
  slot_position_.assign(static_cast<size_t>(kv_.max_ctx), 0);
  slot_parent_.assign(static_cast<size_t>(kv_.max_ctx), -1);
}

void LlamaRunner::ensure_batch_capacity(int64_t n_tokens) {
  if (n_tokens <= batch_capacity_) return;
  const LlamaConfig& c = model_.config;
  const int64_t q_dim = c.n_heads * c.head_dim;
  x_.resize(n_tokens * c.dim);
  xb_.resize(n_tokens * c.dim);
  xb2_.resize(n_tokens * c.dim);
  q_.resize(n_tokens * q_dim);
  att_.resize(n_tokens * q_dim);
  hb_.resize(n_tokens * c.hidden_dim);
  hb2_.resize(n_tokens * c.hidden_dim);
  batch_capacity_ = n_tokens;
}

const float* LlamaRunner::forward(const int32_t* tokens, int64_t n_tokens, bool last_only) {
  kv_.check_append(tokens, n_tokens, model_.config.vocab_size);
  SPECLAB_ASSERT(!kv_.has_tree());  // a tree is pending: keep_path/truncate first
  const int64_t n_past = kv_.n_past;
  for (int64_t t = 0; t < n_tokens; t++) {
    slot_position_[n_past + t] = n_past + t;
    slot_parent_[n_past + t] = n_past + t - 1;
  }
  const float* logits = run(tokens, n_tokens, last_only, nullptr);
  kv_.commit_linear(n_tokens);
  return logits;
}

const float* LlamaRunner::forward_tree(const int32_t* tokens, const int32_t* parent_slot,
                                       int64_t n_tokens) {
  kv_.check_append(tokens, n_tokens, model_.config.vocab_size);
  // Per node: position, and the context it reads: the linear prefix up to its first
  // linear ancestor, then its tree ancestors and itself in ascending slot order.
  std::vector<int64_t> positions(n_tokens), prefix_len(n_tokens), offset(n_tokens + 1, 0);
  std::vector<int64_t> extra;  // concatenated ascending slot lists
  std::vector<int64_t> chain;
  for (int64_t i = 0; i < n_tokens; i++) {
    const int64_t slot = kv_.n_past + i;
    const int64_t parent = parent_slot[i];
    SPECLAB_INPUT_CHECK(parent >= -1 && parent < slot, "forward_tree: node ", i,
                        " has parent slot ", parent, ", expected -1..", slot - 1);
    slot_parent_[slot] = parent;
    slot_position_[slot] = parent < 0 ? 0 : slot_position_[parent] + 1;
    positions[i] = slot_position_[slot];
    chain.clear();
    int64_t s = slot;
    while (s >= kv_.linear_len) {  // tree slots, walking up to the linear sequence
      chain.push_back(s);
      s = slot_parent_[s];
    }
    prefix_len[i] = s + 1;  // s = -1 or the linear ancestor
    extra.insert(extra.end(), chain.rbegin(), chain.rend());
    offset[i + 1] = static_cast<int64_t>(extra.size());
  }
  const TreeBatch tree{positions.data(), prefix_len.data(), offset.data(), extra.data()};
  const float* logits = run(tokens, n_tokens, /*last_only=*/false, &tree);
  kv_.commit_tree(n_tokens);
  return logits;
}

void LlamaRunner::keep_path(int64_t base, const int32_t* path, int64_t n) {
  SPECLAB_ASSERT(base == kv_.linear_len && n >= 0 && base + n <= kv_.n_past);
  const LlamaConfig& c = model_.config;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  int64_t prev = base - 1;
  for (int64_t j = 0; j < n; j++) {
    const int64_t from = path[j];
    SPECLAB_ASSERT(from >= base + j && from < kv_.n_past && slot_parent_[from] == prev);
    prev = from;
    const int64_t to = base + j;  // to <= from and later sources lie above from: no overlap
    if (from != to) {
      for (int64_t l = 0; l < c.n_layers; l++) {
        if (skip_layers_[l]) continue;
        std::copy_n(key_cache_[l].get() + from * kv_dim, kv_dim, key_cache_[l].get() + to * kv_dim);
        std::copy_n(value_cache_[l].get() + from * kv_dim, kv_dim,
                    value_cache_[l].get() + to * kv_dim);
      }
    }
    slot_position_[to] = to;
    slot_parent_[to] = to - 1;
  }
  kv_.keep_path(base, n);
}

const float* LlamaRunner::run(const int32_t* tokens, int64_t n_tokens, bool last_only,
                              const TreeBatch* tree) {
  const LlamaConfig& c = model_.config;
  const LlamaWeights& w = model_.weights;
  ensure_batch_capacity(n_tokens);
  const int64_t dim = c.dim;
  const int64_t n_past = kv_.n_past;
  float* x = x_.data();
  const Clock::time_point start = Clock::now();

  // Token embeddings: one row of tok_embeddings per token, converted to FP32.
  for (int64_t t = 0; t < n_tokens; t++)
    weights_row_to_f32(x + t * dim, w.tok_embeddings, tokens[t]);
  if (step_team_ && n_tokens <= kMatmulItemsMaxTokens) {
    const float* logits = run_team(n_tokens, last_only, tree);
    const Clock::time_point end = Clock::now();
    split_.head_s = seconds_between(head_start_, end);
    split_.layers_s = seconds_between(start, head_start_);
    return logits;
  }

  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers_[l]) continue;
    const LlamaLayerWeights& lw = w.layers[l];
    float* key_cache = key_cache_[l].get();
    float* value_cache = value_cache_[l].get();
    // The new tokens' K/V rows go straight into the cache: [n_tokens, n_kv_heads, head_dim].
    float* k_new = key_cache + kv_.row_offset(n_past);
    float* v_new = value_cache + kv_.row_offset(n_past);

    // Attention sublayer: x += wo · attention(rope(wq·xb), rope(wk·xb), wv·xb).
    rmsnorm(xb_.data(), x, params_.attn_norm[l].data(), n_tokens, dim, c.rms_norm_eps);
    matmul_weights(q_.data(), xb_.data(), lw.wq, n_tokens);
    matmul_weights(k_new, xb_.data(), lw.wk, n_tokens);
    matmul_weights(v_new, xb_.data(), lw.wv, n_tokens);
    if (tree) {
      rope_apply_positions(q_.data(), n_tokens, c.n_heads, c.head_dim, tree->positions,
                           params_.inv_freq.data(), params_.rope_interleaved);
      rope_apply_positions(k_new, n_tokens, c.n_kv_heads, c.head_dim, tree->positions,
                           params_.inv_freq.data(), params_.rope_interleaved);
      attention_tree(att_.data(), q_.data(), key_cache, value_cache, n_tokens, tree->prefix_len,
                     tree->extra_offset, tree->extra_slots, c.n_heads, c.n_kv_heads, c.head_dim);
    } else {
      rope_apply(q_.data(), n_tokens, c.n_heads, c.head_dim, n_past, params_.inv_freq.data(),
                 params_.rope_interleaved);
      rope_apply(k_new, n_tokens, c.n_kv_heads, c.head_dim, n_past, params_.inv_freq.data(),
                 params_.rope_interleaved);
      attention(att_.data(), q_.data(), key_cache, value_cache, n_tokens, n_past, c.n_heads,
                c.n_kv_heads, c.head_dim);
    }
    matmul_weights(xb2_.data(), att_.data(), lw.wo, n_tokens);
    add_inplace(x, xb2_.data(), n_tokens * dim);

    // MLP sublayer: x += w_down · (silu(w_gate·xb) * (w_up·xb)).
    rmsnorm(xb_.data(), x, params_.ffn_norm[l].data(), n_tokens, dim, c.rms_norm_eps);
    matmul_weights(hb_.data(), xb_.data(), lw.w_gate, n_tokens);
    matmul_weights(hb2_.data(), xb_.data(), lw.w_up, n_tokens);
    swiglu(hb_.data(), hb_.data(), hb2_.data(), n_tokens * c.hidden_dim);
    matmul_weights(xb2_.data(), hb_.data(), lw.w_down, n_tokens);
    add_inplace(x, xb2_.data(), n_tokens * dim);
  }

  // Final norm and the output head, over all tokens or only the last one.
  head_start_ = Clock::now();
  const int64_t n_rows = last_only ? 1 : n_tokens;
  const float* head_in = x + (n_tokens - n_rows) * dim;
  rmsnorm(xb_.data(), head_in, params_.final_norm.data(), n_rows, dim, c.rms_norm_eps);
  if (static_cast<int64_t>(logits_.size()) < n_rows * c.vocab_size) {
    logits_.resize(n_rows * c.vocab_size);
  }
  matmul_weights(logits_.data(), xb_.data(), w.output, n_rows);
  split_.layers_s = seconds_between(start, head_start_);
  split_.head_s = seconds_between(head_start_, Clock::now());
  return logits_.data();
}

// The computation of run() in the same order and with the same kernels per output, as phases
// of one step team: each phase's work items are shared by the threads; a phase that reads an
// earlier phase's output waits for all of that phase's items, and since every phase waits for
// the one before it, no two phases' items ever run at the same time. Per layer:
//   A  q, k, v rows (the items of wq, wk, wv in one range); each thread first computes the
//      attention RMSNorm of x itself into its own buffer and packs it (a few microseconds,
//      saving a phase and the shared buffer)
//   B1 RoPE of q and the new k rows, one head vector per item (angles computed once per step)
//   B2 attention, one (token, head) per item
//   C  wo rows, each item adding its rows to x (the residual add of run(), the same float adds)
//   D  w_gate and w_up rows with SwiGLU over the item's rows (D2: SwiGLU alone, only when the
//      two matrices' items differ in rows, e.g. different dtypes on the avx2 path)
//   E  w_down rows, each item adding its rows to x
// then H, the output head on the final RMSNorm. A thread computes a phase's norm and packing
// only once it holds an item of that phase, i.e. while no later phase can have started, so it
// never reads x while another thread writes it.
const float* LlamaRunner::run_team(int64_t n_tokens, bool last_only, const TreeBatch* tree) {
  const LlamaConfig& c = model_.config;
  const LlamaWeights& w = model_.weights;
  const int64_t dim = c.dim, hidden = c.hidden_dim, head_dim = c.head_dim, half = head_dim / 2;
  const int64_t n_heads = c.n_heads, n_kv_heads = c.n_kv_heads;
  const int64_t q_dim = n_heads * head_dim;
  const int64_t n_past = kv_.n_past;
  float* x = x_.data();

  rope_cos_.resize(n_tokens * half);
  rope_sin_.resize(n_tokens * half);
  int64_t max_ctx = 0;
  for (int64_t t = 0; t < n_tokens; t++) {
    rope_angles(rope_cos_.data() + t * half, rope_sin_.data() + t * half,
                tree ? tree->positions[t] : n_past + t, params_.inv_freq.data(), head_dim);
    max_ctx = std::max(
        max_ctx, tree ? tree->prefix_len[t] + (tree->extra_offset[t + 1] - tree->extra_offset[t])
                      : n_past + t + 1);
  }
  int64_t n_run = 0;
  for (int64_t l = 0; l < c.n_layers; l++) n_run += skip_layers_[l] ? 0 : 1;
  const int64_t n_rows = last_only ? 1 : n_tokens;
  if (static_cast<int64_t>(logits_.size()) < n_rows * c.vocab_size) {
    logits_.resize(n_rows * c.vocab_size);
  }
  const int n_threads = threads_get();
  team_.reset(7 * n_run + 1, n_threads);
  if (static_cast<int>(team_threads_.size()) < n_threads) team_threads_.resize(n_threads);
  for (int i = 0; i < n_threads; i++) {
    team_threads_[i].xb.resize(n_tokens * dim);
    team_threads_[i].scores.resize(attention_item_scores(max_ctx));
  }

#pragma omp parallel num_threads(n_threads)
  {
    TeamThread& me = team_threads_[omp_get_thread_num()];
    float* xb = me.xb.data();
    int64_t phase = 0, prev_items = 0;
    // Waits for the previous phase, then takes items of this one: prologue() once before the
    // first item, body(i0, i1) per run of items, counted done after it.
    auto run_phase = [&](int64_t n_items, auto&& prologue, auto&& body) {
      if (phase > 0) team_.wait(phase - 1, prev_items);
      int64_t i0, i1;
      bool first = true;
      while (team_.next(phase, n_items, &i0, &i1)) {
        if (first) prologue();
        first = false;
        body(i0, i1);
        team_.done(phase, i1 - i0);
      }
      prev_items = n_items;
      phase++;
    };
    // Items [i0, i1) of matrix m whose items start at `first` in the phase's range.
    auto matmul_part = [&](float* out, const TensorView& m, int64_t first, int64_t i0, int64_t i1) {
      const int64_t n = matmul_item_count(m);
      const int64_t b = std::max<int64_t>(i0 - first, 0), e = std::min<int64_t>(i1 - first, n);
      if (b < e) matmul_items(out, me.act, m, b, e);
    };
    // x[t, r] += y[t, r] for the rows of items [i0, i1) of m (add_inplace's float adds).
    auto add_rows = [&](const float* y, const TensorView& m, int64_t i0, int64_t i1) {
      const int64_t rows = matmul_item_rows(m);
      const int64_t r0 = i0 * rows, r1 = std::min(i1 * rows, dim);
      for (int64_t t = 0; t < n_tokens; t++)
        add_inplace(x + t * dim + r0, y + t * dim + r0, r1 - r0);
    };

    for (int64_t l = 0; l < c.n_layers; l++) {
      if (skip_layers_[l]) continue;
      const LlamaLayerWeights& lw = w.layers[l];
      float* key_cache = key_cache_[l].get();
      float* value_cache = value_cache_[l].get();
      float* k_new = key_cache + kv_.row_offset(n_past);
      float* v_new = value_cache + kv_.row_offset(n_past);
      const int64_t nq = matmul_item_count(lw.wq), nk = matmul_item_count(lw.wk);
      const int64_t nv = matmul_item_count(lw.wv);
      auto attn_input = [&] {
        rmsnorm(xb, x, params_.attn_norm[l].data(), n_tokens, dim, c.rms_norm_eps);
        me.act.set(xb, n_tokens, dim);
      };
      auto ffn_input = [&] {
        rmsnorm(xb, x, params_.ffn_norm[l].data(), n_tokens, dim, c.rms_norm_eps);
        me.act.set(xb, n_tokens, dim);
      };
      // A: q, k, v.
      run_phase(nq + nk + nv, attn_input, [&](int64_t i0, int64_t i1) {
        matmul_part(q_.data(), lw.wq, 0, i0, i1);
        matmul_part(k_new, lw.wk, nq, i0, i1);
        matmul_part(v_new, lw.wv, nq + nk, i0, i1);
      });
      // B1: RoPE, item = one head vector of q (j < n_heads) or of the new k rows.
      run_phase(
          n_tokens * (n_heads + n_kv_heads), [] {},
          [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; i++) {
              const int64_t t = i / (n_heads + n_kv_heads), j = i % (n_heads + n_kv_heads);
              float* v = j < n_heads ? q_.data() + (t * n_heads + j) * head_dim
                                     : k_new + (t * n_kv_heads + j - n_heads) * head_dim;
              rope_rotate(v, head_dim, rope_cos_.data() + t * half, rope_sin_.data() + t * half,
                          params_.rope_interleaved);
            }
          });
      // B2: attention, item = (token, head) for a tree, (token, attention_item) otherwise (a
      // KV group's query heads together on the AVX-512 path).
      const int64_t per_token = tree ? n_heads : attention_items_per_token(n_heads, n_kv_heads);
      run_phase(
          n_tokens * per_token, [] {},
          [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; i++) {
              if (tree) {
                attention_tree_one(att_.data(), q_.data(), key_cache, value_cache, i / n_heads,
                                   i % n_heads, tree->prefix_len, tree->extra_offset,
                                   tree->extra_slots, n_heads, n_kv_heads, head_dim,
                                   me.scores.data());
              } else {
                attention_item(att_.data(), q_.data(), key_cache, value_cache, i / per_token,
                               i % per_token, n_past, n_heads, n_kv_heads, head_dim,
                               me.scores.data());
              }
            }
          });
      // C: wo and the residual add.
      run_phase(
          matmul_item_count(lw.wo), [&] { me.act.set(att_.data(), n_tokens, q_dim); },
          [&](int64_t i0, int64_t i1) {
            matmul_items(xb2_.data(), me.act, lw.wo, i0, i1);
            add_rows(xb2_.data(), lw.wo, i0, i1);
          });
      // D (+ D2): gate and up, SwiGLU.
      const bool same_items = matmul_item_rows(lw.w_gate) == matmul_item_rows(lw.w_up);
      const int64_t ng = matmul_item_count(lw.w_gate), nu = matmul_item_count(lw.w_up);
      auto swiglu_rows = [&](int64_t r0, int64_t r1) {
        for (int64_t t = 0; t < n_tokens; t++) {
          float* h = hb_.data() + t * hidden;
          swiglu(h + r0, h + r0, hb2_.data() + t * hidden + r0, r1 - r0);
        }
      };
      if (same_items) {
        run_phase(ng, ffn_input, [&](int64_t i0, int64_t i1) {
          matmul_items(hb_.data(), me.act, lw.w_gate, i0, i1);
          matmul_items(hb2_.data(), me.act, lw.w_up, i0, i1);
          const int64_t rows = matmul_item_rows(lw.w_gate);
          swiglu_rows(i0 * rows, std::min(i1 * rows, hidden));
        });
        run_phase(
            0, [] {}, [](int64_t, int64_t) {});
      } else {
        run_phase(ng + nu, ffn_input, [&](int64_t i0, int64_t i1) {
          matmul_part(hb_.data(), lw.w_gate, 0, i0, i1);
          matmul_part(hb2_.data(), lw.w_up, ng, i0, i1);
        });
        run_phase(
            1, [] {}, [&](int64_t, int64_t) { swiglu_rows(0, hidden); });
      }
      // E: w_down and the residual add.
      run_phase(
          matmul_item_count(lw.w_down), [&] { me.act.set(hb_.data(), n_tokens, hidden); },
          [&](int64_t i0, int64_t i1) {
            matmul_items(xb2_.data(), me.act, lw.w_down, i0, i1);
            add_rows(xb2_.data(), lw.w_down, i0, i1);
          });
    }
    // H: the output head over the last n_rows tokens. Thread 0 marks when the layers are done
    // (the last layer's items all finished) for the forward's split.
    if (omp_get_thread_num() == 0) {
      if (phase > 0) team_.wait(phase - 1, prev_items);
      head_start_ = Clock::now();
    }
    run_phase(
        matmul_item_count(w.output),
        [&] {
          rmsnorm(xb, x + (n_tokens - n_rows) * dim, params_.final_norm.data(), n_rows, dim,
                  c.rms_norm_eps);
          me.act.set(xb, n_rows, dim);
        },
        [&](int64_t i0, int64_t i1) { matmul_items(logits_.data(), me.act, w.output, i0, i1); });
  }
  return logits_.data();
}

void LlamaRunner::truncate(int64_t n) { kv_.truncate(n); }

}  // namespace speclab
