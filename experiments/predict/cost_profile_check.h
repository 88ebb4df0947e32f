// Does a cost profile still describe the machine when a cell starts? A group's profile is
// taken once, and its cells may run many minutes later; on a shared machine the memory that
// a decode step streams through can speed up or slow down by a third within minutes
// (docs/prediction.md, "A profile checked before each cell"). A prediction from a profile
// taken in another minute then measures the machine's swing, not the model.
//
// Before each cell of one request, `speclab run` times the target's plain step as the profile
// did (kCostCheckRuns repetitions of cost_profile_plain_run at the profile's context; their
// median) and judges it against the figure the predictor uses, the profile's median plain
// step: the check holds within a band of it (measure.cost_profile_recheck). Not against the
// profile's spread: a profile taken while the machine flipped between a fast and a slow state
// has a wide spread and a median from the slow one (seen on the 1B/3B pair: repetitions of
// 115-171 ms, median 165, then checks at 112-174 ms as the machine flipped), and a check that
// tolerated the spread held before every cell there.
// When the check fails, the predictor retakes the whole profile before predicting the cell
// (experiments/predict/cell_prediction.h): the prediction still comes from timings taken
// before the cell's own runs, never from them.
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

// Judges a timed plain step against the profile's plain step (CostProfile::plain_step_s: T(1)
// for a profile without one): it holds within [plain x (1 - band), plain x (1 + band)].
CostProfileCheck cost_profile_check_judge(double step_s, const CostProfile& cost, double band);

// Times the check on the profile's request (its context and the target's sampling): the
// target's cache is filled to the profile's context, and cut to 0 after.
double cost_profile_check_time(TokenRunner& target, const CostProfileRequest& request);

}  // namespace speclab
