// The host side of device verification: the small result record a verify kernel writes,
// and its decoding into a VerifyOutcome (plain C++, unit-tested without a GPU).
//
// Only this record crosses to the host after a round: a header of kCudaVerifyHeader ints
// and the per-position diagnostics [3, n_draft] floats (p(d_i), q(d_i), beta_i). The
// distributions stay on the device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_philox.h"
#include "core/rng.h"
#include "core/speculative_verify.h"

namespace speclab {

// header[kCudaVerifyHeader]: status, index, n_accepted, next_token, bonus
enum CudaVerifyField : int {
  kVfStatus = 0,
  kVfIndex,
  kVfAccepted,
  kVfNext,
  kVfBonus,
  kCudaVerifyHeader
};

// What a kernel cannot throw, it reports: header[kVfStatus] with the position in kVfIndex.
enum CudaVerifyStatus : int32_t {
  kCudaVerifyOk = 0,
  kCudaVerifyDraftOutOfRange = 1,  // draft[i] outside [0, vocab)
  kCudaVerifyDraftQZero = 2,       // q_i(d_i) = 0: d_i cannot have been sampled from q_i
  kCudaVerifyAllZero = 3,          // a draw met all-zero weights
};

// Floats of the diagnostics block for n_draft positions.
size_t cuda_verify_diag_floats(int n_draft);

// Host checks done before launching (same messages as speculative_verify).
void cuda_verify_check_args(int n_draft, int64_t vocab, bool has_p, bool has_draft,
                            const VerifyConfig& config);

// RngKey -> the kernel's POD key.
CudaRngKey cuda_rng_key_from(const RngKey& key);

// Decodes the record (throws InputError for a non-OK status, naming the position and the
// draft id). draft_host (optional, [n_draft]) only improves the message.
//   header: [kCudaVerifyHeader]   diag: [3, n_draft]
VerifyOutcome cuda_verify_decode(const int32_t* header, const float* diag, int n_draft,
                                 const int32_t* draft_host = nullptr);

}  // namespace speclab
