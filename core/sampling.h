// Turning logits into the distribution a token is drawn from, and drawing it.
//
// The paper (Leviathan et al. 2023, section 2.3) verifies speculative drafts against
// "standardized" distributions: whatever transform sampling applies (argmax, temperature,
// top-k, top-p) is applied to both p (target) and q (draft) first, and speculative
// sampling is then exact for the standardized p. sampling_standardize is that transform.
//
// Order, as Hugging Face's logits warpers apply it:
//   temperature -> top-k -> top-p -> renormalize.
// Temperature 0 means greedy: a one-hot distribution at argmax (ties -> lowest id), and
// top-k / top-p are irrelevant.
#pragma once

#include <cstdint>

namespace speclab {

struct SamplingParams {
  float temperature = 1.0f;  // >= 0; 0 = greedy (one-hot at argmax)
  int top_k = 0;             // >= 0; 0 = off; keep the k most probable ids
  float top_p = 1.0f;        // in (0, 1]; 1 = off; keep the smallest top set with mass >= top_p
};

// Throws InputError naming the bad field (temperature < 0 or not finite, top_k < 0,
// top_p outside (0, 1]).
void sampling_validate(const SamplingParams& params);

// probs[n] = standardized distribution of logits[n] under params (see the order above).
//   T > 0: softmax(logits / T) accumulated in double (max subtracted for stability);
//   top-k: keep the k largest logits, ties at the boundary go to the lower id;
//   top-p: sort the kept ids by probability (ties: lower id first) and keep the smallest
//          prefix whose mass (relative to what top-k kept) is >= top_p, at least one id;
//   renormalize over the kept ids; all others are exactly 0.
// Cost: O(n) when top-k and top-p are off; O(n + k log k) with top-k; with top-p only, a
// growing selection (nth_element + sort of a head window, x4 per step) that sorts only
// about as many ids as top-p keeps.
// Logits may be -inf (masked ids) but not NaN, and at least one must be finite.
void sampling_standardize(float* probs, const float* logits, int64_t n,
                          const SamplingParams& params);

// Inverse-CDF draw from weights[n] (>= 0, need not sum to 1: the draw is proportional to
// them) with u in [0, 1). Never returns an id of weight 0: when float rounding leaves
// u * total beyond the accumulated sum, the last id with positive weight is returned.
int32_t sampling_draw(const float* weights, int64_t n, double u);

// Index of the largest value; ties go to the lowest id.
int32_t sampling_argmax(const float* values, int64_t n);

// Shannon entropy of probs[n] divided by log(n): 0 for one-hot, 1 for uniform.
double sampling_entropy_normalized(const float* probs, int64_t n);

}  // namespace speclab
