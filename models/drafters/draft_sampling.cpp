#include "models/drafters/draft_sampling.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace speclab {

double draft_uniform(const RngKey& key, int i) {
  RngKey draw = key;
  draw.position = key.position + static_cast<uint64_t>(i);
  draw.stream = static_cast<uint32_t>(RngStream::kRngDraftSample);
  return rng_uniform(draw);
}

int32_t draft_sample_step(const float* logits, int64_t vocab, int i, const SamplingParams& params,
                          const DraftStopRule& stop, const RngKey& key, DraftProposal* out) {
  const size_t offset = out->q.size();
  out->q.resize(offset + static_cast<size_t>(vocab));  // the new row of q: [vocab]
  float* q = out->q.data() + offset;
  sampling_standardize(q, logits, vocab, params);
  const float top = *std::max_element(q, q + vocab);
  if (stop.p_min > 0 && top < stop.p_min) {  // the draft is unsure: stop drafting here
    out->q.resize(offset);
    return -1;
  }
  const int32_t tok = sampling_draw(q, vocab, draft_uniform(key, i));
  out->tokens.push_back(tok);
  out->top_prob.push_back(top);
  out->entropy_norm.push_back(static_cast<float>(sampling_entropy_normalized(q, vocab)));
  return tok;
}

}  // namespace speclab
