// Sanity flags on measured cells (experiments/measure/run_flags.h): each is raised by the case it
// names and by nothing else, so a clean row carries none.
#include <gtest/gtest.h>

#include <algorithm>
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
  in.profile_baseline_s_per_token = 0.0098;
  in.verify_s_per_round = 0.021;
  in.profile_verify_s_per_round = 0.020;
  in.draft_s_per_round = 0.0102;
  in.profile_draft_s_per_round = 0.010;
  in.profile_load = 1.2;
  in.profile_plain_min_s = 0.0090;
  in.profile_plain_median_s = 0.0098;
  in.profile_plain_max_s = 0.0110;
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

// Seen on the 3B shape in the machine's slow memory state: the cost profile, timed apart, ran
// its plain step at 162.5 ms and a verify of 5 tokens at 149.9 (T(5) < T(1)), and the cell
// measured the same (plain loop 163 ms/token, a round's verify and sampling 151 ms), its
// speedup predicted within 4%. That is the engine, not a clock that lied: the bound widens by
// the profile's own ratio. A plain loop slower still than that ratio allows is flagged, and
// without a profile the plain bound holds.
TEST(RunFlags, AnEngineWhoseProfileRunsAVerifyBelowAPlainStepIsNotFlaggedForIt) {
  RunFlagInputs in = clean();
  in.speedup = 1.57;
  in.tokens_per_round = 3.92;
  in.baseline_s_per_token = 0.1632;
  in.round_target_side_s = 0.1515;
  in.profile_baseline_s_per_token = 0.1627;  // plain step + its sampling
  in.profile_round_target_side_s = 0.1513;   // T(4.9) + host(4.9)
  in.verify_s_per_round = in.profile_verify_s_per_round = 0.150;
  in.baseline_reference_s = 0.1627;
  EXPECT_NEAR(run_flags_bound_allowance(in), 0.1627 / 0.1513, 1e-12);
  EXPECT_TRUE(codes(in).empty()) << run_flags_evaluate(in)[0];
  // Without the profile's view the plain bound (T(1) <= T(k)) flags it, as before.
  in.profile_round_target_side_s = 0;
  EXPECT_EQ(codes(in), std::vector<std::string>{"speedup_above_bound"});
  // With it, a plain loop 12% slower than the profile's ratio allows is still flagged, and
  // the message says by how much the bound was widened.
  in.profile_round_target_side_s = 0.1513;
  in.baseline_s_per_token = 0.1632 * 1.12;
  in.baseline_reference_s = 0;
  const std::vector<std::string> f = run_flags_evaluate(in);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rfind("speedup_above_bound", 0), 0u) << f[0];
  EXPECT_NE(f[0].find("(x 1.08: the cost profile's plain step over its verify of the round)"),
            std::string::npos)
      << f[0];
  // The tokens-per-round bound widens the same way: 1.05 tokens per round, speedup 1.10.
  in = clean();
  in.speedup = 1.10;
  in.tokens_per_round = 1.05;
  in.profile_baseline_s_per_token = 0.1627;
  in.profile_round_target_side_s = 0.1513;
  const std::vector<std::string> widened = codes(in);
  EXPECT_EQ(std::count(widened.begin(), widened.end(), "speedup_above_bound"), 0);
  in.profile_round_target_side_s = 0;
  const std::vector<std::string> plain = codes(in);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "speedup_above_bound"), 1);
}

TEST(RunFlags, EachFlagIsRaisedByItsCase) {
  RunFlagInputs in = clean();
  in.speedup = 1.83;  // seen under load: 1.83 with 1.33 tokens per round
  in.tokens_per_round = 1.33;
  EXPECT_EQ(codes(in), std::vector<std::string>{"speedup_above_bound"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("1.83 > tokens per round 1.33"), std::string::npos);
  in = clean();
  // A verify of 2.5 tokens and its sampling faster than the plain loop's step.
  in.verify_s_per_round = 0.0080;
  in.profile_verify_s_per_round = 0.0080;
  in.round_target_side_s = 0.0085;
  in.speedup = 0.9;  // below 1x: the tokens-per-round bound says nothing
  EXPECT_EQ(codes(in), std::vector<std::string>{"speedup_above_bound"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("speedup 0.9 > 0.765"), std::string::npos)
      << run_flags_evaluate(in)[0];
  in.round_target_side_s = 0.0099;  // within 2% of the plain step: not flagged
  EXPECT_TRUE(codes(in).empty());
  in = clean();
  in.n_prompts = 7;
  EXPECT_EQ(codes(in), std::vector<std::string>{"few_prompts"});
  in = clean();
  in.load_after = 2.5;
  EXPECT_EQ(codes(in), std::vector<std::string>{"load_above_cores"});
  in = clean();
  in.profile_baseline_s_per_token = 0;  // not predicted: the run's first cell is the reference
  in.baseline_s_per_token = 0.0130;     // 24% slower than the run's first cell
  EXPECT_EQ(codes(in), std::vector<std::string>{"baseline_drift"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("in the run's first cell"), std::string::npos);
  in.baseline_s_per_token = 0.0119;  // 13%: within the band
  EXPECT_TRUE(codes(in).empty());
  in = clean();
  in.profile_baseline_s_per_token = 0.0080;  // the plain loop ran 25% slower than profiled
  in.baseline_reference_s = 0.0100;          // while the run's first cell agrees with it
  EXPECT_EQ(codes(in), std::vector<std::string>{"baseline_drift"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("plain loop 10 ms/token vs 8 ms/token in the cost "
                                           "profile"),
            std::string::npos)
      << run_flags_evaluate(in)[0];
  in.profile_baseline_s_per_token = 0.0088;  // 14%: within the band
  EXPECT_TRUE(codes(in).empty());
  in = clean();
  in.profile_verify_s_per_round = 0.030;  // a verify 30% faster than profiled
  EXPECT_EQ(codes(in), std::vector<std::string>{"profile_stale"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("verify 21 ms/round vs 30 ms/round"), std::string::npos)
      << run_flags_evaluate(in)[0];
  in.profile_verify_s_per_round = 0;  // not known (a tree, no prediction): nothing to compare
  EXPECT_TRUE(codes(in).empty());
  // The drafting part: a draft model's rounds 30% slower than the profile prices them.
  in = clean();
  in.draft_s_per_round = 0.013;
  in.profile_draft_s_per_round = 0.010;
  EXPECT_EQ(codes(in), std::vector<std::string>{"profile_stale"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("drafting 13 ms/round vs 10 ms/round"),
            std::string::npos)
      << run_flags_evaluate(in)[0];
  in.draft_s_per_round = 0.0115;  // 15%: within the band
  EXPECT_TRUE(codes(in).empty());
  // A model-free drafter's drafting tripled, but it is 0.2% of the round: not stale.
  in.draft_s_per_round = 0.00015;
  in.profile_draft_s_per_round = 0.00005;
  EXPECT_TRUE(codes(in).empty());
  in.draft_s_per_round = 0.013;
  in.profile_draft_s_per_round = 0;  // the profile has no parts: nothing to compare
  EXPECT_TRUE(codes(in).empty());
  // Seen on the 1B/3B pair: the plain step's repetitions at 115-171 ms, median 165.
  in = clean();
  in.profile_plain_min_s = 0.115;
  in.profile_plain_median_s = 0.165;
  in.profile_plain_max_s = 0.171;
  EXPECT_EQ(codes(in), std::vector<std::string>{"profile_unsteady"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("ranged 115-171 ms around its median 165 ms"),
            std::string::npos)
      << run_flags_evaluate(in)[0];
  in.profile_plain_min_s = 0.140;  // within 20% on both sides
  EXPECT_TRUE(codes(in).empty());
  in.profile_plain_max_s = 0.200;  // 21% above
  EXPECT_EQ(codes(in), std::vector<std::string>{"profile_unsteady"});
  in.profile_plain_median_s = 0;  // no spread recorded
  EXPECT_TRUE(codes(in).empty());
  in = clean();
  in.profile_load = 2.4;
  EXPECT_EQ(codes(in), std::vector<std::string>{"profile_load_above_cores"});
  in.profile_load = -1;  // the profile's file does not say
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

// law_mismatch: the in-run law check (core/law_check.h) failed, at its level 1e-4 (pit) or on a
// token of probability 0 under p (pit, argmax); a check that did not run raises nothing.
TEST(RunFlags, LawMismatchIsRaisedByAFailedLawCheckOnly) {
  RunFlagInputs in = clean();
  in.law_check = "pit";
  in.law_tokens = 1152;
  in.law_p_value = 2e-4;  // above the level
  EXPECT_TRUE(codes(in).empty());
  in.law_p_value = 3.9e-6;
  EXPECT_EQ(codes(in), std::vector<std::string>{"law_mismatch"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("1152 emitted tokens"), std::string::npos);
  in.law_p_value = 0.5;
  in.law_impossible = 2;
  EXPECT_EQ(codes(in), std::vector<std::string>{"law_mismatch"});
  EXPECT_NE(run_flags_evaluate(in)[0].find("2 of 1152"), std::string::npos);
  in.law_check = "argmax";
  EXPECT_NE(run_flags_evaluate(in)[0].find("not the argmax"), std::string::npos);
  in.law_impossible = 0;
  in.law_p_value = 0;  // argmax has no p-value: only a wrong token counts
  EXPECT_TRUE(codes(in).empty());
  in.law_check = "";  // no check ran (greedy_tokens, not applicable)
  in.law_impossible = 3;
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
