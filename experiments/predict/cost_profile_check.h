// Does a cost profile still describe the machine when a cell starts? A group's profile is
// taken once, and its cells may run many minutes later; on a shared machine the memory that
// a decode step streams through can speed up or slow down by a third within minutes
// (docs/prediction.md, "A profile checked before each cell"). A prediction from a profile
// taken in another minute then measures the machine's swing, not the model.
//
// Before each cell of one request, `speclab run` times the target's plain step as the profile
// did (kCostCheckRuns repetitions of cost_profile_plain_run at the profile's context; their
// median) and judges it against the profile's own repetitions of the same figure: the check
// holds within [min x (1 - band), max x (1 + band)] of them. The profile's spread is how far
// the step moved while nothing changed, so a noisy profile tolerates a noisy check; the band
// (measure.cost_profile_recheck) is the margin beyond it. When the check fails, the predictor
// retakes the whole profile before predicting the cell (experiments/predict/cell_prediction.h):
// the prediction still comes from timings taken before the cell's own runs, never from them.
// Only the target's step is timed: on the machines we measured, the draft's calls moved with
// it (both stream their weights), while a wide verify did not, which the retaken profile's
// T(k) captures.
#pragma once

#include "core/speedup_prediction.h"
#include "experiments/predict/cost_profile.h"
#include "models/llama/token_runner.h"

namespace speclab {

inline constexpr int kCostCheckRuns = 3;

struct CostProfileCheck {
  double step_s = 0;      // the timed plain step (the median of the check's runs)
  double lo = 0, hi = 0;  // the interval it was judged against
  bool holds = true;
};

// Judges a timed plain step against the profile: the spread of its plain step when recorded
// (spread.baseline_step_s, one entry), else its plain step alone (CostProfile::plain_step_s),
// widened by band on each side.
CostProfileCheck cost_profile_check_judge(double step_s, const CostProfile& cost,
                                          const CostProfileSpread& spread, double band);

// Times the check on the profile's request (its context and the target's sampling): the
// target's cache is filled to the profile's context, and cut to 0 after.
double cost_profile_check_time(TokenRunner& target, const CostProfileRequest& request);

}  // namespace speclab
