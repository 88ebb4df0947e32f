#include "core/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace speclab {

void sampling_validate(const SamplingParams& sp) {
  SPECLAB_INPUT_CHECK(std::isfinite(sp.temperature) && sp.temperature >= 0.0f,
                      "sampling: temperature must be a finite number >= 0, got ", sp.temperature);
  SPECLAB_INPUT_CHECK(sp.top_k >= 0, "sampling: top_k must be >= 0 (0 = off), got ", sp.top_k);
  SPECLAB_INPUT_CHECK(sp.top_p > 0.0f && sp.top_p <= 1.0f,
                      "sampling: top_p must lie in (0, 1] (1 = off), got ", sp.top_p);
}

int32_t sampling_argmax(const float* values, int64_t n) {
  SPECLAB_ASSERT(n > 0);
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++) {
    if (values[i] > values[best]) best = i;  // strict: ties keep the lower id
  }
  return static_cast<int32_t>(best);
}

void sampling_standardize(float* probs, const float* logits, int64_t n, const SamplingParams& sp) {
  sampling_validate(sp);
  SPECLAB_INPUT_CHECK(n > 0, "sampling: empty vocabulary");
  const int32_t best = sampling_argmax(logits, n);
  SPECLAB_INPUT_CHECK(std::isfinite(logits[best]),
                      "sampling: logits have no finite maximum (all -inf or NaN)");

  if (sp.temperature == 0.0f) {  // greedy: one-hot at argmax
    std::fill(probs, probs + n, 0.0f);
    probs[best] = 1.0f;
    return;
  }

  // weight[i] = exp((logit_i - max) / T) in (0, 1], unnormalized softmax.
  const double inv_t = 1.0 / static_cast<double>(sp.temperature);
  const double max_logit = logits[best];
  std::vector<double> weight(n);
  for (int64_t i = 0; i < n; i++) weight[i] = std::exp((logits[i] - max_logit) * inv_t);

  // Candidate order: larger logit first, then lower id (so equal logits break to the
  // lower id, both for the top-k boundary and the top-p prefix).
  auto before = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  const bool use_top_k = sp.top_k > 0 && sp.top_k < n;
  const bool use_top_p = sp.top_p < 1.0f;

  if (!use_top_k && !use_top_p) {
    const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
    for (int64_t i = 0; i < n; i++) probs[i] = static_cast<float>(weight[i] / total);
    return;
  }

  std::vector<int32_t> ids(n);  // ids[0..n_keep) = kept candidates, sorted by `before`
  std::iota(ids.begin(), ids.end(), 0);
  int64_t n_keep = n;
  double kept_mass = 0.0;
  if (use_top_k) {
    n_keep = sp.top_k;
    std::nth_element(ids.begin(), ids.begin() + n_keep, ids.end(), before);
    std::sort(ids.begin(), ids.begin() + n_keep, before);
    for (int64_t j = 0; j < n_keep; j++) kept_mass += weight[ids[j]];
  } else {
    kept_mass = std::accumulate(weight.begin(), weight.end(), 0.0);
  }

  if (use_top_p) {
    // Smallest prefix with cumulative mass >= top_p * kept_mass. Sort a window of the
    // head; if its mass is not enough, sort a window four times larger.
    const double need = static_cast<double>(sp.top_p) * kept_mass;
    int64_t sorted = use_top_k ? n_keep : 0;
    int64_t window = std::min<int64_t>(n_keep, 256);
    double cum = 0.0;
    int64_t j = 0;
    for (;;) {
      if (sorted < window) {  // select the next window in O(n), then sort only it
        std::nth_element(ids.begin() + sorted, ids.begin() + window, ids.begin() + n_keep, before);
        std::sort(ids.begin() + sorted, ids.begin() + window, before);
        sorted = window;
      }
      for (; j < sorted; j++) {
        cum += weight[ids[j]];
        if (cum >= need) break;
      }
      if (j < sorted || sorted == n_keep) break;
      window = std::min<int64_t>(n_keep, window * 4);
    }
    // j is the last index included; rounding can leave cum just below need at the end.
    n_keep = std::min<int64_t>(j + 1, n_keep);
    kept_mass = 0.0;
    for (int64_t i = 0; i < n_keep; i++) kept_mass += weight[ids[i]];
  }

  std::fill(probs, probs + n, 0.0f);
  for (int64_t i = 0; i < n_keep; i++) {
    probs[ids[i]] = static_cast<float>(weight[ids[i]] / kept_mass);
  }
}

int32_t sampling_draw(const float* weights, int64_t n, double u) {
  SPECLAB_ASSERT(n > 0);
  SPECLAB_INPUT_CHECK(u >= 0.0 && u < 1.0, "sampling_draw: u must lie in [0, 1), got ", u);
  double total = 0.0;
  int64_t last_positive = -1;
  for (int64_t i = 0; i < n; i++) {
    if (weights[i] > 0.0f) {
      total += weights[i];
      last_positive = i;
    }
  }
  SPECLAB_INPUT_CHECK(last_positive >= 0, "sampling_draw: all ", n, " weights are zero");
  const double target = u * total;
  double cum = 0.0;
  for (int64_t i = 0; i < last_positive; i++) {
    if (weights[i] <= 0.0f) continue;
    cum += weights[i];
    if (target < cum) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_positive);  // also absorbs rounding at the tail
}

double sampling_entropy_normalized(const float* probs, int64_t n) {
  if (n <= 1) return 0.0;
  double h = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (probs[i] > 0.0f) h -= probs[i] * std::log(static_cast<double>(probs[i]));
  }
  return std::max(0.0, h / std::log(static_cast<double>(n)));
}

}  // namespace speclab
