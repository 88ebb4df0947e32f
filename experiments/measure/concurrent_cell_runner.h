// The measurement protocol for a sweep cell at concurrency N > 1 (continuous batching):
//
//  * The queue is every prompt x repeat (request id = the prompt's index, as in cell_run), served
//    N at a time by a closed loop (models/decode/batched_decoder.h): when a request finishes,
//    the next one is prefilled into its slot.
//  * The plain loop (one batched target forward per step, no drafting) and the speculative
//    loop run the same queue with the same seeds, after a short untimed warmup of both.
//  * Throughput = tokens of every request / wall time of the loop; throughput_speedup is the
//    ratio, with a percentile bootstrap over prompts of N x tokens / (sum of the requests'
//    times in flight), clusters as in cell_run, taken as a relative spread around the ratio
//    (the statistic leaves out the loop's tail, where fewer than N requests remain).
//  * speedup is the per-request one at the same concurrency: (sum baseline decode s / sum
//    baseline tokens) / (the same speculative), a request's decode time running from its
//    prefill's end to its last token, other requests' work included; its interval as cell_run's.
//  * Per-request time per output token (median, p90) and time to first token (median) for both.
//  * With prediction on, the cell is predicted before it runs (the closed loop replayed from
//    the batched cost profile, experiments/predict/cell_prediction.h): predicted_speedup
//    (per request) and predicted_throughput_speedup beside the measured ones.
#pragma once

#include "experiments/config/sweep.h"
#include "experiments/measure/cell_runner.h"
#include "experiments/results/result_row.h"

namespace speclab {

// Runs cell (cell.concurrency > 1) on generation.backend's batched runners (BatchedLlamaRunner
// on cpu, CudaBatchedLlamaRunner on cuda: experiments/measure/backend.h); the drafter is built
// from cell.drafter_ref for cell.concurrency slots (prepared gives its identity), a draft
// model on the same backend. Throws InputError for a tree cell (before any work),
// CellInterrupted if interrupted. The session checks memory before the first cell.
ResultRow cell_run_concurrent(RunContext& ctx, const Cell& cell, PreparedDrafter& prepared);

}  // namespace speclab
