// CPU runners that implement TokenRunner's device hooks with the reference host math, as a
// device runner does on the device: the decoder tests use them to show that the decoder takes
// the device paths when offered and that its outputs and records do not change. A host
// runner's "device" is host memory: draft rows handed over as DraftRows::device are read in
// place, as CudaLlamaRunner reads its drafter's rows. The CUDA runner's own hooks are compared
// with the CPU in tests/cuda.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/decode/generation.h"
#include "models/llama/llama_runner.h"

namespace speclab {
namespace decode_test {

// verify_on_device = forward -> sampling_standardize -> speculative_verify, recording what it
// was handed.
class SelfVerifyingRunner : public LlamaRunner {
 public:
  using LlamaRunner::LlamaRunner;
  bool verify_on_device(const int32_t* batch, int n_draft, const DraftRows& rows,
                        const SamplingParams& sampling, const VerifyConfig& config, RngKey base,
                        VerifyOutcome* out) override {
    calls++;
    const float* q = rows.device != nullptr ? rows.device : rows.host;
    if (q != nullptr) calls_with_q++;
    if (rows.device != nullptr) calls_with_device_q++;
    const int64_t v = vocab();
    const float* logits = forward(batch, n_draft + 1);
    std::vector<float> p(static_cast<size_t>((n_draft + 1) * v));
    for (int i = 0; i <= n_draft; i++)
      sampling_standardize(p.data() + i * v, logits + i * v, v, sampling);
    VerifyRound round;
    round.n_draft = n_draft;
    round.draft = batch + 1;
    round.q = q;
    round.p = p.data();
    round.vocab = v;
    *out = speculative_verify(round, config, base);
    if (reject_everything) {  // planted bug: a verifier that never accepts
      out->n_accepted = 0;
      out->bonus = false;
      out->next_token = sampling_argmax(p.data(), v);
    }
    return true;
  }
  int calls = 0;
  int calls_with_q = 0;
  int calls_with_device_q = 0;
  bool reject_everything = false;
};

// draft_on_device = forward(last row) -> sampling_standardize into row `row` of its own rows
// -> sampling_draw at u, returning the scalars draft_sample_step records; draft_chain_on_device
// (declined unless offers_chain) = those steps in a row.
class HostDraftingRunner : public LlamaRunner {
 public:
  using LlamaRunner::LlamaRunner;
  bool draft_on_device(const int32_t* tokens, int64_t n_tokens, int row,
                       const SamplingParams& sampling, double u, DraftStep* out) override {
    calls++;
    const int64_t v = vocab();
    const float* logits = forward(tokens, n_tokens, /*last_only=*/true);
    // Every call moves the rows, as the contract allows (a device buffer that grows): rows
    // [0, row) are copied, the old block is poisoned with NaN and kept (not freed), so a
    // caller holding an address from an earlier call reads NaN q.
    std::vector<float> moved(static_cast<size_t>((row + 1) * v));
    std::copy(rows_.begin(), rows_.begin() + std::min<int64_t>(rows_.size(), row * v),
              moved.begin());
    std::fill(rows_.begin(), rows_.end(), std::nanf(""));
    retired_.push_back(std::move(rows_));
    rows_ = std::move(moved);
    float* q = rows_.data() + static_cast<size_t>(row) * v;
    sampling_standardize(q, logits, v, sampling);
    // planted bug: the mirrored uniform (the same law, other draws)
    const double draw_u = mirror_u ? std::max(0.0, std::nextafter(1.0 - u, 0.0)) : u;
    out->token = sampling_draw(q, v, draw_u);
    if (off_by_one) out->token = static_cast<int32_t>((out->token + 1) % v);  // planted bug
    out->top_prob = *std::max_element(q, q + v);
    out->entropy_norm = static_cast<float>(sampling_entropy_normalized(q, v));
    out->q_rows = rows_.data();
    return true;
  }
  // draft_chain_on_device, when offered: draft_on_device step by step, each step fed the id
  // the step before drew, as the CUDA runner's chain does on the device.
  bool draft_chain_on_device(const int32_t* tokens, int64_t n_tokens, int k,
                             const SamplingParams& sampling, const double* u,
                             DraftStep* out) override {
    if (!offers_chain) return false;
    chain_calls++;
    draft_on_device(tokens, n_tokens, 0, sampling, u[0], &out[0]);
    for (int i = 1; i < k; i++) {
      // planted bug: every step fed the chain's first id
      const int32_t fed = chain_feeds_first ? out[0].token : out[i - 1].token;
      draft_on_device(&fed, 1, i, sampling, u[i], &out[i]);
    }
    return true;
  }
  void download_draft_rows(int n_rows, float* host) override {
    downloads++;
    std::copy(rows_.begin(), rows_.begin() + static_cast<int64_t>(n_rows) * vocab(), host);
  }
  int calls = 0;
  int downloads = 0;
  int chain_calls = 0;
  bool offers_chain = false;
  bool mirror_u = false;
  bool off_by_one = false;
  bool chain_feeds_first = false;

 private:
  std::vector<float> rows_;                  // [rows drafted this round, vocab]
  std::vector<std::vector<float>> retired_;  // moved-from rows, NaN
};

// Tokens, target calls and every round record (n_draft, n_accepted, next, bonus, p, q, beta).
inline void expect_same_rounds(const GenerationResult& a, const GenerationResult& b) {
  ASSERT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.rounds.size(), b.rounds.size());
  EXPECT_EQ(a.n_target_calls, b.n_target_calls);
  for (size_t r = 0; r < a.rounds.size(); r++) {
    EXPECT_EQ(a.rounds[r].n_draft, b.rounds[r].n_draft) << "round " << r;
    EXPECT_EQ(a.rounds[r].n_accepted, b.rounds[r].n_accepted) << "round " << r;
    EXPECT_EQ(a.rounds[r].next_token, b.rounds[r].next_token) << "round " << r;
    EXPECT_EQ(a.rounds[r].bonus, b.rounds[r].bonus) << "round " << r;
    EXPECT_EQ(a.rounds[r].p_draft, b.rounds[r].p_draft) << "round " << r;
    EXPECT_EQ(a.rounds[r].q_draft, b.rounds[r].q_draft) << "round " << r;
    EXPECT_EQ(a.rounds[r].beta, b.rounds[r].beta) << "round " << r;
  }
}

}  // namespace decode_test
}  // namespace speclab
