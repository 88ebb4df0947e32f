// The check a device draw must pass against the host's sampling_draw (core/sampling.h): the
// same uniforms u_j must give the host's ids (inverse CDF at the same u; only a u within
// float rounding of a CDF boundary may differ, so agreement >= min_agreement), and the ids
// must follow the law q (Pearson chi-square, p-value >= alpha). Agreement alone catches a
// draw of the right law at the wrong uniform (u -> 1 - u); the chi-square catches a wrong law
// whatever the uniforms (an off-by-one id).
#pragma once

#include <cstdint>
#include <vector>

#include "core/sampling.h"
#include "core/stats.h"

namespace speclab {

struct DrawCheck {
  int64_t n = 0;
  int64_t agree = 0;  // ids equal to sampling_draw(q, u_j)
  GofResult gof;      // ids against q
  bool passes(double min_agreement = 0.995, double alpha = 1e-3) const {
    return n > 0 && agree >= min_agreement * static_cast<double>(n) && gof.p_value >= alpha;
  }
};

// q: [vocab] weights (a standardized row); u, ids: [n].
inline DrawCheck draft_draw_check(const std::vector<float>& q, const std::vector<double>& u,
                                  const std::vector<int32_t>& ids) {
  DrawCheck c;
  c.n = static_cast<int64_t>(ids.size());
  const int64_t vocab = static_cast<int64_t>(q.size());
  std::vector<int64_t> counts(q.size(), 0);
  for (size_t j = 0; j < ids.size(); j++) {
    c.agree += ids[j] == sampling_draw(q.data(), vocab, u[j]);
    if (ids[j] >= 0 && ids[j] < vocab) counts[static_cast<size_t>(ids[j])]++;
  }
  c.gof = stats_chi2_gof(counts, std::vector<double>(q.begin(), q.end()));
  return c;
}

}  // namespace speclab
