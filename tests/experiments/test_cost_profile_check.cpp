// The check before each cell (experiments/predict/cost_profile_check.h): the target's plain
// step, timed as the cost profile times it, judged against the profile's own repetitions
// widened by a band; a predictor whose check fails retakes the cost profile into a file of its
// own before it predicts, and keeps the profile while the check holds. A target slowed by a
// sleep in every call stands in for a machine whose speed changed between two cells.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/predict/cell_prediction.h"
#include "experiments/predict/cost_profile.h"
#include "experiments/predict/cost_profile_check.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;
namespace fs = std::filesystem;

using testing_util::read_bytes;

// A target whose every call costs a sleep of `step_s` (the machine's speed, set by the test)
// and nothing else, so that its timings stay where the test puts them on a loaded machine;
// its logits are all zero (a uniform law: greedy picks token 0).
class SleepRunner : public TokenRunner {
 public:
  explicit SleepRunner(int64_t vocab) : vocab_(vocab), logits_(256 * vocab, 0.0f) {}
  const float* forward(const int32_t*, int64_t n, bool) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(step_s));
    n_past_ += n;
    return logits_.data();
  }
  void truncate(int64_t n) override { n_past_ = n; }
  int64_t n_past() const override { return n_past_; }
  int64_t max_ctx() const override { return 128; }
  int64_t vocab() const override { return vocab_; }
  double step_s = 0;

 private:
  int64_t vocab_;
  std::vector<float> logits_;  // [256, vocab]
  int64_t n_past_ = 0;
};

// Fast and slow: five times apart, and a band of 0.5, so that a test machine's load (which
// delays a sleep's wake-up by milliseconds) neither fails a check that should hold nor passes
// one that should fail.
constexpr double kFastS = 0.004, kSlowS = 0.020, kTestBand = 0.5;

// Against the profile's median plain step, not its spread: a profile taken while the machine
// flipped between two speeds (repetitions of 115-171 ms, median 165) must not accept a check
// at the fast speed.
TEST(CostProfileCheck, HoldsWithinTheBandAroundTheProfilesPlainStep) {
  CostProfile cost;
  cost.target_s = {0.168, 0.174};
  cost.baseline_step_s = 0.165;
  // [0.165 x 0.9, 0.165 x 1.1] = [0.1485, 0.1815]
  for (double s : {0.1486, 0.160, 0.170, 0.1814})
    EXPECT_TRUE(cost_profile_check_judge(s, cost, 0.10).holds) << s;
  for (double s : {0.114, 0.148, 0.182, 0.250})
    EXPECT_FALSE(cost_profile_check_judge(s, cost, 0.10).holds) << s;
  const CostProfileCheck c = cost_profile_check_judge(0.114, cost, 0.10);
  EXPECT_DOUBLE_EQ(c.lo, 0.1485);
  EXPECT_DOUBLE_EQ(c.hi, 0.1815);
  EXPECT_EQ(c.step_s, 0.114);
  // A profile without a plain step of its own (an older file): T(1) stands in.
  cost.baseline_step_s = 0;
  EXPECT_DOUBLE_EQ(cost_profile_check_judge(0.170, cost, 0.10).hi, 0.168 * 1.1);
  EXPECT_TRUE(cost_profile_check_judge(0.170, cost, 0.10).holds);
}

// The check times what the profile's plain step times: on a target whose calls cost a known
// sleep, both read that sleep, and the check moves when the target's speed does.
TEST(CostProfileCheck, TimesThePlainStepAsTheProfileDoes) {
  const auto model = llama_load(std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/tiny-target-5m");
  SleepRunner target(model->config.vocab_size);
  const auto drafter = drafter_create("lookup:n=3", *model, 128);
  CostProfileRequest r;
  r.context = {1, 5, 9, 5, 9, 5};
  r.context_len = 24;
  r.prompt_len = 6;
  r.k_max = 2;
  r.g_max = 1;
  r.reps = 5;
  target.step_s = kFastS;
  const CostProfile p = cost_profile_measure(target, *drafter, r);
  const double fast = cost_profile_check_time(target, r);
  EXPECT_GE(fast, kFastS);
  EXPECT_TRUE(cost_profile_check_judge(fast, p, kTestBand).holds)
      << fast << " against the profile's " << p.baseline_step_s;
  EXPECT_EQ(target.n_past(), 0) << "the check leaves the cache empty";
  target.step_s = kSlowS;
  const double slow = cost_profile_check_time(target, r);
  EXPECT_GE(slow, kSlowS);
  EXPECT_FALSE(cost_profile_check_judge(slow, p, kTestBand).holds)
      << slow << " against the profile's " << p.baseline_step_s;
}

// Two cells of one group, one request each; the target's speed changes between predictions.
TEST(CostProfileCheck, APredictorRetakesTheProfileWhenTheCheckFailsAndKeepsItWhileItHolds) {
  ScratchDir d;
  const std::string src = SPECLAB_SOURCE_DIR;
  const std::string cfg_file =
      d.write("c.yaml", "name: c\nquestion: \"q\"\ntarget: " + src +
                            "/models/zoo/tiny-target-5m\ndrafters:\n  d: lookup:n=3\n"
                            "prompts:\n  file: " +
                            src +
                            "/configs/prompts/tiny-in-domain.jsonl\n  limit: 1\n"
                            "generation:\n  max_new_tokens: 8\n  warmup: 0\n  threads: 1\n"
                            "  ctx: 128\n  ignore_eos: true\nmeasure:\n  bootstrap_resamples: 20\n"
                            "sweep:\n  drafter: [d]\n  gamma: [1, 2]\n  temperature: [0]\n");
  const ExperimentConfig cfg = experiment_config_load(cfg_file, {});
  const std::vector<Cell> cells = sweep_expand(cfg);
  ASSERT_EQ(cells.size(), 2u);
  const auto model = llama_load(src + "/models/zoo/tiny-target-5m");
  SleepRunner target(model->config.vocab_size);
  const auto drafter = drafter_create("lookup:n=3", *model, 128);
  const std::vector<PromptTokens> prompts = {{"p", {1, 5, 9, 5, 9, 5}, "c"}};
  const std::atomic<bool> running{false};
  const std::string dir = d.file("P");
  CellPredictor predictor(cfg, cells, &target, prompts, {}, dir, ProfileMode::kMeasure, nullptr,
                          &running);
  predictor.set_recheck(kTestBand);

  target.step_s = kFastS;
  const CellPrediction first = predictor.predict(cells[0], drafter.get());
  const std::string original = dir + "/cost-" + first.group + ".json";
  EXPECT_EQ(first.cost_file, original);
  EXPECT_EQ(first.cost_check, "held") << "checked right after it was taken, at the same speed";
  EXPECT_GE(first.cost_check_step_s, kFastS);
  const std::string original_bytes = read_bytes(original);
  const CellPrediction fast = predictor.predict(cells[1], drafter.get());
  EXPECT_EQ(fast.cost_check, "held");
  EXPECT_EQ(fast.cost_file, original);

  // Five times slower: the check fails and the profile is taken again, into its own file.
  target.step_s = kSlowS;
  const CellPrediction slow = predictor.predict(cells[1], drafter.get());
  EXPECT_EQ(slow.cost_check, "retaken");
  EXPECT_GE(slow.cost_check_step_s, kSlowS);
  EXPECT_EQ(slow.cost_file, dir + "/cost-" + first.group + "-retake1.json");
  ASSERT_TRUE(fs::exists(slow.cost_file));
  EXPECT_EQ(read_bytes(original), original_bytes) << "the first profile's rows still read it";
  EXPECT_GT(slow.cost.plain_step_s(), 2 * first.cost.plain_step_s());
  EXPECT_GT(slow.cost.target_s[0], 2 * first.cost.target_s[0]);
  const CostProfileRecord written =
      cost_profile_record_from_json(profile_read_json(slow.cost_file), slow.cost_file);
  EXPECT_EQ(written.cost.target_s, slow.cost.target_s);
  EXPECT_FALSE(written.taken.utc.empty() && written.taken.git_commit.empty() &&
               written.spread.reps == 0)
      << "a retaken profile keeps its spread";
  EXPECT_GT(written.spread.reps, 0);
  // The same cell from the retaken profile: the predicted times moved with it.
  EXPECT_GT(slow.prediction.base_s_per_token, 2 * fast.prediction.base_s_per_token);
  EXPECT_GT(slow.prediction.spec_s_per_token, 2 * fast.prediction.spec_s_per_token);

  // Still slow: the retaken profile holds.
  const CellPrediction again = predictor.predict(cells[1], drafter.get());
  EXPECT_EQ(again.cost_check, "held");
  EXPECT_EQ(again.cost_file, slow.cost_file);

  // Fast again: a second retake, a second file.
  target.step_s = kFastS;
  const CellPrediction back = predictor.predict(cells[0], drafter.get());
  EXPECT_EQ(back.cost_check, "retaken");
  EXPECT_EQ(back.cost_file, dir + "/cost-" + first.group + "-retake2.json");

  // No check asked for: none runs, whatever the speed.
  predictor.set_recheck(0);
  target.step_s = kSlowS;
  const CellPrediction unchecked = predictor.predict(cells[0], drafter.get());
  EXPECT_EQ(unchecked.cost_check, "");
  EXPECT_EQ(unchecked.cost_file, back.cost_file);
}

}  // namespace
}  // namespace speclab
