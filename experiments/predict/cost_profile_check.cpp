#include "experiments/predict/cost_profile_check.h"

#include <vector>

#include "core/error.h"

namespace speclab {

CostProfileCheck cost_profile_check_judge(double step_s, const CostProfile& cost, double band) {
  SPECLAB_ASSERT(band >= 0);
  CostProfileCheck c;
  c.step_s = step_s;
  c.lo = cost.plain_step_s() * (1 - band);
  c.hi = cost.plain_step_s() * (1 + band);
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
