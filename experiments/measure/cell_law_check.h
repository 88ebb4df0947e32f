// Which exactness check a measured cell carries (the row's exactness_check), and the in-run law
// check's part of its row and flags (core/law_check.h, docs/measurement-protocol.md):
//
//   "pit"            T > 0, exact verification (lenience 1, no synthetic acceptance): every
//                    emitted token's randomized PIT under the target's p is Uniform(0, 1);
//                    law_mismatch below the level 1e-4
//   "greedy_tokens"  T = 0 with measure.baseline: every speculative output equals the plain
//                    loop's token for token (greedy_outputs_match; greedy_mismatch)
//   "argmax"         T = 0 without a baseline: every emitted token is the argmax of its p row
//                    (p is one-hot there, so the PIT says no more; exact and free); law_mismatch
//   "not applicable: <why>"  synthetic acceptance and lenience < 1 (paper A.5) are inexact by
//                    design; a run whose every round was verified on the target's device never
//                    had p on the host
//
// The check reads each prompt's first repeat: later repeats run with the same seed and request
// id, so they emit the same tokens and would count each one again.
#pragma once

#include <string>

#include "core/law_check.h"
#include "experiments/config/sweep.h"
#include "experiments/measure/run_flags.h"
#include "experiments/results/result_row.h"

namespace speclab {

struct CellExactnessPlan {
  std::string check;       // the row's exactness_check before the run (see above)
  bool law_check = false;  // "pit" or "argmax": the first repeats run with law_check on
};

CellExactnessPlan cell_exactness_plan(const Cell& cell, bool baseline);

// After the run: the tally of the first repeats' generations (law_check_tally_add) into the row
// (exactness_check, law_check_*) and the flags' inputs. rounds_on_device: rounds the target
// verified on its device, which carry no u.
void cell_put_law_check(const CellExactnessPlan& plan, const LawCheckTally& tally,
                        int64_t rounds_on_device, ResultRow* row, RunFlagInputs* flags);

}  // namespace speclab
