#include "models/decode/decode_steps.h"

#include <algorithm>

#include "core/error.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/decode/decode_counters.h"

namespace speclab {

void decode_check_prompt(const GenerationRequest& request, const TokenRunner& target) {
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  SPECLAB_INPUT_CHECK(n_prompt >= 1, "prompt: empty (need at least one token)");
  SPECLAB_INPUT_CHECK(n_prompt < target.max_ctx(), "prompt: ", n_prompt,
                      " tokens do not fit the context of ", target.max_ctx(), " tokens");
}

void decode_check_drafter(const Drafter& drafter, const TokenRunner& target) {
  SPECLAB_INPUT_CHECK(drafter.vocab_size() == target.vocab(), "draft '", drafter.name(),
                      "': vocabulary of ", drafter.vocab_size(), " tokens, the target has ",
                      target.vocab());
}

bool decode_commit_token(const GenerationRequest& request, int32_t token,
                         std::vector<int32_t>* context, GenerationResult* result) {
  if (context) context->push_back(token);
  result->tokens.push_back(token);
  if (std::find(request.stop_ids.begin(), request.stop_ids.end(), token) !=
      request.stop_ids.end()) {
    result->stop = StopReason::kEos;
    return true;
  }
  if (static_cast<int64_t>(result->tokens.size()) >= request.max_new_tokens) {
    result->stop = StopReason::kMaxTokens;
    return true;
  }
  return false;
}

VerifyOutcome decode_verify_on_host(const float* logits, int64_t vocab,
                                    const std::vector<int32_t>& drafts, const float* q,
                                    const SamplingParams& sampling, double lenience,
                                    const std::vector<double>& synthetic_accept, RngKey base,
                                    HostVerifyBuffers* buf) {
  const int n_draft = static_cast<int>(drafts.size());
  const bool greedy = sampling.temperature == 0.0f;
  const bool raw_needed = greedy && lenience < 1.0;
  const auto t0 = DecodeClock::now();
  buf->p.resize(static_cast<size_t>((n_draft + 1) * vocab));
  for (int i = 0; i <= n_draft; i++)
    sampling_standardize(buf->p.data() + i * vocab, logits + i * vocab, vocab, sampling);
  if (raw_needed) {
    buf->p_raw.resize(static_cast<size_t>(n_draft * vocab));
    for (int i = 0; i < n_draft; i++)
      sampling_standardize(buf->p_raw.data() + i * vocab, logits + i * vocab, vocab,
                           SamplingParams{1.0f, 0, 1.0f});
  }
  buf->standardize_s = seconds_since(t0);
  VerifyRound round;
  round.n_draft = n_draft;
  round.draft = drafts.data();
  round.q = q;
  round.p = buf->p.data();
  round.vocab = vocab;
  round.p_raw = raw_needed ? buf->p_raw.data() : nullptr;
  VerifyConfig vcfg;
  vcfg.greedy = greedy;
  vcfg.lenience = lenience;
  return synthetic_accept.empty()
             ? speculative_verify(round, vcfg, base)
             : speculative_verify_synthetic(round, synthetic_accept, greedy, base);
}

GenerationResult decode_loop(TokenRunner& target, Drafter& drafter,
                             const GenerationRequest& request, const DecodeRound& round) {
  decode_count_speculative_generation();
  decode_check_prompt(request, target);
  decode_check_drafter(drafter, target);
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  const bool greedy = request.sampling.temperature == 0.0f;

  GenerationResult result;
  target.truncate(0);
  drafter.reset();
  std::vector<int32_t> context = request.prompt;
  auto t0 = DecodeClock::now();
  if (n_prompt > 1) target.forward(context.data(), n_prompt - 1, /*last_only=*/true);
  result.prefill_s = seconds_since(t0);

  t0 = DecodeClock::now();
  double law_check_s = 0;  // the law check's seconds: an instrument, not the algorithm's time
  for (uint32_t round_index = 0;; round_index++) {
    const int64_t L = static_cast<int64_t>(context.size());
    const DecodeRoundInput in{
        context, request.max_new_tokens - static_cast<int64_t>(result.tokens.size()),
        RngKey{request.seed, request.request_id, static_cast<uint64_t>(L), 0, round_index}, greedy};
    RoundRecord rec;
    if (!round(in, &rec, &result.n_draft_calls)) {
      result.stop = StopReason::kContext;
      break;
    }
    result.n_target_calls++;
    law_check_s += rec.law_check_s;
    // Every round emits at least one token: the accepted drafts, then the extra one.
    SPECLAB_ASSERT(rec.n_accepted >= 0 && rec.n_accepted <= static_cast<int>(rec.drafted.size()));
    bool stopped = false;
    for (int i = 0; i <= rec.n_accepted && !stopped; i++) {
      const int32_t tok = i < rec.n_accepted ? rec.drafted[i] : rec.next_token;
      stopped = decode_commit_token(request, tok, &context, &result);
      rec.n_emitted++;
    }
    result.rounds.push_back(std::move(rec));
    if (stopped) break;
  }
  result.decode_s = seconds_since(t0) - law_check_s;
  return result;
}

}  // namespace speclab
