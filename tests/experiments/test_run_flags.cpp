// Sanity flags on measured cells (experiments/measure/run_flags.h): each is raised by the case it
// names and by nothing else, so a clean row carries none.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "experiments/measure/run_flags.h"

namespace speclab {
namespace {

RunFlagInputs clean() {
  RunFlagInputs in;
  in.speedup = 1.5;
  in.tokens_per_round = 2.5;
  in.n_prompts = 16;
  in.cores = 2;
  in.load_before = 0.5;
  in.load_after = 0.7;
  in.baseline_s_per_token = 0.010;
  in.baseline_reference_s = 0.0105;
  in.greedy_checked = true;
  in.greedy_match = true;
  return in;
}

std::vector<std::string> codes(const RunFlagInputs& in) {
  std::vector<std::string> out;
  for (const auto& f : run_flags_evaluate(in)) out.push_back(f.substr(0, f.find(':')));
  return out;
}

TEST(RunFlags, ACleanCellHasNone) { EXPECT_TRUE(run_flags_evaluate(clean()).empty()); }

TEST(RunFlags, EachFlagIsRaisedByItsCase) {
  RunFlagInputs in = clean();
  in.speedup = 1.83;  // seen under load: 1.83 with 1.33 tokens per round
  in.tokens_per_round = 1.33;
  EXPECT_EQ(codes(in), std::vector<std::string>{"speedup_above_bound"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("1.83 > tokens per round 1.33"), std::string::npos);
  in = clean();
  in.n_prompts = 7;
  EXPECT_EQ(codes(in), std::vector<std::string>{"few_prompts"});
  in = clean();
  in.load_after = 2.5;
  EXPECT_EQ(codes(in), std::vector<std::string>{"load_above_cores"});
  in = clean();
  in.baseline_s_per_token = 0.0130;  // 24% slower than the run's first cell
  EXPECT_EQ(codes(in), std::vector<std::string>{"baseline_drift"});
  in.baseline_s_per_token = 0.0119;  // 13%: within the band
  EXPECT_TRUE(codes(in).empty());
  in = clean();
  in.greedy_match = false;
  EXPECT_EQ(codes(in), std::vector<std::string>{"greedy_mismatch"});
  in = clean();
  in.predicted = true;
  in.rounds = 40;
  in.rounds_on_device = 40;
  EXPECT_EQ(codes(in), std::vector<std::string>{"prediction_host_verify"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("40 of 40 rounds"), std::string::npos);
  in.predicted = false;  // no prediction in the row: nothing to warn about
  EXPECT_TRUE(codes(in).empty());
  in.predicted = true;  // host-verified rounds are what the cost profile prices
  in.rounds_on_device = 0;
  EXPECT_TRUE(codes(in).empty());
}

TEST(RunFlags, UnmeasuredSpeedupRaisesNoTimingFlag) {
  RunFlagInputs in = clean();
  in.speedup = 0;  // measure.baseline: false
  in.n_prompts = 2;
  EXPECT_TRUE(run_flags_evaluate(in).empty());
}

}  // namespace
}  // namespace speclab
