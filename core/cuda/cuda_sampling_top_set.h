// Top-k / top-p standardization on the device without a sort: every row of a call at once,
// by the radix selection of core/cuda/cuda_top_set.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/sampling.h"

namespace speclab {

// probs[r, :] = sampling_standardize(logits[r, :]) for rows whose params have top-k or top-p
// (T > 0). best[r] is the row's argmax (lowest id of a tie), computed by the caller.
//   probs, logits: [n_rows, vocab] (device); best: [n_rows] (device)
// Kernels only, no host synchronization (graph-capturable): per selection four histogram
// passes over each row's chunks of kCudaSamplingChunk logits and four one-block picks, then
// the ties at the threshold ranked by id and the kept weights normalized, each reduction in
// a fixed order or in integers, so a row's result depends neither on the call's other rows
// nor on scheduling. Arguments are checked by cuda_sampling_standardize. Asynchronous on
// `stream`.
void cuda_sampling_top_set(float* probs, const float* logits, const int32_t* best, int64_t n_rows,
                           int64_t vocab, const SamplingParams& params, cudaStream_t stream);

}  // namespace speclab
