// The cost profiles time each call where the decoders run it: a verify right after the round's
// draft proposal, a plain step right after the previous plain step
// (experiments/predict/cost_profile.h, batched_cost_profile.h). A runner whose call costs
// depend on what ran before it (20 ms after a draft proposal, 2 ms after its own call: a
// stand-in for the caches and memory state one model leaves to the other) shows which
// order each figure was taken in; a profile that timed its T(k) in a tight target loop, or
// its plain step after a proposal, gets the other figure and fails.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "experiments/predict/batched_cost_profile.h"
#include "experiments/predict/cost_profile.h"
#include "models/drafters/batch_drafter.h"
#include "models/drafters/drafter.h"
#include "models/llama/batch_token_runner.h"
#include "models/llama/token_runner.h"

namespace speclab {
namespace {

constexpr int64_t kVocab = 8;
constexpr double kAfterDraftS = 0.020;   // a target call right after a draft proposal
constexpr double kAfterTargetS = 0.002;  // a target call right after a target call

// What ran last, shared by a fake target and its fake drafter.
struct LastCall {
  bool draft = false;
};

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

class OrderRunner : public TokenRunner {
 public:
  explicit OrderRunner(LastCall& last) : last_(last), logits_(64 * kVocab, 0.0f) {
    for (size_t i = 0; i < logits_.size(); i++) logits_[i] = static_cast<float>(i % kVocab);
  }
  const float* forward(const int32_t*, int64_t n, bool) override {
    sleep_s(last_.draft ? kAfterDraftS : kAfterTargetS);
    last_.draft = false;
    n_past_ += n;
    return logits_.data();
  }
  void truncate(int64_t n) override { n_past_ = n; }
  int64_t n_past() const override { return n_past_; }
  int64_t max_ctx() const override { return 256; }
  int64_t vocab() const override { return kVocab; }

 private:
  LastCall& last_;
  std::vector<float> logits_;  // [64, vocab]
  int64_t n_past_ = 0;
};

class OrderDrafter : public Drafter {
 public:
  explicit OrderDrafter(LastCall& last) : last_(last) {}
  std::string name() const override { return "order"; }
  int64_t vocab_size() const override { return kVocab; }
  bool deterministic() const override { return true; }
  void reset() override {}
  void propose(const std::vector<int32_t>&, int k, const SamplingParams&, const DraftStopRule&,
               const RngKey&, DraftProposal* out) override {
    last_.draft = true;
    *out = DraftProposal();
    for (int i = 0; i < k; i++) {
      out->tokens.push_back(1);
      out->top_prob.push_back(1.0f);
      out->entropy_norm.push_back(0.0f);
    }
  }

 private:
  LastCall& last_;
};

class OrderBatchRunner : public BatchTokenRunner {
 public:
  explicit OrderBatchRunner(LastCall& last) : last_(last), n_past_(4, 0) {
    logits_.assign(256 * kVocab, 0.0f);
  }
  const float* forward_batch(const BatchRow* rows, int64_t n_rows, bool) override {
    sleep_s(last_.draft ? kAfterDraftS : kAfterTargetS);
    last_.draft = false;
    for (int64_t r = 0; r < n_rows; r++) n_past_[static_cast<size_t>(rows[r].slot)]++;
    return logits_.data();
  }
  using BatchTokenRunner::forward_batch;
  void truncate(int64_t slot, int64_t n) override { n_past_[static_cast<size_t>(slot)] = n; }
  int64_t n_slots() const override { return 4; }
  int64_t n_past(int64_t slot) const override { return n_past_[static_cast<size_t>(slot)]; }
  int64_t max_ctx() const override { return 256; }
  int64_t vocab() const override { return kVocab; }

 private:
  LastCall& last_;
  std::vector<float> logits_;    // [256, vocab]
  std::vector<int64_t> n_past_;  // [4]
};

class OrderBatchDrafter : public BatchDrafter {
 public:
  explicit OrderBatchDrafter(LastCall& last) : last_(last) {}
  std::string name() const override { return "order"; }
  int64_t vocab_size() const override { return kVocab; }
  int64_t n_slots() const override { return 4; }
  void propose_batch(const std::vector<SlotDraftRequest>& requests, const SamplingParams&,
                     const DraftStopRule&, std::vector<DraftProposal>* out) override {
    last_.draft = true;
    out->assign(requests.size(), DraftProposal());
    for (size_t i = 0; i < requests.size(); i++)
      for (int j = 0; j < requests[i].k; j++) {
        (*out)[i].tokens.push_back(1);
        (*out)[i].top_prob.push_back(1.0f);
        (*out)[i].entropy_norm.push_back(0.0f);
      }
  }
  void reset_slot(int64_t) override {}

 private:
  LastCall& last_;
};

std::vector<int32_t> some_context() {
  std::vector<int32_t> c;
  for (int32_t i = 0; i < 40; i++) c.push_back(i % kVocab);
  return c;
}

// Halfway between the two costs: a figure below it was a call after a target call, above it
// after a proposal (sleeps only overshoot; medians over repetitions ignore one long stall).
constexpr double kSplitS = (kAfterDraftS + kAfterTargetS) / 2;

// A profile of rounds up to k_max target tokens and g_max drafts, over `reps` repetitions.
CostProfileRequest small_request(int k_max, int g_max, int reps) {
  CostProfileRequest req;
  req.context = some_context();
  req.context_len = 16;
  req.prompt_len = 8;
  req.k_max = k_max;
  req.g_max = g_max;
  req.reps = reps;
  return req;
}

TEST(CostProfileOrder, VerifyAfterAProposalPlainStepAfterAStep) {
  LastCall last;
  OrderRunner target(last);
  OrderDrafter drafter(last);
  const CostProfileRequest req = small_request(3, 2, 3);
  CostProfileSpread spread;
  const CostProfile p = cost_profile_measure(target, drafter, req, &spread);
  for (size_t k = 0; k < p.target_s.size(); k++)
    EXPECT_GT(p.target_s[k], kSplitS) << "T(" << k + 1 << ") was not timed after a proposal";
  EXPECT_GT(p.baseline_step_s, 0.0);
  EXPECT_LT(p.baseline_step_s, kSplitS) << "the plain step was not timed after a target call";
  EXPECT_EQ(p.plain_step_s(), p.baseline_step_s);
  // The figure is the median of the repetitions.
  ASSERT_EQ(spread.baseline_step_s.median.size(), 1u);
  EXPECT_EQ(spread.baseline_step_s.median[0], p.baseline_step_s);
  EXPECT_EQ(spread.target_s.median[1], p.target_s[1]);
}

// A target whose call costs depend on where it runs: a call one position on from where the
// previous call ended costs 2 ms, and 14 ms at every fourth position (a stand-in for work a
// loop pays now and then, such as a cache block filled), while a call that re-times a position
// (the cache cut back to it) costs 20 ms.
class PositionRunner : public TokenRunner {
 public:
  PositionRunner() : logits_(64 * kVocab, 0.0f) {}
  const float* forward(const int32_t*, int64_t n, bool) override {
    const bool advancing = n_past_ == last_end_;
    sleep_s(!advancing ? 0.020 : n_past_ % 4 == 3 ? 0.014 : 0.002);
    n_past_ += n;
    last_end_ = n_past_;
    return logits_.data();
  }
  void truncate(int64_t n) override { n_past_ = n; }
  int64_t n_past() const override { return n_past_; }
  int64_t max_ctx() const override { return 256; }
  int64_t vocab() const override { return kVocab; }

 private:
  std::vector<float> logits_;  // [64, vocab]
  int64_t n_past_ = 0, last_end_ = -1;
};

// The plain loop's time per token is the mean over consecutive steps at advancing positions:
// the profile's plain step is that mean (4 steps: 2, 2, 14 and 2 ms in some order, 5 ms; they
// take the run's 20 ms, so it stops there), not one step re-timed at a fixed position (20 ms
// here) nor a typical single step (2 ms).
TEST(CostProfileOrder, PlainStepIsTheMeanOfARunOfStepsAtAdvancingPositions) {
  static_assert(kPlainRunMinSteps == 4 && kPlainRunSeconds <= 0.020,
                "the expected mean below assumes a run that stops after 4 steps of 20 ms");
  LastCall last;
  PositionRunner target;
  OrderDrafter drafter(last);
  const CostProfile p = cost_profile_measure(target, drafter, small_request(3, 2, 3));
  EXPECT_GT(p.baseline_step_s, 0.0045) << "not the mean of the run (a single step is 2 ms)";
  EXPECT_LT(p.baseline_step_s, 0.0090)
      << "not a run at advancing positions (a re-timed step: 20 ms)";
}

// The run behind the plain step: at least 4 steps, then on until 20 ms have passed (a 1 ms
// model's first steps after other work are slower than its steady state), at most 16.
TEST(CostProfileOrder, PlainRunTakesFourStepsThenGoesOnForTwentyMillisecondsUpToSixteen) {
  for (int s = 0; s < 4; s++) EXPECT_TRUE(plain_run_goes_on(s, 10.0)) << s;
  EXPECT_TRUE(plain_run_goes_on(4, 0.019));
  EXPECT_FALSE(plain_run_goes_on(4, 0.020));
  EXPECT_TRUE(plain_run_goes_on(15, 0.015));
  EXPECT_FALSE(plain_run_goes_on(16, 0.0));
}

// A fast model's repetitions take moments: they go on until min_seconds have passed, so the
// medians sample the machine over that stretch (measure.cost_profile_seconds); a slow one's
// still get at least `reps`.
TEST(CostProfileOrder, RepetitionsGoOnUntilTheTimeBudgetHasPassed) {
  LastCall last;
  OrderRunner target(last);
  OrderDrafter drafter(last);
  CostProfileRequest req = small_request(1, 1, 2);
  CostProfileSpread spread;
  cost_profile_measure(target, drafter, req, &spread);
  EXPECT_EQ(spread.reps, 2) << "no budget: exactly reps";
  // One repetition here sleeps about 90 ms (four calls after a proposal): 0.6 s makes it six
  // or seven.
  req.min_seconds = 0.6;
  const auto t0 = std::chrono::steady_clock::now();
  cost_profile_measure(target, drafter, req, &spread);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.6);
  EXPECT_GT(spread.reps, 3);
  ASSERT_EQ(spread.target_s.min.size(), 1u);
  req.min_seconds = 60;
  req.max_reps = 4;
  cost_profile_measure(target, drafter, req, &spread);
  EXPECT_EQ(spread.reps, 4) << "never more than max_reps";
}

TEST(CostProfileOrder, BatchedVerifyAfterAProposalPlainStepAfterAStep) {
  LastCall last;
  OrderBatchRunner target(last);
  OrderBatchDrafter drafter(last);
  BatchedCostRequest req;
  req.context = some_context();
  req.context_len = 16;
  req.prompt_len = 8;
  req.slots = {1, 2, 4};
  req.k_max = 2;
  req.g_max = 1;
  req.reps = 3;
  BatchedCostSpread spread;
  const BatchedCostProfile p = batched_cost_profile_measure(target, drafter, req, &spread);
  ASSERT_EQ(p.baseline_step_s.size(), 3u);
  for (size_t b = 0; b < 3; b++) {
    for (size_t k = 0; k < p.target_s[b].size(); k++)
      EXPECT_GT(p.target_s[b][k], kSplitS)
          << "T(" << req.slots[b] << ", " << k + 1 << ") was not timed after a proposal";
    EXPECT_LT(p.baseline_step_s[b], kSplitS)
        << "plain(" << req.slots[b] << ") was not timed after a target call";
    EXPECT_EQ(p.plain_step_at(req.slots[b]), p.baseline_step_s[b]);
  }
  ASSERT_EQ(spread.baseline_step_s.median.size(), 3u);
  EXPECT_EQ(spread.baseline_step_s.median[2], p.baseline_step_s[2]);
}

}  // namespace
}  // namespace speclab
