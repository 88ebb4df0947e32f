// Drafters with a planted bug, for tests that must show an exactness check rejects a wrong law.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/drafters/drafter.h"

namespace speclab::testing_util {

// Samples its drafts as the inner drafter does but reports q as uniform, so the verifier
// accepts d with probability min(1, vocab p(d)): nearly every draft, without the test that
// would make the output follow p (Leviathan et al. 2023, Algorithm 1, needs the q the draft was
// drawn from).
class UniformQDrafter : public Drafter {
 public:
  explicit UniformQDrafter(Drafter& inner) : inner_(inner) {}
  std::string name() const override { return "uniform-q:" + inner_.name(); }
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  bool deterministic() const override { return false; }
  void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
               const DraftStopRule& stop, const RngKey& key, DraftProposal* out) override {
    inner_.propose(context, k, params, stop, key, out);
    std::fill(out->q.begin(), out->q.end(), 1.0f / static_cast<float>(vocab_size()));
  }
  void reset() override { inner_.reset(); }

 private:
  Drafter& inner_;
};

}  // namespace speclab::testing_util
