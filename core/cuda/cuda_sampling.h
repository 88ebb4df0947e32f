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
// other rows). With top-k / top-p, a row at a time: the ids are sorted on the device
// (thrust stable radix sort: larger logit first, ties -> lower id) and the kept prefix is
// found from an inclusive scan of the sorted weights. params are validated on the host
// (InputError). Precondition, not checked on the device: every row has a finite maximum.
// Asynchronous on `stream`.
void cuda_sampling_standardize(float* probs, const float* logits, int64_t n_rows, int64_t vocab,
                               const SamplingParams& params, cudaStream_t stream);

}  // namespace speclab
