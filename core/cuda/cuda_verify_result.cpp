#include "core/cuda/cuda_verify_result.h"

#include "core/error.h"

namespace speclab {

size_t cuda_verify_diag_floats(int n_draft) { return 3 * static_cast<size_t>(n_draft); }

void cuda_verify_check_args(int n_draft, int64_t vocab, bool has_p, bool has_draft,
                            const VerifyConfig& cfg) {
  SPECLAB_INPUT_CHECK(n_draft >= 0, "speculative_verify: n_draft must be >= 0, got ", n_draft);
  SPECLAB_INPUT_CHECK(vocab > 0, "speculative_verify: vocab must be > 0, got ", vocab);
  SPECLAB_INPUT_CHECK(has_p, "speculative_verify: p is null");
  SPECLAB_INPUT_CHECK(n_draft == 0 || has_draft, "speculative_verify: draft is null");
  SPECLAB_INPUT_CHECK(cfg.lenience > 0.0 && cfg.lenience <= 1.0,
                      "speculative_verify: lenience must lie in (0, 1], got ", cfg.lenience);
}

CudaRngKey cuda_rng_key_from(const RngKey& k) {
  return CudaRngKey{k.seed, k.request, k.position, k.stream, k.index};
}

VerifyOutcome cuda_verify_decode(const int32_t* header, const float* diag, int n_draft,
                                 const int32_t* draft_host) {
  const int32_t i = header[kVfIndex];
  const std::string id = draft_host ? str_cat(" = ", draft_host[i]) : std::string();
  switch (header[kVfStatus]) {
    case kCudaVerifyOk:
      break;
    case kCudaVerifyDraftOutOfRange:
      fail_input("speculative_verify: draft[", i, "]", id, " outside the vocabulary");
    case kCudaVerifyDraftQZero:
      fail_input("speculative_verify: draft[", i, "]", id,
                 " has q = 0 at its position; it cannot have been sampled from q");
    case kCudaVerifyAllZero:
      fail_input("sampling_draw: all weights are zero (position ", i, ")");
    default:
      fail_input("speculative_verify: unknown device status ", header[kVfStatus]);
  }
  VerifyOutcome out;
  out.n_accepted = header[kVfAccepted];
  out.next_token = header[kVfNext];
  out.bonus = header[kVfBonus] != 0;
  SPECLAB_ASSERT(out.n_accepted >= 0 && out.n_accepted <= n_draft);
  out.p_draft.assign(diag, diag + n_draft);
  out.q_draft.assign(diag + n_draft, diag + 2 * n_draft);
  out.beta.assign(diag + 2 * n_draft, diag + 3 * n_draft);
  return out;
}

}  // namespace speclab
