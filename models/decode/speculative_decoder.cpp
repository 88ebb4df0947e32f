#include "models/decode/speculative_decoder.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/decode/decode_steps.h"

namespace speclab {

GenerationResult generate_speculative(TokenRunner& target, Drafter& drafter,
                                      const GenerationRequest& request,
                                      const SpeculativeConfig& config) {
  decode_check_prompt(request, target);
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t vocab = target.vocab();
  decode_check_drafter(drafter, target);
  SPECLAB_INPUT_CHECK(config.gamma >= 1, "gamma: ", config.gamma, " (expected >= 1)");
  for (double a : config.synthetic_accept)
    SPECLAB_INPUT_CHECK(a > 0.0 && a <= 1.0, "synthetic acceptance: ", a,
                        " (expected a number in (0, 1])");
  const bool greedy = request.sampling.temperature == 0.0f;

  GenerationResult result;
  target.truncate(0);
  drafter.reset();

  // Invariant between rounds: `context` holds every committed token; the target's cache
  // holds all of them but the last, which is fed at the start of the next verification.
  std::vector<int32_t> context = request.prompt;
  auto t0 = DecodeClock::now();
  if (n_prompt > 1) target.forward(context.data(), n_prompt - 1, /*last_only=*/true);
  result.prefill_s = seconds_since(t0);

  std::vector<float> p;        // [k+1, vocab] standardized target distributions
  std::vector<float> p_raw;    // [k, vocab] softmax of the raw logits (greedy lenience only)
  std::vector<int32_t> batch;  // [k+1] = [last, d1..dk]
  DraftProposal proposal;
  uint64_t round_index = 0;
  t0 = DecodeClock::now();
  while (true) {
    const int64_t L = static_cast<int64_t>(context.size());
    const int64_t remaining = request.max_new_tokens - static_cast<int64_t>(result.tokens.size());
    // Draft no more than can be used: a round emits up to k+1 tokens, and the target pass
    // over [last, d1..dk] must fit: (L - 1) + (k + 1) <= max_ctx.
    int gamma = config.policy ? config.policy->next_gamma() : config.gamma;
    int64_t k = std::min<int64_t>({gamma, remaining - 1, target.max_ctx() - L});
    if (k < 0) {  // the context is full: not even the last token fits
      result.stop = StopReason::kContext;
      break;
    }

    RoundRecord rec;
    const RngKey base{request.seed, request.request_id, static_cast<uint64_t>(L), 0,
                      static_cast<uint32_t>(round_index++)};
    proposal = DraftProposal();
    if (k > 0) {
      drafter.propose(context, static_cast<int>(k), config.draft_sampling, config.stop_rule, base,
                      &proposal);
    }
    const int n_draft = static_cast<int>(proposal.tokens.size());
    SPECLAB_ASSERT(n_draft <= k);
    rec.draft_s = proposal.seconds;
    result.n_draft_calls += proposal.n_forward_calls;

    // Verify: one target pass over [last, d1..dk] gives p for k+1 positions.
    auto tv = DecodeClock::now();
    batch.assign(1, context.back());
    batch.insert(batch.end(), proposal.tokens.begin(), proposal.tokens.end());
    const float* logits = target.forward(batch.data(), n_draft + 1);
    result.n_target_calls++;
    rec.verify_s = seconds_since(tv);

    auto ts = DecodeClock::now();
    p.resize(static_cast<size_t>((n_draft + 1) * vocab));
    for (int i = 0; i <= n_draft; i++)
      sampling_standardize(p.data() + i * vocab, logits + i * vocab, vocab, request.sampling);
    // Greedy lenience (paper A.5) compares against the target's distribution before
    // standardization, which at temperature 0 is one-hot: softmax of the raw logits.
    const bool raw_needed = greedy && config.lenience < 1.0;
    if (raw_needed) {
      p_raw.resize(static_cast<size_t>(n_draft * vocab));
      for (int i = 0; i < n_draft; i++)
        sampling_standardize(p_raw.data() + i * vocab, logits + i * vocab, vocab,
                             SamplingParams{1.0f, 0, 1.0f});
    }
    VerifyRound round;
    round.n_draft = n_draft;
    round.draft = proposal.tokens.data();
    round.q = proposal.q.empty() ? nullptr : proposal.q.data();
    round.p = p.data();
    round.p_raw = raw_needed ? p_raw.data() : nullptr;
    round.vocab = vocab;
    VerifyConfig vcfg;
    vcfg.greedy = greedy;
    vcfg.lenience = config.lenience;
    const VerifyOutcome out =
        config.synthetic_accept.empty()
            ? speculative_verify(round, vcfg, base)
            : speculative_verify_synthetic(round, config.synthetic_accept, greedy, base);
    rec.sample_s = seconds_since(ts);

    // Roll the target back to the accepted prefix: its cache keeps [.., last, d1..dn].
    target.truncate(L + out.n_accepted);

    rec.n_draft = n_draft;
    rec.n_accepted = out.n_accepted;
    rec.bonus = out.bonus;
    rec.next_token = out.next_token;
    rec.drafted = proposal.tokens;
    rec.p_draft = out.p_draft;
    rec.q_draft = out.q_draft;
    rec.beta = out.beta;

    // Commit accepted tokens then the extra one, applying stops in order.
    bool stopped = false;
    for (int i = 0; i <= out.n_accepted && !stopped; i++) {
      const int32_t tok = i < out.n_accepted ? proposal.tokens[i] : out.next_token;
      stopped = decode_commit_token(request, tok, &context, &result);
      rec.n_emitted++;
    }
    if (config.policy) config.policy->observe(n_draft, out.n_accepted, proposal.entropy_norm);
    result.rounds.push_back(std::move(rec));
    if (stopped) break;
  }
  result.decode_s = seconds_since(t0);
  return result;
}

}  // namespace speclab
