#include "experiments/predict/cost_profile_check.h"

#include <vector>

#include "core/error.h"

namespace speclab {

CostProfileCheck cost_profile_check_judge(double step_s, const CostProfile& cost,
                                          const CostProfileSpread& spread, double band) {
  SPECLAB_ASSERT(band >= 0);
  const bool has_spread =
      spread.baseline_step_s.min.size() == 1 && spread.baseline_step_s.max.size() == 1;
  CostProfileCheck c;
  c.step_s = step_s;
  c.lo = (has_spread ? spread.baseline_step_s.min[0] : cost.plain_step_s()) * (1 - band);
  c.hi = (has_spread ? spread.baseline_step_s.max[0] : cost.plain_step_s()) * (1 + band);
  c.holds = step_s >= c.lo && step_s <= c.hi;
  return c;
}

double cost_profile_check_time(TokenRunner& target, const CostProfileRequest& request) {
  int64_t L = 0;
  const std::vector<int32_t> tokens = cost_profile_tokens(target, request, &L);
  std::vector<float> p(static_cast<size_t>(target.vocab()));
  target.truncate(0);
  target.forward(tokens.data(), L, /*last_only=*/true);
  std::vector<double> runs;
  for (int i = 0; i < kCostCheckRuns; i++)
    runs.push_back(
        cost_profile_plain_run(target, tokens.data(), L, request.target_sampling, p.data()).step_s);
  target.truncate(0);
  return timing_median(runs);
}

}  // namespace speclab
