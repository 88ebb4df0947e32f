// The cost terms of the theory, measured on this machine in the same run as the speedups:
//   T(k)  seconds for one target forward call over k tokens at a fixed context length
//         (k = 1..k_max); T(1) is the cost of one autoregressive decode step.
//   t_d   seconds for one draft forward call of one token (model drafters), and
//   c     = t_d / T(1), the paper's cost coefficient.
// Each figure is the minimum of `reps` timed calls after one untimed call (interference on a
// shared machine only adds time), each call starting from the same cache length (the cache
// is truncated back in between, O(1)).
#pragma once

#include <cstdint>
#include <vector>

#include "models/llama/llama_runner.h"

namespace speclab {

struct CostCurve {
  int64_t context_len = 0;      // cache length the calls started from
  std::vector<double> seconds;  // [k_max] T(1)..T(k_max)
  double t1() const { return seconds.empty() ? 0.0 : seconds[0]; }
  // T(k)/T(1) for k = 1..k_max.
  std::vector<double> ratios() const;
};

// Measures T(1..k_max) on `runner` (its cache is reset). The context is `context` repeated or
// cut to context_len tokens.
CostCurve cost_measure_curve(TokenRunner& runner, const std::vector<int32_t>& context,
                             int64_t context_len, int k_max, int reps);

}  // namespace speclab
