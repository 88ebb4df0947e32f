#include "models/llama/llama_rope.h"

#include "core/cpu_rope.h"
#include "core/error.h"

namespace speclab {

std::vector<float> llama_rope_inv_freq(const LlamaConfig& config) {
  const int64_t half = config.head_dim / 2;
  std::vector<float> inv_freq(half);
  rope_inv_freq(inv_freq.data(), config.head_dim, config.rope_theta);
  if (!config.rope_freq_factors.empty()) {
    SPECLAB_INPUT_CHECK(static_cast<int64_t>(config.rope_freq_factors.size()) == half,
                        "rope_freq_factors has ", config.rope_freq_factors.size(),
                        " values, expected head_dim/2 = ", half);
    for (int64_t i = 0; i < half; i++) inv_freq[i] /= config.rope_freq_factors[i];
  } else if (config.rope_scaling.enabled) {
    const RopeScaling& s = config.rope_scaling;
    rope_scale_llama3(inv_freq.data(), half, s.factor, s.low_freq_factor, s.high_freq_factor,
                      s.original_max_position);
  }
  return inv_freq;
}

}  // namespace speclab
