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

// The same draw left on the device, for a chain of draft steps with one synchronization at its
// end: writes the record to *d_record and, where next_step is not null, makes next_step (a
// forward pass's [n_past, id] step buffer, device) the next one-token step:
// next_step[0] += advance, next_step[1] = the drawn id (0 when every weight is zero: the
// record's token is then -1 and the host refuses it after the chain, while the pass it feeds
// reads a valid id). Enqueued on `stream`; nothing is copied or synchronized. u as above
// (checked on the host: InputError).
void cuda_draft_sample_async(CudaDraftSample* d_record, int32_t* next_step, int32_t advance,
                             const float* q, int64_t vocab, double u, cudaStream_t stream);

}  // namespace speclab
