// The CUDA twin of sampling_standardize (core/sampling.h): logits -> standardized
// distributions on the device (temperature -> top-k -> top-p -> renormalize).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/sampling.h"

namespace speclab {

// probs[r, :] = sampling_standardize(logits[r, :]) for each of n_rows rows.
//   probs, logits: [n_rows, vocab] (device)
// Greedy (T = 0): one-hot at argmax (ties -> lowest id). Otherwise weights
// exp((logit - max) / T) in double. Temperature alone: every row at once, each row in
// chunks of 4,096 logits, sums in a fixed order (a row's result does not depend on the call's
// other rows). With top-k / top-p, every row at once too, without a sort: a radix selection
// finds each row's kept prefix of the order larger logit first, ties -> lower id
// (cuda_sampling_top_set, core/cuda/cuda_top_set.h). Kernels only, no host synchronization.
// params are validated on the host (InputError). Precondition, not checked on the device:
// every row has a finite maximum. Asynchronous on `stream`.
void cuda_sampling_standardize(float* probs, const float* logits, int64_t n_rows, int64_t vocab,
                               const SamplingParams& params, cudaStream_t stream);

}  // namespace speclab
