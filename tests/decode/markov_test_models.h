// A target and a drafter with hand-made laws, for decoder tests whose exact output law is
// known at every position (tests/exactness/verify_exactness.h, MarkovPair):
//   MarkovRunner: a TokenRunner whose logits at a cache slot are log p(. | token of the
//                 slot's parent, token of the slot) (second order). It keeps the token and
//                 the parent of every slot like a KV cache, so a decoder that truncates,
//                 keeps a tree path or feeds positions wrongly changes its laws.
//   MarkovDrafter: q(. | last token), standardized with the draft's sampling parameters;
//                 chains drawn with the drafter keys, trees from exactness_markov_tree.
//                 A planted wrong law (test only) reports a q other than the one it drew
//                 from at one chain position or tree depth.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "models/drafters/drafter.h"
#include "models/llama/batch_token_runner.h"
#include "models/llama/token_runner.h"
#include "tests/exactness/verify_exactness.h"

namespace speclab {
namespace decode_test {

class MarkovRunner : public TokenRunner {
 public:
  MarkovRunner(const MarkovPair& m, int64_t max_ctx)
      : m_(m), token_(max_ctx, -1), parent_(max_ctx, -1), max_ctx_(max_ctx) {}

  const float* forward(const int32_t* tokens, int64_t n, bool last_only) override {
    for (int64_t i = 0; i < n; i++) place(n_past_ + i, tokens[i], n_past_ + i - 1);
    n_past_ += n;
    return rows(n_past_ - (last_only ? 1 : n), last_only ? 1 : n);
  }
  const float* forward_tree(const int32_t* tokens, const int32_t* parent_slot, int64_t n) override {
    for (int64_t i = 0; i < n; i++) {
      SPECLAB_ASSERT(parent_slot[i] >= -1 && parent_slot[i] < n_past_ + i);
      place(n_past_ + i, tokens[i], parent_slot[i]);
    }
    n_past_ += n;
    return rows(n_past_ - n, n);
  }
  void keep_path(int64_t base, const int32_t* path, int64_t n) override {
    std::vector<int32_t> kept(n);
    for (int64_t j = 0; j < n; j++) kept[j] = token_[path[j]];
    for (int64_t j = 0; j < n; j++) place(base + j, kept[j], base + j - 1);
    n_past_ = base + n;
  }
  void truncate(int64_t n) override {
    SPECLAB_ASSERT(n <= n_past_);
    n_past_ = n;
  }
  int64_t n_past() const override { return n_past_; }
  int64_t max_ctx() const override { return max_ctx_; }
  int64_t vocab() const override { return m_.vocab; }

 private:
  void place(int64_t slot, int32_t tok, int64_t parent) {
    SPECLAB_ASSERT(slot < max_ctx_ && tok >= 0 && tok < m_.vocab);
    token_[slot] = tok;
    parent_[slot] = parent;
  }
  // Logits of slots [first, first + n): [n, vocab]. A slot without a parent (the first
  // token of the sequence) reads the row of a = 0.
  const float* rows(int64_t first, int64_t n) {
    const int64_t V = m_.vocab;
    logits_.resize(static_cast<size_t>(n * V));
    for (int64_t i = 0; i < n; i++) {
      const int64_t s = first + i;
      const int32_t a = parent_[s] >= 0 ? token_[parent_[s]] : 0;
      const float* p = m_.p_row(a, token_[s]);
      for (int64_t c = 0; c < V; c++) logits_[i * V + c] = std::log(p[c]);
    }
    return logits_.data();
  }

  MarkovPair m_;
  std::vector<int32_t> token_, parent_;  // [max_ctx] per cache slot
  std::vector<float> logits_;            // [n, vocab]
  int64_t n_past_ = 0, max_ctx_;
};

// MarkovRunner per sequence slot behind the batched interface (BatchTokenRunner), for the
// batched decoder's exactness tests. A planted rollback bug (test only): truncate(slot, n) of
// `off_by_one_slot` keeps n + 1 positions when 0 < n < n_past (a rollback after a rejection;
// the reset of a new request, n = 0, stays right).
class MarkovBatchRunner : public BatchTokenRunner {
 public:
  MarkovBatchRunner(const MarkovPair& m, int64_t n_slots, int64_t max_ctx,
                    int64_t off_by_one_slot = -1)
      : vocab_(m.vocab), max_ctx_(max_ctx), off_by_one_slot_(off_by_one_slot) {
    for (int64_t s = 0; s < n_slots; s++) slots_.emplace_back(m, max_ctx);
  }
  const float* forward_batch(const BatchRow* rows, int64_t n_rows, bool last_only) override {
    SPECLAB_ASSERT(n_rows >= 1);
    logits_.clear();
    for (int64_t r = 0; r < n_rows;) {
      const int32_t slot = rows[r].slot;
      SPECLAB_ASSERT(slot >= 0 && slot < n_slots());
      std::vector<int32_t> tokens;
      for (; r < n_rows && rows[r].slot == slot; r++) tokens.push_back(rows[r].token);
      const int64_t n = static_cast<int64_t>(tokens.size());
      const float* out = slots_[slot].forward(tokens.data(), n, last_only);
      logits_.insert(logits_.end(), out, out + (last_only ? 1 : n) * vocab_);
    }
    return logits_.data();
  }
  void truncate(int64_t slot, int64_t n) override {
    MarkovRunner& r = slots_.at(static_cast<size_t>(slot));
    if (slot == off_by_one_slot_ && n > 0 && n < r.n_past()) n++;
    r.truncate(n);
  }
  int64_t n_slots() const override { return static_cast<int64_t>(slots_.size()); }
  int64_t n_past(int64_t slot) const override {
    return slots_.at(static_cast<size_t>(slot)).n_past();
  }
  int64_t max_ctx() const override { return max_ctx_; }
  int64_t vocab() const override { return vocab_; }

 private:
  std::vector<MarkovRunner> slots_;
  std::vector<float> logits_;  // [n_rows or n_groups, vocab]
  int64_t vocab_, max_ctx_, off_by_one_slot_;
};

// Where a MarkovDrafter misreports q (a planted wrong law; test only).
struct DraftPlant {
  int chain_index = -1;  // chain draft index whose q is reported as uniform (-1: none)
  int tree_depth = -1;   // proposals creating nodes of this depth: sampled ones report a
                         // uniform q, top-k ones claim to be sampled from it (-1: none)
};

class MarkovDrafter : public Drafter {
 public:
  MarkovDrafter(const MarkovPair& m, bool deterministic, DraftPlant plant = {})
      : m_(m), deterministic_(deterministic), plant_(plant) {}
  std::string name() const override { return "markov"; }
  int64_t vocab_size() const override { return m_.vocab; }
  bool deterministic() const override { return deterministic_; }
  void reset() override {}

  void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
               const DraftStopRule& stop, const RngKey& key, DraftProposal* out) override {
    const int64_t V = m_.vocab;
    const MarkovPair q = standardized(params);
    *out = DraftProposal();
    int32_t prev = context.back();
    for (int i = 0; i < k; i++) {
      const float* row = q.q_row(prev);
      const int32_t tok =
          deterministic_
              ? sampling_argmax(row, V)
              : sampling_draw(row, V,
                              rng_uniform(rng_key_at(key, key.position + i, kRngDraftSample)));
      if (stop.p_min > 0.0f && row[tok] < stop.p_min) break;
      out->tokens.push_back(tok);
      out->top_prob.push_back(*std::max_element(row, row + V));
      out->entropy_norm.push_back(0.5f);
      if (!deterministic_) {
        out->q.insert(out->q.end(), row, row + V);
        if (i == plant_.chain_index)
          std::fill(out->q.end() - V, out->q.end(), 1.0f / static_cast<float>(V));
      }
      prev = tok;
    }
  }

  void propose_tree(const std::vector<int32_t>& context, const TreeShape& shape,
                    const SamplingParams& params, const RngKey& key, DraftTree* out) override {
    const int64_t V = m_.vocab;
    const MarkovPair q = standardized(params);  // rows below point into it: keep it alive
    exactness_markov_tree(q, context.back(), shape, key, out);
    if (plant_.tree_depth < 1) return;
    for (int32_t node = 0; node < out->n_nodes(); node++) {
      if (out->depth[node] + 1 != plant_.tree_depth) continue;
      for (TreeProposal& pr : out->proposals[node]) {
        if (pr.q_row >= 0) {
          std::fill(out->q.begin() + pr.q_row * V, out->q.begin() + (pr.q_row + 1) * V,
                    1.0f / static_cast<float>(V));
        } else {
          pr.q_row = static_cast<int32_t>(out->q.size() / V);
          const float* row = q.q_row(out->token[node]);
          out->q.insert(out->q.end(), row, row + V);
        }
      }
    }
  }

 private:
  // The draft law under the draft's own standardization (temperature, top-k, top-p).
  MarkovPair standardized(const SamplingParams& params) const {
    MarkovPair q = m_;
    std::vector<float> logits(m_.vocab);
    for (int64_t b = 0; b < m_.vocab; b++) {
      for (int64_t c = 0; c < m_.vocab; c++) logits[c] = std::log(m_.q_row(b)[c]);
      sampling_standardize(q.q.data() + b * m_.vocab, logits.data(), m_.vocab, params);
    }
    return q;
  }

  MarkovPair m_;
  bool deterministic_;
  DraftPlant plant_;
};

// The target law the decoders must emit: p rows standardized with the request's sampling
// parameters (softmax of log p at temperature T, then top-k / top-p).
inline MarkovPair markov_standardized_target(const MarkovPair& m, const SamplingParams& sp) {
  MarkovPair out = m;
  std::vector<float> logits(m.vocab);
  for (int64_t r = 0; r < m.vocab * m.vocab; r++) {
    for (int64_t c = 0; c < m.vocab; c++) logits[c] = std::log(m.p[r * m.vocab + c]);
    sampling_standardize(out.p.data() + r * m.vocab, logits.data(), m.vocab, sp);
  }
  return out;
}

}  // namespace decode_test
}  // namespace speclab
