// Generation requests and their records, shared by the autoregressive baseline and the
// speculative decoder so that both are measured the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sampling.h"
#include "core/speculative_verify.h"

namespace speclab {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included if the model wants one
  int64_t max_new_tokens = 64;
  SamplingParams sampling;        // the target's standardization (temperature, top-k, top-p)
  std::vector<int64_t> stop_ids;  // EOS ids: generation stops after emitting one
  uint64_t seed = 0;
  uint64_t request_id = 0;  // part of every random key: requests are independent
  // Speculative decoders: price every emitted token under the target's p where a round is
  // verified on the host (RoundRecord::law_u, models/decode/law_check_round.h). An instrument:
  // the tokens are the same either way, and its seconds are left out of the timings.
  bool law_check = false;
};

// One speculative round (docs/design.md, "One round"). The verifier's outcome is embedded as
// it came (n_accepted, next_token, bonus and the per-position p_draft, q_draft, beta of
// core/speculative_verify.h; a tree round fills n_accepted, next_token and bonus only).
struct RoundRecord : VerifyOutcome {
  int n_draft = 0;               // tokens proposed (gamma this round, or fewer); tree: its depth
  int tree_nodes = 0;            // tree speculation: drafted nodes verified (0 for a chain)
  int n_emitted = 0;             // tokens committed this round (after stops): 1..n_draft+1
  std::vector<int32_t> drafted;  // [n_draft] the proposed ids (tree: the accepted path)
  double draft_s = 0, verify_s = 0, sample_s = 0;  // wall time split
  // Parts of the split above (docs/prediction.md, "Where a step and a round go"):
  double draft_forward_s = 0;  // of draft_s: the draft model's forward calls (0 model-free)
  double verify_head_s = -1;   // of verify_s: the target's output head (-1: the runner does
                               // not split its forward, ForwardSplit)
  double standardize_s = 0;    // of sample_s: the target rows' logits to probabilities
  // The target standardized and verified this round where its logits are
  // (TokenRunner::verify_on_device): verify_s then covers the whole verification and sample_s
  // is 0. The cost profile prices verification on the host, so cells count these rounds.
  bool verified_on_device = false;
  // The in-run law check (GenerationRequest::law_check, host-verified rounds only; empty
  // otherwise): randomized PIT u in [0, 1) of each token under its p row, -1 for a token of
  // probability 0 (models/decode/law_check_round.h).
  std::vector<float> law_u;        // [n_accepted + 1] the tokens the round produced
  std::vector<float> law_u_draft;  // [n_draft] every drafted token (chains)
  double law_check_s = 0;          // the check's seconds, left out of sample_s and decode_s
};

enum class StopReason { kMaxTokens, kEos, kContext };
const char* stop_reason_name(StopReason r);

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids (prompt excluded)
  StopReason stop = StopReason::kMaxTokens;
  double prefill_s = 0;        // target prefill of the prompt
  double decode_s = 0;         // everything after the prefill
  int64_t n_target_calls = 0;  // target forward calls after the prefill
  int64_t n_draft_calls = 0;   // draft model forward calls
  // The autoregressive baseline's decode_s in parts, summed over its steps: the target's
  // forward (its layers and its output head, ForwardSplit; the head unknown when the runner does
  // not split: step_head_known false), the logits to probabilities, the draw; the rest is the
  // loop's bookkeeping.
  double step_forward_s = 0, step_head_s = 0, step_standardize_s = 0, step_draw_s = 0;
  bool step_head_known = true;
  std::vector<RoundRecord> rounds;  // empty for the autoregressive baseline
};

}  // namespace speclab
