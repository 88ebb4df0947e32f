// Speculative decoding (Leviathan et al. 2023, Algorithm 1) over a target runner and any
// drafter. One round:
//
//   context tokens (target cache holds all but the last one)
//     -> drafter.propose(k)                 k tokens + q distributions
//     -> target.forward([last, d1..dk])     one pass, logits [k+1, vocab]
//     -> sampling_standardize(p rows)       the same transform as the baseline
//     -> speculative_verify(p, q, drafts)   n accepted + one more token (residual or bonus)
//     -> target.truncate(L + n)             cache keeps [.., last, d1..dn]
//     -> RoundRecord
//
// On a GPU the round stays on the device where the runners offer it: the drafter samples
// there (TokenRunner::draft_on_device, q rows left on the device) and the target verifies
// there (TokenRunner::verify_on_device, reading those rows in place); only ids and the round
// record cross to the host. The host steps above are the reference either way.
//
// Every round emits 1..k+1 tokens; stops (EOS, max tokens) are applied to accepted tokens
// in order, mid-round; k shrinks near the context limit and near max_new_tokens.
#pragma once

#include <memory>

#include "core/gamma_policy.h"
#include "models/decode/generation.h"
#include "models/drafters/drafter.h"
#include "models/llama/llama_runner.h"

namespace speclab {

struct SpeculativeConfig {
  int gamma = 4;                  // drafted tokens per round (upper bound for adaptive policies)
  SamplingParams draft_sampling;  // the draft's own standardization (may differ from target's)
  double lenience = 1.0;          // paper A.5; 1 = exact
  DraftStopRule stop_rule;        // llama.cpp-style p_min early stop (0 = off)
  GammaPolicy* policy = nullptr;  // null = fixed gamma
  // Synthetic acceptance, for timing only; empty = off (the exact algorithm).
  // Per draft position i of a round, the probability of accepting d_i given d_0..d_{i-1} were
  // accepted; the last value repeats for later positions; each in (0, 1]. The drafter and
  // the target still run as in a real round (same calls, same k, same cache rollback), but
  // the accept decision is Bernoulli(synthetic_accept[i]) from its own Philox stream
  // (kRngSynthAccept) instead of the test against p and q, and a synthetic rejection
  // emits a token drawn from p_i (argmax at temperature 0). The output is then NOT
  // distributed as the target's (nor equal to its greedy text): the mode exists to measure
  // speedup at a known alpha. Records keep n_draft / n_accepted (the measured acceptance)
  // and p_draft / q_draft / beta (the pair's natural acceptance). Lenience is ignored.
  std::vector<double> synthetic_accept;
  // The batched loop only (models/decode/batched_decoder.h): gamma_by_load[b] tokens for every
  // request of a round with b requests active (the last entry for more), instead of the gamma
  // policy; 0 drafts nothing (a plain step). Empty = off. Built by predicted_gamma_by_load
  // (core/batched_speedup_prediction.h) from the pair's profiles.
  std::vector<int> gamma_by_load;
};

// Generates one request speculatively. The target's cache is reset first; the drafter is
// reset too. With target temperature 0 (and synthetic_accept off) the output equals
// generate_autoregressive's exactly.
GenerationResult generate_speculative(TokenRunner& target, Drafter& drafter,
                                      const GenerationRequest& request,
                                      const SpeculativeConfig& config);

}  // namespace speclab
