#include "models/decode/autoregressive.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"

namespace speclab {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerationResult generate_autoregressive(TokenRunner& target, const GenerationRequest& request) {
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  SPECLAB_INPUT_CHECK(n_prompt >= 1, "prompt: empty (need at least one token)");
  SPECLAB_INPUT_CHECK(n_prompt < target.max_ctx(), "prompt: ", n_prompt,
                      " tokens do not fit the context of ", target.max_ctx(), " tokens");
  GenerationResult result;
  target.truncate(0);
  const int64_t vocab = target.vocab();
  std::vector<float> probs(static_cast<size_t>(vocab));  // [vocab] standardized p

  // Prefill all but the last prompt token, exactly as the speculative decoder does, so the
  // decode phase of both covers the same work: one target call per generated token here.
  auto t0 = std::chrono::steady_clock::now();
  if (n_prompt > 1) target.forward(request.prompt.data(), n_prompt - 1, /*last_only=*/true);
  result.prefill_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  int32_t last = request.prompt.back();
  int64_t pos = n_prompt;  // absolute position of the token being sampled
  while (true) {
    const float* logits = target.forward(&last, 1, /*last_only=*/true);
    result.n_target_calls++;
    sampling_standardize(probs.data(), logits, vocab, request.sampling);
    RngKey key{request.seed, request.request_id, static_cast<uint64_t>(pos),
               static_cast<uint32_t>(RngStream::kRngTargetSample), 0};
    const int32_t tok = sampling_draw(probs.data(), vocab, rng_uniform(key));
    result.tokens.push_back(tok);
    pos++;
    last = tok;
    if (std::find(request.stop_ids.begin(), request.stop_ids.end(), tok) !=
        request.stop_ids.end()) {
      result.stop = StopReason::kEos;
      break;
    }
    if (static_cast<int64_t>(result.tokens.size()) >= request.max_new_tokens) {
      result.stop = StopReason::kMaxTokens;
      break;
    }
    if (target.n_past() + 1 > target.max_ctx()) {
      result.stop = StopReason::kContext;
      break;
    }
  }
  result.decode_s = seconds_since(t0);
  return result;
}

}  // namespace speclab
