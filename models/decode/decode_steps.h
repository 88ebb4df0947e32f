// Steps every decoder shares (autoregressive, chain and tree speculative), so that they check
// requests, time phases and apply stops the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "core/sampling.h"
#include "core/speculative_verify.h"
#include "models/decode/generation.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

using DecodeClock = std::chrono::steady_clock;
inline double seconds_since(DecodeClock::time_point t0) {
  return std::chrono::duration<double>(DecodeClock::now() - t0).count();
}

// The prompt is non-empty and fits the target's context (InputError otherwise).
void decode_check_prompt(const GenerationRequest& request, const TokenRunner& target);

// The drafter shares the target's vocabulary (InputError naming the draft otherwise).
void decode_check_drafter(const Drafter& drafter, const TokenRunner& target);

// Commits one generated token: appends it to context and result, and tells whether
// generation stops after it (an EOS id -> kEos, max_new_tokens reached -> kMaxTokens; the
// reason is set in result.stop).
bool decode_commit_token(const GenerationRequest& request, int32_t token,
                         std::vector<int32_t>* context, GenerationResult* result);

// Buffers of a host verification, reused from round to round.
struct HostVerifyBuffers {
  std::vector<float> p;      // [n_draft + 1, vocab] standardized target distributions
  std::vector<float> p_raw;  // [n_draft, vocab] softmax of the raw logits (greedy lenience only)
  double standardize_s = 0;  // the last verification's seconds of standardizing its rows
};

// Leviathan et al. 2023, Algorithm 1 on the host, from the target's logits of one round's rows
// [last, d_1..d_n] ([n + 1, vocab]): each row standardized with `sampling` (the baseline's
// transform), then speculative_verify against q ([n, vocab] rows, or null for a one-hot
// drafter) with the round's keys; with synthetic_accept non-empty, speculative_verify_synthetic
// instead (timing only). Greedy lenience (paper A.5, lenience < 1 at temperature 0) compares
// against the softmax of the raw logits. The chain round and the batched round both verify here.
VerifyOutcome decode_verify_on_host(const float* logits, int64_t vocab,
                                    const std::vector<int32_t>& drafts, const float* q,
                                    const SamplingParams& sampling, double lenience,
                                    const std::vector<double>& synthetic_accept, RngKey base,
                                    HostVerifyBuffers* buf);

// ------------------------------------------------------------------------------------------
// The loop every speculative decoder shares (gpt-fast's generate around speculative_decode):
// it checks the request, resets the target and the drafter, prefills all prompt tokens but
// the last, then runs rounds until a stop, committing each round's tokens (accepted drafts,
// then the correction or bonus) with stops applied in order, mid-round. Rounds plug in:
// the chain round (speculative_decoder.cpp) and the tree round (tree_decoder.cpp).
//
// Invariant between rounds: `context` holds every committed token; the target's cache holds
// all of them but the last, which the next round feeds first.

struct DecodeRoundInput {
  const std::vector<int32_t>& context;  // every committed token (prompt + generated)
  int64_t remaining;                    // tokens still allowed: max_new_tokens - generated
  RngKey base;  // (seed, request, position = context.size(), round index): the round's keys
  bool greedy;  // target temperature 0
};

// One round: drafts, runs the target once (feeding the last committed token first), verifies,
// and leaves the target's cache holding all L context tokens plus the accepted drafts (the
// correction or bonus token is fed by the next round). Fills rec: n_draft, the verify outcome
// (n_accepted, next_token, bonus, ...), drafted (its first n_accepted ids are the accepted
// ones, in order), timings; adds the draft model's forward calls to *n_draft_calls.
// Returns false, having done nothing, when the context is full.
using DecodeRound =
    std::function<bool(const DecodeRoundInput& in, RoundRecord* rec, int64_t* n_draft_calls)>;

GenerationResult decode_loop(TokenRunner& target, Drafter& drafter,
                             const GenerationRequest& request, const DecodeRound& round);

}  // namespace speclab
