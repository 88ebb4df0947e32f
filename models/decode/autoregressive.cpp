#include "models/decode/autoregressive.h"

#include <vector>

#include "core/rng.h"
#include "core/sampling.h"
#include "models/decode/decode_steps.h"

namespace speclab {

GenerationResult generate_autoregressive(TokenRunner& target, const GenerationRequest& request) {
  decode_check_prompt(request, target);
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  GenerationResult result;
  target.truncate(0);
  const int64_t vocab = target.vocab();
  std::vector<float> probs(static_cast<size_t>(vocab));  // [vocab] standardized p

  // Prefill all but the last prompt token, exactly as the speculative decoder does, so the
  // decode phase of both covers the same work: one target call per generated token here.
  auto t0 = DecodeClock::now();
  if (n_prompt > 1) target.forward(request.prompt.data(), n_prompt - 1, /*last_only=*/true);
  result.prefill_s = seconds_since(t0);

  t0 = DecodeClock::now();
  int32_t last = request.prompt.back();
  int64_t pos = n_prompt;  // absolute position of the token being sampled
  while (true) {
    // The step in its parts (GenerationResult::step_*): forward, standardize, draw.
    const auto tf = DecodeClock::now();
    const float* logits = target.forward(&last, 1, /*last_only=*/true);
    const auto ts = DecodeClock::now();
    result.n_target_calls++;
    sampling_standardize(probs.data(), logits, vocab, request.sampling);
    const auto td = DecodeClock::now();
    RngKey key{request.seed, request.request_id, static_cast<uint64_t>(pos),
               static_cast<uint32_t>(RngStream::kRngTargetSample), 0};
    const int32_t tok = sampling_draw(probs.data(), vocab, rng_uniform(key));
    result.step_draw_s += seconds_since(td);
    result.step_standardize_s += std::chrono::duration<double>(td - ts).count();
    result.step_forward_s += std::chrono::duration<double>(ts - tf).count();
    const ForwardSplit split = target.last_forward_split();
    if (split.known()) result.step_head_s += split.head_s;
    result.step_head_known = result.step_head_known && split.known();
    pos++;
    last = tok;
    if (decode_commit_token(request, tok, nullptr, &result)) break;
    if (target.n_past() + 1 > target.max_ctx()) {
      result.stop = StopReason::kContext;
      break;
    }
  }
  result.decode_s = seconds_since(t0);
  return result;
}

}  // namespace speclab
