#include "experiments/measure/cost_measurement.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace speclab {

std::vector<double> CostCurve::ratios() const {
  std::vector<double> r(seconds.size());
  for (size_t i = 0; i < seconds.size(); i++) r[i] = seconds[0] > 0 ? seconds[i] / seconds[0] : 0;
  return r;
}

CostCurve cost_measure_curve(TokenRunner& runner, const std::vector<int32_t>& context,
                             int64_t context_len, int k_max, int reps) {
  SPECLAB_ASSERT(!context.empty() && k_max >= 1 && reps >= 1);
  context_len = std::min<int64_t>(context_len, runner.max_ctx() - k_max);
  SPECLAB_INPUT_CHECK(context_len >= 1, "cost measurement: context limit ", runner.max_ctx(),
                      " too small for k up to ", k_max);
  std::vector<int32_t> ctx(static_cast<size_t>(context_len + k_max));
  for (size_t i = 0; i < ctx.size(); i++) ctx[i] = context[i % context.size()];
  CostCurve curve;
  curve.context_len = context_len;
  runner.truncate(0);
  runner.forward(ctx.data(), context_len, /*last_only=*/true);
  std::vector<double> times(static_cast<size_t>(reps));
  for (int k = 1; k <= k_max; k++) {
    const int32_t* batch = ctx.data() + context_len;  // [k] tokens after the context
    runner.forward(batch, k);                         // untimed: warms this batch size
    runner.truncate(context_len);
    for (int r = 0; r < reps; r++) {
      const auto t0 = std::chrono::steady_clock::now();
      runner.forward(batch, k);
      times[static_cast<size_t>(r)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      runner.truncate(context_len);
    }
    // The minimum, not the median: on a shared machine interference only ever adds time, and
    // the fastest of several identical calls is the best estimate of the call's own cost.
    curve.seconds.push_back(*std::min_element(times.begin(), times.end()));
  }
  runner.truncate(0);
  return curve;
}

}  // namespace speclab
