// The CUDA twin of speculative_verify (core/speculative_verify.h): Algorithm 1 on
// distributions that live on the device, with the same Philox keys as the CPU
// (kRngAcceptTest / kRngResidualSample / kRngBonusSample at base.position + i), so a device
// round accepts and emits what the CPU would for the same inputs, up to float summation
// order in the residual / bonus draw.
#pragma once

#include <cuda_runtime.h>

#include "core/speculative_verify.h"

namespace speclab {

struct CudaVerifyRound {
  int n_draft = 0;                 // gamma
  const int32_t* draft = nullptr;  // [n_draft] device
  const float* q = nullptr;        // [n_draft, vocab] device, or nullptr = one-hot drafter
  const float* p = nullptr;        // [n_draft + 1, vocab] device
  int64_t vocab = 0;
  const int32_t* draft_host = nullptr;  // optional [n_draft] copy, for error messages only
};

// One kernel (a single block) plus a copy of the small result record; synchronizes
// `stream`. The VerifyOutcome has the same fields and meaning as the CPU's.
VerifyOutcome cuda_speculative_verify(const CudaVerifyRound& round, const VerifyConfig& config,
                                      RngKey base, cudaStream_t stream);

}  // namespace speclab
