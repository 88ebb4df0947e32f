#include "experiments/predict/cost_range.h"

#include <utility>

namespace speclab {

bool cost_profile_at_spread(const CostProfile& cost, const CostProfileSpread& spread,
                            SpreadPoint point, CostProfile* out) {
  const auto at = [point](const TimingSpread& s) -> const std::vector<double>& {
    return point == SpreadPoint::kFastest ? s.min : point == SpreadPoint::kMean ? s.mean : s.max;
  };
  const auto covers = [&](const TimingSpread& s, const std::vector<double>& v) {
    return at(s).size() == v.size();
  };
  if (spread.reps <= 0 || !covers(spread.target_s, cost.target_s) ||
      !covers(spread.host_round_s, cost.host_round_s) ||
      !covers(spread.draft_round_s, cost.draft_round_s) || cost.draft_round_s.size() < 2 ||
      !covers(spread.verify_device_s, cost.verify_device_s) ||
      at(spread.baseline_step_s).size() != 1 ||
      spread.draft_tree_s.size() != cost.draft_tree_s.size())
    return false;
  for (const auto& [shape, v] : cost.draft_tree_s) {
    const auto it = spread.draft_tree_s.find(shape);
    if (it == spread.draft_tree_s.end() || !covers(it->second, v)) return false;
  }
  CostProfile c = cost;
  c.target_s = at(spread.target_s);
  c.host_round_s = at(spread.host_round_s);
  c.verify_device_s = at(spread.verify_device_s);
  c.draft_round_s = at(spread.draft_round_s);
  c.draft_step_s = c.draft_round_s[1];
  c.baseline_step_s = at(spread.baseline_step_s)[0];
  for (auto& [shape, v] : c.draft_tree_s) v = at(spread.draft_tree_s.at(shape));
  *out = std::move(c);
  return true;
}

SpeedupRange predict_cost_range(const CostProfile& cost, const CostProfileSpread& spread,
                                const AcceptanceProfile& acceptance, const ChainSetting& setting) {
  CostProfile fast, slow;
  if (!cost_profile_at_spread(cost, spread, SpreadPoint::kFastest, &fast) ||
      !cost_profile_at_spread(cost, spread, SpreadPoint::kSlowest, &slow))
    return {};
  const Prediction f = predict_chain(fast, acceptance, setting);
  const Prediction s = predict_chain(slow, acceptance, setting);
  return {f.base_s_per_token / s.spec_s_per_token, s.base_s_per_token / f.spec_s_per_token};
}

double predict_speedup_at_mean_costs(const CostProfile& cost, const CostProfileSpread& spread,
                                     const AcceptanceProfile& acceptance,
                                     const ChainSetting& setting) {
  CostProfile mean;
  if (!cost_profile_at_spread(cost, spread, SpreadPoint::kMean, &mean)) return NAN;
  return predict_chain(mean, acceptance, setting).speedup;
}

}  // namespace speclab
