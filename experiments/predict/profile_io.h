// Profiles as files, so that other gammas, policies and shapes can be predicted offline
// (`speclab predict --profiles DIR`) and cost figures can come from another engine
// (`speclab predict --cost-profile FILE`). Formats: docs/prediction.md.
//
//   cost profile JSON      {"format": "speclab-cost-profile", "version": 1, "source",
//                           "context_len", "target_s": [T(1)..T(K)],
//                           "draft_round_s": [0, r(1)..r(G)], "draft_step_s",
//                           "draft_catchup_s", "draft_prefill_s", "host_round_s": [h(1)..h(K)],
//                           "c",
//                           "spread": {"reps", "<figure>": {"min", "median", "max"}, ...},
//                           "taken": {"utc", "load_before", "load_after", "git_commit",
//                                     "git_describe", "machine": {...}, "target_sha256",
//                                     "draft_sha256"}}
//                          spread and taken (CostProfileSpread, CostProfileTaken) are written
//                          for measured profiles and optional on reading: files written before
//                          them still read
//   cost profile CSV       header k,target_s[,draft_round_s][,host_s]; row k gives T(k), the
//                          draft seconds of a round proposing k tokens, the host seconds of a
//                          round verifying k tokens (missing columns: 0); rows k = 1..K in order
//   llama-bench JSON       `llama-bench -o json` of a target and a draft model (an array of
//                          runs): the model with more parameters is the target; its pp k runs
//                          (n_prompt = k, n_gen = 0) give T(k) = avg_ns, a tg run gives T(1) =
//                          avg_ns / n_gen when pp 1 is absent; the draft's tg run gives its
//                          seconds per step, rounds of n steps cost n of them; host 0.
//   batched cost profile   {"format": "speclab-batched-cost-profile", "version": 1, "source",
//                           "context_len", "slots": [b..], "target_s": [[T(b,1)..T(b,K)]..],
//                           "draft_round_s": [[0, d(b,1)..d(b,G)]..], "draft_catchup_s": [..],
//                           "target_prefill_s_per_token", "draft_prefill_s_per_token",
//                           "spread": {"reps", "<figure>": {"min", "median", "max"}, ...}
//                           (flattened b-major), "taken": as a cost profile's}
//   acceptance profile     {"format": "speclab-acceptance-profile", "version": 1, "max_depth",
//                           "prompts": [{"id", "accept": [[r..]..], "top_prob", "entropy",
//                           "beta": [..]}]}; measured at measure.acceptance_stride s > 1 it
//                          has "stride": s and each prompt "n_tokens" and "offset" (its
//                          rollouts are at t = offset + k s); without "stride": 1
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/speedup_prediction.h"
#include "experiments/predict/batched_cost_profile.h"
#include "experiments/predict/cost_profile.h"

namespace speclab {

nlohmann::json cost_profile_to_json(const CostProfileRecord& r);
nlohmann::json acceptance_profile_to_json(const AcceptanceProfile& a);
nlohmann::json batched_cost_profile_to_json(const BatchedCostProfileRecord& r);
// Throw InputError naming `where` and the field. A profile read from a file has source
// "reused" and origin `where`.
CostProfileRecord cost_profile_record_from_json(const nlohmann::json& j, const std::string& where);
CostProfile cost_profile_from_json(const nlohmann::json& j, const std::string& where);
BatchedCostProfileRecord batched_cost_profile_record_from_json(const nlohmann::json& j,
                                                               const std::string& where);
AcceptanceProfile acceptance_profile_from_json(const nlohmann::json& j, const std::string& where);

// Reads a cost profile in any of the formats above (JSON object, llama-bench JSON array, CSV),
// validated. InputError naming the file.
CostProfile cost_profile_import(const std::string& path);

// Whole-file JSON read with the file named in errors; InputError.
nlohmann::json profile_read_json(const std::string& path);
// Written atomically (temporary file + rename); InputError naming the file on failure.
void profile_write_json(const std::string& path, const nlohmann::json& j);

}  // namespace speclab
