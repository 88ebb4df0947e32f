// The result row: one flat JSON object per measured cell in results/<name>/results.jsonl (and
// per predicted cell in predictions.jsonl), declared once here, after llama-bench's
// `struct test`: each field is named once with its type, unit and meaning in the X-macro list
// below; the struct's members, its JSON writer and reader, the field table that
// docs/result-fields.md and analysis/result_fields.json are generated from, and the
// field-name constants (`row_field::speedup`) all come from that one list. Readers use the
// struct's members, never a key string.
//
// The cell's own parameters (cell_id, drafter, gamma, temperature, ... : the sweep axes) are
// not listed here: they are `ResultRow::cell`, written flat into the same object by
// Cell::to_json() and read back by Cell::from_json() (experiments/config/sweep.h), so a new sweep
// axis reaches the row without an edit here.
//
// Every field is optional: a row carries what its kind of cell measured (a cost-only cell has
// no speedup; a run without prediction no predicted_speedup), and rows written by older
// versions lack newer fields. Keys this version does not know are kept verbatim in `extra`
// and written back unchanged (merge and resume never drop a field an older row had), and a
// renamed field is read under its old name as well (result_row.cpp, kRenamedFields).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/sweep.h"

namespace speclab {

// One prompt (and repeat) of a measured cell: its raw times and counts, so per-category and
// bootstrap figures can be recomputed from the row alone.
// X(type, name, unit, meaning)
#define SPECLAB_RESULT_SAMPLE_FIELDS(X)                                               \
  X(std::string, prompt_id, "", "the prompt's id in its JSONL file")                  \
  X(std::string, category, "", "the prompt's category (task), \"\" when it has none") \
  X(int64_t, repeat, "", "which timed repeat of the prompt (0-based)")                \
  X(double, baseline_s, "s", "decode-phase wall seconds of the target alone")         \
  X(int64_t, baseline_tokens, "tokens", "tokens the target alone generated")          \
  X(double, spec_s, "s", "decode-phase wall seconds of the speculative decoder")      \
  X(int64_t, spec_tokens, "tokens", "tokens the speculative decoder generated")       \
  X(int64_t, rounds, "", "speculative rounds")                                        \
  X(int64_t, drafted, "tokens", "tokens drafted")                                     \
  X(int64_t, tested, "tokens", "drafted tokens that reached the acceptance test")     \
  X(int64_t, accepted, "tokens", "drafted tokens accepted")                           \
  X(int64_t, emitted, "tokens", "tokens emitted by the rounds (accepted plus one per round)")

struct ResultSample {
#define SPECLAB_X(type, name, unit, meaning) std::optional<type> name;
  SPECLAB_RESULT_SAMPLE_FIELDS(SPECLAB_X)
#undef SPECLAB_X
};

// One point of a cost-only cell's predicted-speedup grid.
#define SPECLAB_GRID_POINT_FIELDS(X)                                  \
  X(double, alpha, "", "the acceptance rate assumed")                 \
  X(int64_t, gamma, "tokens", "tokens drafted per round")             \
  X(double, thm38, "x", "Theorem 3.8's speedup at (alpha, c, gamma)") \
  X(double, refined, "x", "the speedup with the measured T(k) in place of T(1)")

struct GridPoint {
#define SPECLAB_X(type, name, unit, meaning) std::optional<type> name;
  SPECLAB_GRID_POINT_FIELDS(SPECLAB_X)
#undef SPECLAB_X
};

using ResultSamples = std::vector<ResultSample>;
using PredictedGrid = std::vector<GridPoint>;
using DtypeCounts = std::map<std::string, int64_t>;  // dtype name -> tensors of that dtype

// X(group, type, name, unit, meaning). group: which part of the row (docs, the gate's identity
// comparison): run, machine, conditions, target, draft, cost, measured, time, parts, speedup,
// batching, prediction, flags, cost_only, predict.
#define SPECLAB_RESULT_ROW_FIELDS(X)                                                               \
  X(run, std::string, row_kind, "",                                                                \
    "measured (a speculative cell and its baseline), cost_only (measure.cost_only) or "            \
    "predicted (a row of `speclab predict`); rows before this field: inferred")                    \
  X(run, std::string, experiment, "", "the config's `name`")                                       \
  X(run, std::string, config_file, "", "the config file as given on the command line")             \
  X(run, std::string, config_hash, "", "16 hex digits identifying the resolved config")            \
  X(run, std::string, git_commit, "",                                                              \
    "the source tree's commit (short hash) the binary was built from")                             \
  X(run, int64_t, max_new_tokens, "tokens", "generation.max_new_tokens")                           \
  X(run, int64_t, seed, "", "generation.seed")                                                     \
  X(run, int64_t, repeats, "", "generation.repeats: timed runs per prompt")                        \
  X(run, int64_t, n_prompts, "", "prompts in the run")                                             \
  X(machine, std::string, machine_cpu_model, "", "/proc/cpuinfo model name")                       \
  X(machine, int64_t, machine_cores, "", "logical CPUs online")                                    \
  X(machine, int64_t, machine_threads, "", "threads the run used")                                 \
  X(machine, double, machine_memory_gb, "GB", "total memory (1e9 bytes)")                          \
  X(machine, double, machine_mem_read_gbps, "GB/s",                                                \
    "measured streaming read bandwidth (0 = not measured)")                                        \
  X(machine, std::string, machine_hostname, "", "the host's name")                                 \
  X(machine, std::string, machine_git_commit, "",                                                  \
    "`git rev-parse --short HEAD` of the source tree")                                             \
  X(machine, std::string, machine_gpu, "", "the CUDA device of a cuda-backend run, or none")       \
  X(conditions, std::string, run_git_describe, "", "`git describe --dirty` of the source tree")    \
  X(conditions, std::string, run_cpu_model_name, "", "/proc/cpuinfo model name of processor 0")    \
  X(conditions, std::string, run_cpu_family, "", "/proc/cpuinfo cpu family")                       \
  X(conditions, std::string, run_cpu_model, "", "/proc/cpuinfo model")                             \
  X(conditions, std::string, run_build_type, "", "CMake build type of the binary")                 \
  X(conditions, std::string, run_matmul_isa, "", "the matmul kernel path dispatched at run time")  \
  X(conditions, std::string, run_weights_layout, "",                                               \
    "how the target's BF16 matrices lie for the CPU kernels: rows, row pairs (SPECLAB_MATMUL_"     \
    "LAYOUT; rows 2p and 2p + 1 interleaved a 32-column step at a time) or rows and row pairs "    \
    "(some matrices do not fit); a GPU's copy is plain rows either way")                           \
  X(conditions, std::string, run_cuda_graphs, "",                                                  \
    "CUDA graphs of the one-request runners (SPECLAB_CUDA_GRAPHS, unset: on since 2026-12-04): "   \
    "on or off on the cuda "                                                                       \
    "backend (off in every concurrency > 1 cell: the batched runners capture none), none on cpu")  \
  X(conditions, std::string, run_utc, "", "when the cell's timed runs started (UTC)")              \
  X(conditions, double, run_load_before, "",                                                       \
    "1-minute load average before the cell (-1 unreadable)")                                       \
  X(conditions, double, run_load_after, "", "1-minute load average after the cell")                \
  X(conditions, double, run_mem_free_gb, "GiB", "MemAvailable before the cell")                    \
  X(target, std::string, target_spec, "", "the target as the config wrote it")                     \
  X(target, std::string, target_format, "", "safetensors, gguf or synthetic")                      \
  X(target, std::string, target_sha256, "", "sha256 of the target's weight files")                 \
  X(target, int64_t, target_parameters, "", "the target's parameter count")                        \
  X(target, int64_t, target_weight_bytes_per_token, "bytes", "weight bytes one decode step reads") \
  X(target, DtypeCounts, target_dtypes, "", "tensor count per dtype")                              \
  X(target, int64_t, target_layers, "", "transformer layers")                                      \
  X(target, int64_t, target_dim, "", "model width")                                                \
  X(target, int64_t, target_vocab, "", "vocabulary size")                                          \
  X(draft, std::string, draft_name, "", "the drafter's name in the config")                        \
  X(draft, std::string, draft_spec, "", "the drafter spec as written")                             \
  X(draft, std::string, draft_kind, "", "deterministic (n-gram, lookup) or sampled (a model)")     \
  X(draft, std::string, draft_format, "", "a draft model's format")                                \
  X(draft, std::string, draft_sha256, "", "sha256 of a draft model's weight files")                \
  X(draft, int64_t, draft_parameters, "", "a draft model's parameter count")                       \
  X(draft, int64_t, draft_weight_bytes_per_token, "bytes", "weight bytes one draft step reads")    \
  X(draft, DtypeCounts, draft_dtypes, "", "tensor count per dtype")                                \
  X(draft, int64_t, draft_layers, "", "transformer layers")                                        \
  X(draft, int64_t, draft_dim, "", "model width")                                                  \
  X(draft, int64_t, draft_vocab, "", "vocabulary size")                                            \
  X(cost, int64_t, cost_context_len, "tokens", "context length at which T(k) was timed")           \
  X(cost, double, target_t1_s, "s", "T(1): one target forward of one token")                       \
  X(cost, std::vector<double>, target_tk_s, "s", "T(k) for k = 1..cost_curve_max_k")               \
  X(cost, std::vector<double>, target_tk_ratio, "", "T(k)/T(1) for k = 1..cost_curve_max_k")       \
  X(measured, ResultSamples, samples, "", "per prompt and repeat: raw times and counts")           \
  X(measured, int64_t, tokens_baseline, "tokens", "tokens generated by the target alone")          \
  X(measured, int64_t, tokens_spec, "tokens", "tokens generated speculatively")                    \
  X(measured, double, wall_baseline_s, "s", "decode seconds of the target alone, summed")          \
  X(measured, double, wall_spec_s, "s", "decode seconds of the speculative runs, summed")          \
  X(measured, int64_t, target_calls_baseline, "", "target forwards of the baseline")               \
  X(measured, int64_t, target_calls_spec, "", "target forwards of the speculative runs")           \
  X(measured, int64_t, draft_calls, "", "draft forwards (model drafters)")                         \
  X(measured, int64_t, rounds, "", "speculative rounds")                                           \
  X(measured, int64_t, drafted, "tokens", "tokens drafted")                                        \
  X(measured, int64_t, tested, "tokens", "drafted tokens that reached the acceptance test")        \
  X(measured, int64_t, accepted, "tokens", "drafted tokens accepted")                              \
  X(measured, std::vector<int64_t>, drafted_by_position, "tokens", "drafted, per draft position")  \
  X(measured, std::vector<int64_t>, tested_by_position, "tokens", "tested, per draft position")    \
  X(measured, std::vector<int64_t>, accepted_by_position, "tokens",                                \
    "accepted, per draft position")                                                                \
  X(measured, double, repeated_4gram_share, "",                                                    \
    "share of the outputs' 4-grams seen earlier in them (a looping text drafts easily)")           \
  X(measured, bool, greedy_outputs_match, "",                                                      \
    "T = 0 with a baseline: every speculative output equalled the target's greedy output")         \
  X(measured, std::string, exactness_check, "",                                                    \
    "which exactness check ran: pit (T > 0: the tokens' PIT under p is uniform), greedy_tokens "   \
    "(T = 0 with a baseline: greedy_outputs_match), argmax (T = 0, no baseline: each token is "    \
    "the argmax of p), or \"not applicable: \" and why (docs/measurement-protocol.md)")            \
  X(measured, double, law_check_level, "",                                                         \
    "pit / argmax: the family-wise level below which law_mismatch is raised (1e-4)")               \
  X(measured, int64_t, law_check_tokens, "tokens",                                                 \
    "pit / argmax: emitted tokens checked (each prompt's first repeat, host-verified rounds)")     \
  X(measured, int64_t, law_check_impossible_tokens, "tokens",                                      \
    "pit / argmax: checked tokens of probability 0 under p (T = 0: not the argmax)")               \
  X(measured, double, law_check_statistic, "",                                                     \
    "pit: Pearson's X^2 of the tokens' PIT on 10 equal bins (9 degrees of freedom)")               \
  X(measured, double, law_check_p_value, "",                                                       \
    "pit: Bonferroni p-value over the overall and per-position tests (0: an impossible token)")    \
  X(measured, std::vector<int64_t>, law_check_tokens_by_position, "tokens",                        \
    "pit: checked tokens per position within the round (1..gamma+1)")                              \
  X(measured, std::vector<double>, law_check_p_value_by_position, "",                              \
    "pit: unadjusted p-value per position within the round; -1: under 50 tokens, not tested")      \
  X(measured, double, law_check_noncentrality_80, "",                                              \
    "pit: the noncentrality the overall test detects with 80% power at its level")                 \
  X(measured, double, law_check_min_detectable_tv, "",                                             \
    "pit: smallest total-variation distance of the binned PIT law from uniform detected with "     \
    "80% power, whatever its shape: sqrt(law_check_noncentrality_80 / (4 law_check_tokens))")      \
  X(measured, double, law_check_power_accept_all, "",                                              \
    "pit, chains: the test's power against a verifier that accepts every draft, from this "        \
    "run's own drafts")                                                                            \
  X(measured, double, alpha_empirical, "",                                                         \
    "accepted / tested in this run (depends on gamma; the pair's alpha is alpha_profile)")         \
  X(measured, double, alpha_beta, "", "Corollary 3.6's alpha at the tested positions (chains)")    \
  X(measured, double, alpha_se, "", "binomial standard error of alpha_empirical")                  \
  X(measured, std::vector<double>, acceptance_by_position, "", "P(accept at i | reached i)")       \
  X(measured, std::vector<double>, survival_by_position, "", "P(reach position i)")                \
  X(measured, double, tau, "tokens", "tokens per round")                                           \
  X(measured, double, tau_se, "tokens", "standard error of tau over rounds")                       \
  X(measured, double, mean_drafted_per_round, "tokens", "drafted / rounds")                        \
  X(measured, int64_t, tree_nodes, "", "tree cells: draft nodes verified")                         \
  X(measured, double, mean_tree_nodes_per_round, "", "tree cells: nodes per round")                \
  X(measured, std::vector<double>, acceptance_by_position_configured, "",                          \
    "synthetic cells: the configured accept probability per position")                             \
  X(time, double, draft_s, "s", "time breakdown (accounting, not a prediction): drafting")         \
  X(time, double, verify_s, "s", "time breakdown: target verification forwards")                   \
  X(time, double, sample_s, "s", "time breakdown: the host's accept/reject and bookkeeping")       \
  X(time, double, draft_s_per_drafted_token, "s", "draft_s / drafted")                             \
  X(time, double, round_host_s, "s", "sample_s / rounds")                                          \
  X(time, int64_t, rounds_verified_on_device, "",                                                  \
    "rounds whose verification ran on the target's device")                                        \
  X(parts, double, step_layers_s, "s",                                                             \
    "plain loop per token: the target's layers (embeddings included; the whole forward when "      \
    "the runner does not split it)")                                                               \
  X(parts, double, step_head_s, "s", "plain loop per token: the output head")                      \
  X(parts, double, step_standardize_s, "s", "plain loop per token: logits to probabilities")       \
  X(parts, double, step_draw_s, "s", "plain loop per token: the draw")                             \
  X(parts, double, step_other_s, "s", "plain loop per token: the rest (bookkeeping)")              \
  X(parts, double, round_draft_forward_s, "s", "per round: the draft model's forward calls")       \
  X(parts, double, round_draft_other_s, "s", "per round: the rest of the drafting (its sampling)") \
  X(parts, double, round_verify_layers_s, "s", "per round: the verify's layers")                   \
  X(parts, double, round_verify_head_s, "s", "per round: the verify's output head")                \
  X(parts, double, round_standardize_s, "s", "per round: the target rows to probabilities")        \
  X(parts, double, round_accept_s, "s", "per round: Algorithm 1's accept/reject")                  \
  X(parts, double, round_other_s, "s", "per round: the rest (bookkeeping)")                        \
  X(parts, double, profile_step_layers_s, "s", "the cost profile's step_layers_s")                 \
  X(parts, double, profile_step_head_s, "s", "the cost profile's step_head_s")                     \
  X(parts, double, profile_step_standardize_s, "s", "the cost profile's step_standardize_s")       \
  X(parts, double, profile_step_draw_s, "s", "the cost profile's step_draw_s")                     \
  X(parts, double, profile_round_draft_forward_s, "s",                                             \
    "round_draft_forward_s as the cost profile prices this run's rounds (catch-ups included)")     \
  X(parts, double, profile_round_draft_other_s, "s", "the same for round_draft_other_s")           \
  X(parts, double, profile_round_verify_layers_s, "s", "the same for round_verify_layers_s")       \
  X(parts, double, profile_round_verify_head_s, "s", "the same for round_verify_head_s")           \
  X(parts, double, profile_round_standardize_s, "s", "the same for round_standardize_s")           \
  X(parts, double, profile_round_accept_s, "s", "the same for round_accept_s")                     \
  X(parts, double, profile_error_at_run_rounds, "",                                                \
    "the speedup the cost profile gives this run's own rounds (its plain step x the run's "        \
    "tokens over its price of the run's rounds, the profile_round_* parts) / speedup - 1: the "    \
    "cost side of prediction_error without acceptance luck; a diagnostic, not a prediction")       \
  X(parts, double, thm38_error_at_run_rounds, "",                                                  \
    "Theorem 3.8's cost model at this run's own rounds: tau / (gamma c_profile + 1) / speedup - "  \
    "1, the run's tokens per round in place of the law's expectation; beside "                     \
    "profile_error_at_run_rounds, the two cost models compared without acceptance luck; a "        \
    "diagnostic, not a prediction")                                                                \
  X(speedup, double, speedup, "x", "(baseline s/token) / (speculative s/token)")                   \
  X(speedup, double, speedup_ci_lo, "x", "percentile-bootstrap interval over prompts, low end")    \
  X(speedup, double, speedup_ci_hi, "x", "percentile-bootstrap interval over prompts, high end")   \
  X(speedup, double, baseline_s_per_token, "s", "wall_baseline_s / tokens_baseline")               \
  X(speedup, double, spec_s_per_token, "s", "wall_spec_s / tokens_spec")                           \
  X(batching, double, throughput_baseline_tokens_per_s, "tokens/s",                                \
    "concurrency > 1: tokens of every request / wall time of the plain batched loop")              \
  X(batching, double, throughput_spec_tokens_per_s, "tokens/s",                                    \
    "concurrency > 1: tokens of every request / wall time of the speculative batched loop")        \
  X(batching, double, throughput_speedup, "x",                                                     \
    "throughput_spec_tokens_per_s / throughput_baseline_tokens_per_s (speedup is then the "        \
    "per-request one: decode s per token of each request, summed over requests)")                  \
  X(batching, double, throughput_speedup_ci_lo, "x",                                               \
    "bootstrap over prompts of N x tokens / (sum of the requests' time in flight), as a relative " \
    "spread around throughput_speedup: low end; absent (with speedup_ci_*) when every request of " \
    "the queue was in flight at once, where resampling prompts moves nothing")                     \
  X(batching, double, throughput_speedup_ci_hi, "x", "the same, high end")                         \
  X(batching, double, tpot_baseline_median_s, "s",                                                 \
    "median over requests of time per output token after the first, plain loop")                   \
  X(batching, double, tpot_baseline_p90_s, "s", "its 90th percentile")                             \
  X(batching, double, tpot_spec_median_s, "s", "the same, speculative loop")                       \
  X(batching, double, tpot_spec_p90_s, "s", "its 90th percentile")                                 \
  X(batching, double, ttft_baseline_median_s, "s",                                                 \
    "median time to first token after admission (prefill + first step), plain loop")               \
  X(batching, double, ttft_spec_median_s, "s", "the same, speculative loop")                       \
  X(batching, int64_t, batch_steps_baseline, "", "steps of the plain batched loop")                \
  X(batching, int64_t, batch_steps_spec, "",                                                       \
    "steps (rounds of all requests) of the speculative loop")                                      \
  X(batching, double, mean_active_requests_spec, "",                                               \
    "requests in flight per speculative step, averaged over steps")                                \
  X(prediction, std::string, prediction_group, "", "the profile group (12 hex digits)")            \
  X(prediction, std::string, prediction_model, "",                                                 \
    "chain, policy-walk, configured-acceptance, tree-top-b (top-k trees from the measured "        \
    "top-b mass), tree-sampled-b (sampled trees from the measured sample mass and distinct "       \
    "draws), tree-approx (siblings as independent tries); batched-loop at concurrency > 1")        \
  X(prediction, double, predicted_speedup, "x", "out-of-sample prediction from the profiles")      \
  X(prediction, double, predicted_tokens_per_round, "tokens", "predicted tau")                     \
  X(prediction, double, predicted_speedup_ci_lo, "x",                                              \
    "predicted_speedup's interval from the acceptance profile's sampling error, low end "          \
    "(prompts bootstrapped as clusters, costs fixed; one-request chain and tree cells)")           \
  X(prediction, double, predicted_speedup_ci_hi, "x", "its high end")                              \
  X(prediction, double, predicted_tokens_per_round_ci_lo, "tokens",                                \
    "predicted_tokens_per_round's interval, low end (as predicted_speedup_ci_lo)")                 \
  X(prediction, double, predicted_tokens_per_round_ci_hi, "tokens", "its high end")                \
  X(prediction, double, predicted_speedup_cost_lo, "x",                                            \
    "predicted_speedup with the plain loop at the fastest and the speculative loop at the "        \
    "slowest of the cost profile's repetitions (a range, not a confidence interval: what the "     \
    "profile's own timing spread allows; one-request cells, absent without a recorded spread)")    \
  X(prediction, double, predicted_speedup_cost_hi, "x", "the reverse: its high end")               \
  X(prediction, double, predicted_speedup_mean_costs, "x",                                         \
    "predicted_speedup with every timed figure of the cost profile at the mean of its "            \
    "repetitions instead of the median (one request at a time); a diagnostic, not "                \
    "a prediction of its own")                                                                     \
  X(prediction, int64_t, acceptance_profile_stride, "",                                            \
    "measure.acceptance_stride of the acceptance profile (absent: 1, every position)")             \
  X(prediction, double, predicted_drafted_per_round, "tokens", "predicted drafted per round")      \
  X(prediction, double, predicted_tree_nodes_per_round, "",                                        \
    "tree cells: predicted drafted nodes per round (sampled levels count their expected "          \
    "distinct draws; beside mean_tree_nodes_per_round)")                                           \
  X(prediction, double, predicted_spec_s_per_token, "s", "predicted speculative s/token")          \
  X(prediction, double, predicted_baseline_s_per_token, "s", "predicted baseline s/token")         \
  X(prediction, double, alpha_profile, "", "the pair's alpha from the acceptance profile")         \
  X(prediction, double, alpha_profile_ci_lo, "", "its interval, low end")                          \
  X(prediction, double, alpha_profile_ci_hi, "", "its interval, high end")                         \
  X(prediction, int64_t, alpha_profile_positions, "", "positions behind alpha_profile")            \
  X(prediction, std::vector<double>, acceptance_profile_by_position, "",                           \
    "profile: P(accept at i | reached i)")                                                         \
  X(prediction, std::vector<double>, survival_profile_by_position, "", "profile: P(reach i)")      \
  X(prediction, double, c_profile, "", "the paper's c from the cost profile")                      \
  X(prediction, double, lenient_tv_profile, "",                                                    \
    "lenient cells: mean total variation to the target's law")                                     \
  X(prediction, double, thm38_alpha, "", "the alpha Theorem 3.8 was given")                        \
  X(prediction, double, thm38_speedup, "x", "Theorem 3.8 at (thm38_alpha, c_profile, gamma)")      \
  X(prediction, std::string, profile_prompts, "",                                                  \
    "same: the acceptance profile was measured on this config's prompts; other: on another "       \
    "prompt set (held out, read with --profiles DIR); absent when its index does not say")         \
  X(prediction, std::string, cost_profile_source, "",                                              \
    "measured (in this run), reused (read from a profile file), csv or llama-bench (imported)")    \
  X(prediction, std::string, cost_profile_file, "",                                                \
    "the cost profile's file: written when measured, read when reused or imported")                \
  X(prediction, std::string, cost_profile_taken_utc, "",                                           \
    "when the cost profile was measured (UTC); absent when its file does not say")                 \
  X(prediction, std::string, cost_profile_check, "",                                               \
    "speclab run, one request: held (the target's plain step timed before the cell lay within "    \
    "measure.cost_profile_recheck of the profile's plain step) or retaken (it did not: the "       \
    "cost profile was taken again before the prediction, into cost_profile_file)")                 \
  X(prediction, double, cost_profile_check_step_s, "s",                                            \
    "the plain step the check before the cell timed (median of 3 runs)")                           \
  X(prediction, int64_t, cost_profile_context_len, "tokens", "context length of the cost profile") \
  X(prediction, std::vector<double>, cost_profile_target_s, "s",                                   \
    "profile: T(k), timed right after a draft proposal (a verify's place in the loop)")            \
  X(prediction, double, cost_profile_baseline_step_s, "s",                                         \
    "profile: the plain loop's step, T(1) timed right after another; absent when the profile "     \
    "has none (T(1) stands in)")                                                                   \
  X(prediction, std::vector<double>, cost_profile_draft_round_s, "s",                              \
    "profile: a draft round of k tokens")                                                          \
  X(prediction, double, cost_profile_draft_catchup_s, "s",                                         \
    "profile: the draft's catch-up after a fully accepted round")                                  \
  X(prediction, double, cost_profile_draft_prefill_s, "s", "profile: the draft's prefill")         \
  X(prediction, std::vector<double>, cost_profile_host_round_s, "s",                               \
    "profile: the host's cost of a round of k")                                                    \
  X(prediction, std::vector<double>, cost_profile_verify_device_s, "s",                            \
    "profile: one verification of k tokens on the target's device (forward, standardize and "      \
    "verify there, the record back); absent when the target verifies on the host")                 \
  X(prediction, bool, predicted_verify_on_device, "",                                              \
    "the prediction priced each round's verification as the device round the profile timed "       \
    "(cost_profile_verify_device_s), not as T(k) + the host's standardize and verify")             \
  X(prediction, double, prediction_error, "", "predicted_speedup / speedup - 1")                   \
  X(prediction, double, thm38_error, "", "thm38_speedup / speedup - 1")                            \
  X(prediction, double, prediction_error_mean_costs, "",                                           \
    "predicted_speedup_mean_costs / speedup - 1")                                                  \
  X(prediction, double, predicted_throughput_speedup, "x",                                         \
    "concurrency > 1: throughput_speedup predicted by replaying the closed loop from the batched " \
    "cost profile (predicted_speedup is then the per-request one)")                                \
  X(prediction, double, predicted_throughput_baseline_tokens_per_s, "tokens/s",                    \
    "concurrency > 1: predicted throughput of the plain batched loop")                             \
  X(prediction, double, predicted_throughput_spec_tokens_per_s, "tokens/s",                        \
    "concurrency > 1: predicted throughput of the speculative batched loop")                       \
  X(prediction, double, predicted_prefill_share, "",                                               \
    "concurrency > 1: predicted share of the speculative loop's time spent admitting prompts")     \
  X(prediction, std::string, batched_cost_profile_source, "",                                      \
    "concurrency > 1: measured (in this run) or reused (read from its file)")                      \
  X(prediction, std::string, batched_cost_profile_file, "",                                        \
    "concurrency > 1: the batched cost profile's file (T(b, k), draft(b, n), catch-up, prefill)")  \
  X(prediction, double, throughput_prediction_error, "",                                           \
    "predicted_throughput_speedup / throughput_speedup - 1")                                       \
  X(prediction, std::vector<int64_t>, predicted_gamma_by_load, "tokens",                           \
    "gamma_policy predicted: gamma drafted with b requests in flight, [b] for b = 0..(0 unused; "  \
    "0 drafts nothing)")                                                                           \
  X(flags, std::vector<std::string>, flags, "",                                                    \
    "sanity flags, \"code: what was seen\" (run_flags.h)")                                         \
  X(cost_only, double, draft_s_per_token, "s", "the draft's per-token call cost")                  \
  X(cost_only, double, c_measured, "", "draft_s_per_token / target_t1_s")                          \
  X(cost_only, double, weight_bytes_ratio, "", "draft / target weight bytes per token")            \
  X(cost_only, PredictedGrid, predicted_grid, "", "predicted speedups over alpha x gamma")         \
  X(predict, std::string, row_type, "", "predictions.jsonl: cell (one per cell) or group")         \
  X(predict, int64_t, speculative_generations_run, "",                                             \
    "speculative generations `speclab predict` ran (0: out of sample)")

struct ResultRow {
  Cell cell;  // the sweep axes and the cell's id, written flat (Cell::to_json)
#define SPECLAB_X(group, type, name, unit, meaning) std::optional<type> name;
  SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  nlohmann::json extra = nlohmann::json::object();  // keys this version does not declare

  // measured | cost_only | predicted (row_kind, or inferred for rows written before it).
  std::string kind() const;

  nlohmann::json to_json() const;
  // `where` names the row in errors ("results.jsonl:12"). A field of the wrong JSON type is an
  // InputError naming where and the field.
  static ResultRow from_json(const nlohmann::json& j, const std::string& where);
};

// Field names as constants, for table headers and messages that name a field.
namespace row_field {
#define SPECLAB_X(group, type, name, unit, meaning) constexpr const char* name = #name;
SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
}  // namespace row_field

struct ResultFieldInfo {
  std::string record;  // "row", "samples[]" or "predicted_grid[]"
  std::string group;
  std::string name;
  std::string type;  // string, number, integer, boolean, list of ..., mapping, list of records
  std::string unit;
  std::string meaning;
};

// Every declared field: the row's, then the sample's and the grid point's.
const std::vector<ResultFieldInfo>& result_row_fields();

// The fields of `group` present in `row` as JSON (the gate compares model identities so).
nlohmann::json result_row_group(const ResultRow& row, const std::string& group);

// docs/result-fields.md and analysis/result_fields.json, generated from the declaration.
std::string result_fields_markdown();
nlohmann::json result_fields_json();

}  // namespace speclab
