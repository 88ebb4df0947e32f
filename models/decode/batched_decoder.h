// Many requests at once: speculative decoding inside closed-loop continuous batching, and the
// same loop without drafting (the fair baseline at the same concurrency).
//
// A queue of requests is served by the target's n_slots sequence slots (the concurrency N).
// Each step of the loop:
//
//   admit      every free slot takes the next queued request: its slot is reset and all
//              prompt tokens but the last are prefilled, the admitted requests' rows in
//              one batched target forward
//   draft      every active request asks for k_r tokens (its own gamma, clamped near its
//              budget and the context as generate_speculative does): BatchDrafter, one
//              batched draft forward per draft step for a draft model
//   verify     one batched target forward over every request's [last, d_1..d_k_r] rows,
//              each request at its own position against its own cache (ragged lengths)
//   accept     per request: Leviathan et al. 2023, Algorithm 1 with the request's own keys
//              (sampling_standardize + speculative_verify, on the host), rollback of its
//              target slot to its accepted prefix, tokens committed with stops in order
//   retire     a request that stopped (EOS, max_new_tokens, context) frees its slot
//
// Each request's random keys are those of generate_speculative (seed, request id, position,
// round index of that request), and the batched forward is batch invariant, so a request's
// tokens equal its batch-1 generate_speculative run on a LlamaRunner bit for bit, at every
// temperature, whatever the other requests do (tests/decode/test_batched_decoder.cpp). The
// autoregressive loop's tokens likewise equal generate_autoregressive's.
//
// Trees are not served here (chains only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/decode/generation.h"
#include "models/decode/speculative_decoder.h"
#include "models/drafters/batch_drafter.h"
#include "models/llama/batch_token_runner.h"

namespace speclab {

// When a request passed through the loop, in seconds since the loop began.
struct RequestTiming {
  int64_t slot = -1;
  double admitted_s = 0;     // its prefill began
  double first_token_s = 0;  // its first generated token was committed
  double finished_s = 0;     // its last token was committed (its slot freed)
  // Time to first token after admission (prefill + its first round), and per output token
  // after the first ((finished - first) / (tokens - 1); 0 for a one-token request).
  double ttft_s() const { return first_token_s - admitted_s; }
  double time_per_output_token_s(size_t n_tokens) const {
    return n_tokens > 1 ? (finished_s - first_token_s) / static_cast<double>(n_tokens - 1) : 0.0;
  }
};

// One step of the loop, all requests together (the wall time of each batched phase).
struct BatchStep {
  int n_active = 0;           // requests in the round (after admission)
  int n_admitted = 0;         // requests admitted at this step
  int64_t n_draft_rows = 0;   // tokens drafted over all requests
  int64_t n_verify_rows = 0;  // rows of the batched target forward
  int64_t n_emitted = 0;      // tokens committed over all requests
  double admit_s = 0;         // batched prefill of the admitted requests
  double draft_s = 0;         // batched drafting
  double verify_s = 0;        // the batched target forward
  double accept_s = 0;        // standardize + verify + rollback + commit, all requests
};

struct BatchedGeneration {
  int64_t concurrency = 0;                // the target's slots
  std::vector<GenerationResult> results;  // [queue size] in queue order
  std::vector<RequestTiming> timing;      // [queue size] in queue order
  std::vector<BatchStep> steps;           // one per step of the loop
  double total_s = 0;                     // first admission to last retirement
  int64_t total_tokens() const;           // generated tokens over all requests
};

// Speculative decoding of `queue` at concurrency target.n_slots(). config.policy must be
// null: `gamma_policy` names a policy (gamma_policy_create, with config.gamma as its maximum)
// of which every request gets its own instance; "fixed" drafts config.gamma every round.
// config.gamma_by_load, when set, overrides the policy's gamma with the entry for the number of
// requests active in the round (each in 0..config.gamma, else InputError).
// Per request, RoundRecord's draft_s and verify_s are the batched phases' wall times of the
// step the round was part of (shared by the requests of that step), sample_s its own
// verification. Throws InputError for an empty queue, a prompt that does not fit a slot, a
// drafter of another vocabulary or slot count, or bad synthetic acceptance, before any work.
BatchedGeneration generate_batched_speculative(BatchTokenRunner& target, BatchDrafter& drafter,
                                               const std::vector<GenerationRequest>& queue,
                                               const SpeculativeConfig& config,
                                               const std::string& gamma_policy = "fixed");

// The same loop without drafting: one batched target forward of one row per active request
// per step, each token drawn with generate_autoregressive's key.
BatchedGeneration generate_batched_autoregressive(BatchTokenRunner& target,
                                                  const std::vector<GenerationRequest>& queue);

}  // namespace speclab
