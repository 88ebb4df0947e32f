// The speedup a prediction would give at other points of its cost profile's own timing spread
// (CostProfileSpread keeps min / median / mean / max of every figure over its repetitions):
// - at its ends, every figure taken at the fastest, or the slowest, of its repetitions. Not a
//   confidence interval: the range the profile's repetitions allow when the plain side and the
//   speculative side err in opposite directions, beside the acceptance side's interval
//   (predict_chain_interval). A measured speedup outside it cannot be put down to the timing
//   noise the profile itself saw;
// - at its means (below).
#pragma once

#include <cmath>

#include "core/speedup_prediction.h"
#include "experiments/predict/cost_profile.h"

namespace speclab {

struct SpeedupRange {
  double lo = NAN, hi = NAN;
};

// A point of every timed figure's spread: its fastest repetition, the mean of its
// repetitions, or its slowest.
enum class SpreadPoint { kFastest, kMean, kSlowest };

// The cost profile with every figure the spread covers at one point of its repetitions. T(k),
// the plain step, host(k), the draft rounds (and the draft step, round(1)) and the tree
// draftings; catch-up and prefill, differences of two timings, stay at their medians. False
// when the spread does not cover the profile (no spread recorded, lists of other lengths, or no
// means: an older file); `out` is then untouched.
bool cost_profile_at_spread(const CostProfile& cost, const CostProfileSpread& spread,
                            SpreadPoint point, CostProfile* out);

// lo: the plain loop at its fastest over the speculative loop at its slowest (predict_chain on
// the two ends); hi: the reverse. {NaN, NaN} when the spread does not cover the profile.
SpeedupRange predict_cost_range(const CostProfile& cost, const CostProfileSpread& spread,
                                const AcceptanceProfile& acceptance, const ChainSetting& setting);

// The prediction with every timed figure at the mean of its repetitions instead of the median
// (NaN when the spread has no means). A diagnostic beside the prediction, not a second one: on
// a machine whose memory bandwidth flips between states within seconds, each figure's median
// lands in whichever state most of its own repetitions met, so T(1) and T(k) may come from
// different states, while the means weigh every figure by the same mixture, as the loops that
// run for minutes pay it (docs/prediction.md, "Median or mean costs").
double predict_speedup_at_mean_costs(const CostProfile& cost, const CostProfileSpread& spread,
                                     const AcceptanceProfile& acceptance,
                                     const ChainSetting& setting);

}  // namespace speclab
