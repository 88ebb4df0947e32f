// The draft's draw on the device: one id from a standardized row q by sampling_draw's
// inverse CDF (core/sampling.h) at a uniform the caller computed on the host from the
// drafter's Philox key, plus the scalars draft_sample_step records (max q, normalized
// entropy). Only that record crosses to the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace speclab {

struct CudaDraftSample {
  int32_t token = -1;
  float top_prob = 0;      // max_x q(x)
  float entropy_norm = 0;  // sampling_entropy_normalized(q, vocab)
};

// q: [vocab] device, >= 0, at least one positive (a standardized row). u in [0, 1) (checked
// on the host: InputError). One kernel (a single block) and a 12-byte copy; synchronizes
// `stream`, so everything queued on it before (the forward pass, the standardization of q)
// has finished when it returns.
CudaDraftSample cuda_draft_sample(const float* q, int64_t vocab, double u, cudaStream_t stream);

}  // namespace speclab
