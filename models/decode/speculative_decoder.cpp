#include "models/decode/speculative_decoder.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/decode/decode_steps.h"
#include "models/decode/law_check_round.h"

namespace speclab {

namespace {

// Buffers a chain round reuses from round to round.
struct ChainBuffers {
  DraftProposal proposal;
  std::vector<int32_t> batch;  // [k+1] = [last, d1..dk]
  HostVerifyBuffers host;      // p rows of the host verification
};

// One round of Leviathan et al. 2023, Algorithm 1 (see the header for the data path).
bool speculative_chain_round(TokenRunner& target, Drafter& drafter,
                             const GenerationRequest& request, const SpeculativeConfig& config,
                             ChainBuffers& buf, const DecodeRoundInput& in, RoundRecord* rec,
                             int64_t* n_draft_calls) {
  const int64_t L = static_cast<int64_t>(in.context.size());
  const int64_t vocab = target.vocab();
  // Draft no more than can be used: a round emits up to k+1 tokens, and the target pass
  // over [last, d1..dk] must fit: (L - 1) + (k + 1) <= max_ctx.
  const int gamma = config.policy ? config.policy->next_gamma() : config.gamma;
  const int64_t k = std::min<int64_t>({gamma, in.remaining - 1, target.max_ctx() - L});
  if (k < 0) return false;  // the context is full: not even the last token fits

  // The drafter may sample on its device and leave q there (verify_on_device reads it in
  // place); a host verification fetches it first. Drafting the same way in every mode keeps
  // the draft's cost the same in synthetic-acceptance rounds, which exist to time rounds.
  buf.proposal = DraftProposal();
  if (k > 0) {
    drafter.propose_keeping_q_on_device(in.context, static_cast<int>(k), config.draft_sampling,
                                        config.stop_rule, in.base, &buf.proposal);
  }
  const std::vector<int32_t>& drafts = buf.proposal.tokens;
  const int n_draft = static_cast<int>(drafts.size());
  SPECLAB_ASSERT(n_draft <= k);
  rec->draft_s = buf.proposal.seconds;
  rec->draft_forward_s = buf.proposal.forward_s;
  *n_draft_calls += buf.proposal.n_forward_calls;

  // Verify: one target pass over [last, d1..dk] gives p for k+1 positions. A GPU runner
  // standardizes and verifies where the logits are (TokenRunner::verify_on_device); the host
  // path below is the reference, and the one synthetic acceptance takes.
  auto tv = DecodeClock::now();
  buf.batch.assign(1, in.context.back());
  buf.batch.insert(buf.batch.end(), drafts.begin(), drafts.end());
  // Greedy lenience (paper A.5) compares against the target's distribution before
  // standardization, which at temperature 0 is one-hot: softmax of the raw logits. The
  // device round has no such input, and synthetic acceptance decides on the host: both
  // verify on the host.
  DraftRows q_rows;
  q_rows.host = buf.proposal.q.empty() ? nullptr : buf.proposal.q.data();
  q_rows.device = buf.proposal.q_device;
  VerifyConfig vcfg;
  vcfg.greedy = in.greedy;
  vcfg.lenience = config.lenience;
  const bool device_round = verify_may_run_on_device(!config.synthetic_accept.empty(), vcfg);
  VerifyOutcome& out = *rec;
  if (device_round && target.verify_on_device(buf.batch.data(), n_draft, q_rows, request.sampling,
                                              vcfg, in.base, &out)) {
    rec->verify_s = seconds_since(tv);
    rec->verified_on_device = true;
  } else {
    // The host verifies: q rows the drafter left on its device come over first.
    drafter.fetch_q(&buf.proposal);
    const float* q = buf.proposal.q.empty() ? nullptr : buf.proposal.q.data();
    const float* logits = target.forward(buf.batch.data(), n_draft + 1);
    rec->verify_s = seconds_since(tv);
    const ForwardSplit split = target.last_forward_split();
    if (split.known()) rec->verify_head_s = split.head_s;

    auto ts = DecodeClock::now();
    out = decode_verify_on_host(logits, vocab, drafts, q, request.sampling, config.lenience,
                                config.synthetic_accept, in.base, &buf.host);
    rec->sample_s = seconds_since(ts);
    rec->standardize_s = buf.host.standardize_s;
  }

  // Roll the target back to the accepted prefix: its cache keeps [.., last, d1..dn].
  target.truncate(L + rec->n_accepted);
  rec->n_draft = n_draft;
  rec->drafted = drafts;
  // The in-run law check on the rows this round was verified against (core/law_check.h); a
  // round verified on the device left them there.
  if (request.law_check && !rec->verified_on_device) {
    const auto tc = DecodeClock::now();
    law_check_chain_round(buf.host.p.data(), vocab, in.base, rec);
    rec->law_check_s = seconds_since(tc);
  }
  if (config.policy) config.policy->observe(n_draft, rec->n_accepted, buf.proposal.entropy_norm);
  return true;
}

}  // namespace

GenerationResult generate_speculative(TokenRunner& target, Drafter& drafter,
                                      const GenerationRequest& request,
                                      const SpeculativeConfig& config) {
  SPECLAB_INPUT_CHECK(config.gamma >= 1, "gamma: ", config.gamma, " (expected >= 1)");
  SPECLAB_ASSERT(config.gamma_by_load.empty());  // one request: a fixed gamma or a policy
  for (double a : config.synthetic_accept)
    SPECLAB_INPUT_CHECK(a > 0.0 && a <= 1.0, "synthetic acceptance: ", a,
                        " (expected a number in (0, 1])");
  ChainBuffers buf;
  return decode_loop(target, drafter, request,
                     [&](const DecodeRoundInput& in, RoundRecord* rec, int64_t* n_draft_calls) {
                       return speculative_chain_round(target, drafter, request, config, buf, in,
                                                      rec, n_draft_calls);
                     });
}

}  // namespace speclab
