#include "experiments/measure/cell_law_check.h"

namespace speclab {

CellExactnessPlan cell_exactness_plan(const Cell& cell, bool baseline) {
  CellExactnessPlan plan;
  if (!cell.synthetic_acceptance.empty()) {
    plan.check = "not applicable: synthetic acceptance is inexact by design (timing only)";
  } else if (cell.lenience < 1.0) {
    plan.check = "not applicable: lenient verification (paper A.5) is inexact by design";
  } else if (cell.temperature == 0 && baseline) {
    plan.check = "greedy_tokens";
  } else {
    plan.check = cell.temperature == 0 ? "argmax" : "pit";
    plan.law_check = true;
  }
  return plan;
}

void cell_put_law_check(const CellExactnessPlan& plan, const LawCheckTally& tally,
                        int64_t rounds_on_device, ResultRow* row, RunFlagInputs* flags) {
  row->exactness_check = plan.check;
  if (!plan.law_check) return;
  const LawCheckResult r = law_check_evaluate(tally);
  const int64_t checked = r.n_tokens + r.impossible;
  if (checked == 0 && rounds_on_device > 0) {
    row->exactness_check =
        "not applicable: every round was verified on the target's device, where p stays";
    return;
  }
  row->law_check_level = kLawCheckLevel;
  row->law_check_tokens = checked;
  row->law_check_impossible_tokens = r.impossible;
  flags->law_check = plan.check;
  flags->law_tokens = checked;
  flags->law_impossible = r.impossible;
  if (plan.check != "pit") return;  // argmax: a wrong token is certain, no statistics to add
  row->law_check_tokens_by_position = r.tokens_by_position;
  row->law_check_p_value_by_position = r.p_value_by_position;
  // No p-value without a test that ran (under 50 tokens) or an impossible token.
  if (r.n_tests > 0 || r.impossible > 0) row->law_check_p_value = r.p_value;
  flags->law_p_value = r.p_value;
  if (r.tested) {
    row->law_check_statistic = r.statistic;
    row->law_check_noncentrality_80 = r.noncentrality_80;
    row->law_check_min_detectable_tv = r.min_detectable_tv;
    if (r.power_accept_all >= 0) row->law_check_power_accept_all = r.power_accept_all;
  }
}

}  // namespace speclab
