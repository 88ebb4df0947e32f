#include "experiments/measure/run_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/law_check.h"

namespace speclab {

namespace {
// Every argument is printed as a double (the formats use %g, %f): counts and cores convert.
template <typename... Args>
std::string fmt(const char* f, Args... args) {
  char buf[200];
  std::snprintf(buf, sizeof buf, f, static_cast<double>(args)...);
  return buf;
}
}  // namespace

double run_flags_bound_allowance(const RunFlagInputs& in) {
  if (in.profile_baseline_s_per_token <= 0 || in.profile_round_target_side_s <= 0) return 1.0;
  return std::max(1.0, in.profile_baseline_s_per_token / in.profile_round_target_side_s);
}

std::vector<std::string> run_flags_evaluate(const RunFlagInputs& in) {
  std::vector<std::string> flags;
  // T(k) >= T(1): a plain step cannot cost more than a verify of k tokens. The tokens per
  // round bound the speedup with that; at any level (below 1x too), the run's own verify and
  // host seconds per round bound the plain loop's step (forward and sampling of one token), so
  // a plain loop slower than that was timed on a slower machine than the rounds it is
  // compared with: with the plain step at most that, the speedup could be at most
  // speedup x (verify + host per round) / plain step. Where the cell's cost profile, timed
  // apart, itself found its plain step dearer than a verify of the round's k (an engine and
  // machine state where T(k) < T(1): seen on the 1B/3B shapes), both bounds are widened by
  // that ratio: it is then the engine, not a lying clock.
  const double allow = run_flags_bound_allowance(in);
  const std::string profile_says =
      allow > 1
          ? fmt(" (x %.3g: the cost profile's plain step over its verify of the round)", allow)
          : std::string();
  if (in.speedup > 0 && in.tokens_per_round > 0 && in.speedup > in.tokens_per_round * allow)
    flags.push_back(fmt("speedup_above_bound: speedup %.3g > tokens per round %.3g", in.speedup,
                        in.tokens_per_round * allow) +
                    profile_says);
  else if (in.speedup > 0 && in.round_target_side_s > 0 &&
           in.baseline_s_per_token > in.round_target_side_s * kFlagBoundSlack * allow)
    flags.push_back(fmt("speedup_above_bound: speedup %.3g > %.3g, what a plain step no slower "
                        "than this run's verify and sampling of a round allows (T(1) <= T(k))",
                        in.speedup,
                        in.speedup * in.round_target_side_s * allow / in.baseline_s_per_token) +
                    profile_says);
  if (in.speedup > 0 && in.n_prompts < kFlagMinPrompts)
    flags.push_back(fmt("few_prompts: %.0f prompts behind the interval (< %.0f)",
                        static_cast<double>(in.n_prompts), kFlagMinPrompts));
  const double load = std::max(in.load_before, in.load_after);
  if (in.cores > 0 && load > in.cores)
    flags.push_back(fmt("load_above_cores: load average %.2f on %.0f cores", load, in.cores));
  // The plain loop against its reference: the cost profile's plain step (a file, the same
  // across shards and resumes) when the cell was predicted, else the run's first cell.
  const bool vs_profile = in.profile_baseline_s_per_token > 0;
  const double reference = vs_profile ? in.profile_baseline_s_per_token : in.baseline_reference_s;
  if (reference > 0 && in.baseline_s_per_token > 0 &&
      std::fabs(in.baseline_s_per_token / reference - 1) > kFlagBaselineDrift)
    flags.push_back(fmt(vs_profile ? "baseline_drift: plain loop %.4g ms/token vs %.4g ms/token in "
                                     "the cost profile"
                                   : "baseline_drift: plain loop %.4g ms/token vs %.4g ms/token in "
                                     "the run's first cell",
                        in.baseline_s_per_token * 1e3, reference * 1e3));
  if (in.verify_s_per_round > 0 && in.profile_verify_s_per_round > 0 &&
      std::fabs(in.verify_s_per_round / in.profile_verify_s_per_round - 1) > kFlagProfileStale)
    flags.push_back(
        fmt("profile_stale: verify %.4g ms/round vs %.4g ms/round in the cost "
            "profile",
            in.verify_s_per_round * 1e3, in.profile_verify_s_per_round * 1e3));
  if (in.draft_s_per_round > 0 && in.profile_draft_s_per_round > 0) {
    const double gap = std::fabs(in.draft_s_per_round - in.profile_draft_s_per_round);
    const double round =
        in.profile_draft_s_per_round + std::max(0.0, in.profile_verify_s_per_round);
    if (gap > kFlagProfileStale * in.profile_draft_s_per_round &&
        gap > kFlagStalePartOfRound * round)
      flags.push_back(
          fmt("profile_stale: drafting %.4g ms/round vs %.4g ms/round as the cost "
              "profile prices this run's rounds",
              in.draft_s_per_round * 1e3, in.profile_draft_s_per_round * 1e3));
  }
  if (in.profile_plain_median_s > 0 &&
      (in.profile_plain_min_s < in.profile_plain_median_s * (1 - kFlagProfileUnsteady) ||
       in.profile_plain_max_s > in.profile_plain_median_s * (1 + kFlagProfileUnsteady))) {
    flags.push_back(
        fmt("profile_unsteady: the cost profile's plain step ranged %.4g-%.4g ms "
            "around its median %.4g ms over its repetitions",
            in.profile_plain_min_s * 1e3, in.profile_plain_max_s * 1e3,
            in.profile_plain_median_s * 1e3));
  }
  if (in.cores > 0 && in.profile_load > in.cores)
    flags.push_back(
        fmt("profile_load_above_cores: load average %.2f on %.0f cores while a "
            "profile was measured",
            in.profile_load, in.cores));
  if (in.greedy_checked && !in.greedy_match)
    flags.push_back("greedy_mismatch: a greedy speculative output differs from the target's");
  if (in.law_check == "argmax" && in.law_impossible > 0)
    flags.push_back(fmt("law_mismatch: %.0f of %.0f tokens at T = 0 are not the argmax of p",
                        static_cast<double>(in.law_impossible),
                        static_cast<double>(in.law_tokens)));
  else if (in.law_check == "pit" && in.law_impossible > 0)
    flags.push_back(fmt("law_mismatch: %.0f of %.0f emitted tokens have probability 0 under p",
                        static_cast<double>(in.law_impossible),
                        static_cast<double>(in.law_tokens)));
  else if (in.law_check == "pit" && in.law_p_value < kLawCheckLevel)
    flags.push_back(
        fmt("law_mismatch: the PIT of %.0f emitted tokens under p is not uniform "
            "(p = %.2g < 1e-4)",
            static_cast<double>(in.law_tokens), in.law_p_value));
  if (in.predicted && in.rounds_on_device > 0 && !in.prediction_verify_on_device)
    flags.push_back(
        fmt("prediction_host_verify: %.0f of %.0f rounds verified on the device; the "
            "prediction priced host verification",
            static_cast<double>(in.rounds_on_device), static_cast<double>(in.rounds)));
  return flags;
}

}  // namespace speclab
