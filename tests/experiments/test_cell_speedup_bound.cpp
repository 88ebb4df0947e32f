// speedup_above_bound raised by a real cell, not a hand-made row: the tiny zoo's target behind
// an engine whose one-token forward is slow (a plain step pays ten times its own time more; a
// verify of several tokens does not), measured by cell_run exactly as `speclab run` measures a
// cell. A round costs at least one target call, so no honest engine lets speculation beat its own
// tokens per round; this one does, and the row says so. The same cell on the plain engine is not
// flagged (the flag is the engine's, not the cell's).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/threads.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/prompt_set.h"
#include "experiments/config/sweep.h"
#include "experiments/measure/cell_runner.h"
#include "models/llama/llama_model.h"
#include "models/llama/llama_runner.h"
#include "tests/experiments/cli_runner.h"
#include "tests/experiments/tiny_cell_context.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

const std::string kSrc = SPECLAB_SOURCE_DIR;

// The tiny target, with `one_token_extra_s` of sleep added to every forward of exactly one
// token (the plain loop's step; a verify reads gamma + 1 tokens).
class SlowStepRunner : public TokenRunner {
 public:
  SlowStepRunner(const LlamaModel& model, int64_t max_ctx) : inner_(model, max_ctx) {}
  const float* forward(const int32_t* tokens, int64_t n, bool last_only) override {
    if (n == 1 && one_token_extra_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(one_token_extra_s));
    return inner_.forward(tokens, n, last_only);
  }
  void truncate(int64_t n) override { inner_.truncate(n); }
  int64_t n_past() const override { return inner_.n_past(); }
  int64_t max_ctx() const override { return inner_.max_ctx(); }
  int64_t vocab() const override { return inner_.vocab(); }
  double one_token_extra_s = 0;

 private:
  LlamaRunner inner_;
};

std::vector<std::string> flag_codes(const ResultRow& row) {
  std::vector<std::string> out;
  for (const std::string& f : row.flags.value_or(std::vector<std::string>{}))
    out.push_back(f.substr(0, f.find(':')));
  return out;
}

TEST(CellSpeedupBound, AnEngineWhosePlainStepIsSlowIsFlaggedByTheCellThatMeasuredIt) {
  threads_set(1);
  ScratchDir d;
  const std::string cfg_path =
      d.write("bound.yaml", "name: bound\nquestion: \"q\"\ntarget: " + kSrc +
                                "/models/zoo/tiny-target-5m\ndrafters:\n  d: " + kSrc +
                                "/models/zoo/tiny-draft-0.5m\nprompts:\n  file: " + kSrc +
                                "/configs/prompts/tiny-in-domain.jsonl\n  limit: 3\ngeneration:\n"
                                "  max_new_tokens: 24\n  warmup: 0\n  threads: 1\n  ctx: 128\n"
                                "  ignore_eos: true\nmeasure:\n  bootstrap_resamples: 50\nsweep:\n"
                                "  drafter: [d]\n  gamma: [4]\n  temperature: [0]\n");
  const ExperimentConfig cfg = experiment_config_load(cfg_path);
  const std::vector<Cell> cells = sweep_expand(cfg);
  ASSERT_EQ(cells.size(), 1u);
  const auto model = llama_load(kSrc + "/models/zoo/tiny-target-5m");
  SlowStepRunner target(*model, 128);

  RunContext ctx = testing_util::tiny_cell_context(cfg, *model, &target, 3);
  PreparedDrafter drafter = cell_prepare_drafter(ctx, cfg.drafters.at(0));

  const ResultRow plain = cell_run(ctx, cells[0], drafter);
  ASSERT_TRUE(plain.speedup.has_value() && plain.tau.has_value());
  EXPECT_LT(*plain.speedup, *plain.tau);
  for (const std::string& c : flag_codes(plain)) EXPECT_NE(c, "speedup_above_bound");

  // Ten times the tiny target's step as this machine ran it (at least 3 ms): under another
  // test's load the step slows, and a fixed 3 ms left the engine below the bound (1.9 < tau 3).
  target.one_token_extra_s = std::max(0.003, 10.0 * plain.baseline_s_per_token.value_or(0.0));
  const ResultRow slow = cell_run(ctx, cells[0], drafter);
  ASSERT_TRUE(slow.speedup.has_value() && slow.tau.has_value());
  EXPECT_GT(*slow.speedup, *slow.tau)
      << "the engine did not beat the bound: the case tests nothing";
  const std::vector<std::string> codes = flag_codes(slow);
  EXPECT_NE(std::find(codes.begin(), codes.end(), "speedup_above_bound"), codes.end());
}

}  // namespace
}  // namespace speclab
