#include "experiments/measure/run_flags.h"

#include <cmath>
#include <cstdio>

namespace speclab {

namespace {
std::string fmt(const char* f, double a, double b) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}
}  // namespace

std::vector<std::string> run_flags_evaluate(const RunFlagInputs& in) {
  std::vector<std::string> flags;
  if (in.speedup > 0 && in.tokens_per_round > 0 && in.speedup > in.tokens_per_round)
    flags.push_back(fmt("speedup_above_bound: speedup %.3g > tokens per round %.3g", in.speedup,
                        in.tokens_per_round));
  if (in.speedup > 0 && in.n_prompts < kFlagMinPrompts)
    flags.push_back(fmt("few_prompts: %.0f prompts behind the interval (< %.0f)",
                        static_cast<double>(in.n_prompts), kFlagMinPrompts));
  const double load = std::max(in.load_before, in.load_after);
  if (in.cores > 0 && load > in.cores)
    flags.push_back(fmt("load_above_cores: load average %.2f on %.0f cores", load, in.cores));
  if (in.baseline_reference_s > 0 && in.baseline_s_per_token > 0 &&
      std::fabs(in.baseline_s_per_token / in.baseline_reference_s - 1) > kFlagBaselineDrift)
    flags.push_back(
        fmt("baseline_drift: baseline %.3g ms/token vs %.3g ms/token in the run's "
            "first cell",
            in.baseline_s_per_token * 1e3, in.baseline_reference_s * 1e3));
  if (in.greedy_checked && !in.greedy_match)
    flags.push_back("greedy_mismatch: a greedy speculative output differs from the target's");
  if (in.predicted && in.rounds_on_device > 0)
    flags.push_back(
        fmt("prediction_host_verify: %.0f of %.0f rounds verified on the device; the "
            "prediction priced host verification",
            static_cast<double>(in.rounds_on_device), static_cast<double>(in.rounds)));
  return flags;
}

}  // namespace speclab
