// The acceptance profile of a draft/target pair at one sampling setting
// (core/speedup_prediction.h), estimated by teacher forcing: no speculative round runs.
//
// For each prompt the target alone generates its text (generate_autoregressive, with a seed
// stream of its own so the text is not the one a speculative run of the same seed will be
// measured on). Then, along that text, at every position t:
//   - the drafter proposes a rollout of up to `depth` tokens from the true prefix, drawn
//     from its standardized q (its own random stream);
//   - one target pass over [x_{t-1}, d_1..d_m] gives the standardized p at every rollout
//     token;
//   - r_j = the probability that d_j passes the verification test given d_1..d_{j-1} passed:
//       sampling   min(1, p_j(d_j) / (l q_j(d_j)))        (Algorithm 1, lenience l; q one-hot
//                                                         for deterministic drafters)
//       greedy     1 if d_j = argmax p_j, or the lenient greedy rule holds, else 0;
//   - beta_t = sum_x min(q_t(x), p_t(x) / l): Corollary 3.6 at the true prefix (alpha_l with
//     lenience), the pair's acceptance independent of any round structure.
//   - top-b trees (top_branching = B > 0, lenience 1): the drafter's B likeliest proposals at
//     the true prefix (a one-level top-B tree, in rank order) and top_mass[b - 1] = P(one of
//     the first b passes): greedy, 1 if the target's argmax is among them; sampling, p_t's
//     mass on them (deterministic siblings tried in turn, each rejection removing its token
//     from the residual: p(x_1) + (1 - p(x_1)) p(x_2) / (1 - p(x_1)) + ...). A tree round at
//     t passes level j with top_mass[b_j - 1] at t + j: exact at T = 0, where the accepted
//     path is the target's text; at T > 0 the accepted path is drawn from p restricted to
//     the siblings, which the text only approximates.
//   - sampled trees (sample_branching = B > 0, lenience 1, a drafter with a law q): b siblings
//     drawn independently from q_t at the true prefix and verified as SpecInfer does (each
//     rejection replaces the target's law r by norm(max(0, r - q)), which does not depend on
//     the rejected token, so try i passes with beta_i = sum_x min(r_i(x), q(x)) whatever came
//     before): sample_mass[b - 1] = 1 - prod_{i<b} (1 - beta_i), with r_0 = p_t (greedy
//     target: 1 - (1 - q_t(argmax p_t))^b, the argmax among the draws). A repeated draw gets
//     no node (core/token_tree.h), so the level's expected node count is
//     sample_distinct[b - 1] = sum_x 1 - (1 - q_t(x))^b. Exact for the first level of a round
//     at t; deeper levels are read at t + j along the text, as top_mass is.
// The survival prod_{j<=i} r_j averaged over t estimates P(first i drafts accepted) for a
// round starting at t (the accept coins are independent given the drafts, so the product
// is exact for the drawn rollout). Accepted prefixes are tilted toward tokens where
// min(p, q) is large, so depths are correlated; the rollouts keep that correlation, which
// is why the predictor uses them and not beta^i. beta is reported as alpha_profile and fed
// to Theorem 3.8.
//
// Stride (measure.acceptance_stride = s): the rollouts above cost one target pass per position
// of the text, more target compute than one speculative run. With s > 1 only the positions
// t = o + k s are rolled out (systematic sampling; o drawn per prompt in [0, min(s, N)) from
// the profile's seed, so no fixed position such as t = 0 is always in or always out, and a
// non-empty text has at least one rollout). The skipped tokens are fed to the target in the
// next measured position's pass, in front of the rollout: about N / s target passes instead
// of N. s = 1 is the full profile, call for call.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sampling.h"
#include "core/speedup_prediction.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

// A tokenized prompt (its id from the prompt set).
struct PromptTokens {
  std::string id;
  std::vector<int32_t> ids;
  std::string category;  // the prompt set's `category` (prompt_set.h), for per-category tables
};

struct AcceptanceProfileRequest {
  SamplingParams target_sampling, draft_sampling;
  double lenience = 1.0;
  int depth = 8;                  // rollout length (max gamma of the cells it serves)
  int64_t max_new_tokens = 64;    // text generated per prompt
  std::vector<int64_t> stop_ids;  // EOS ids (empty = ignore EOS)
  uint64_t seed = 0;
  int stride = 1;            // rollouts at every stride-th position (see above)
  int top_branching = 0;     // B: top_mass for b = 1..B at each rollout (0: not measured)
  int sample_branching = 0;  // B: sample_mass and sample_distinct for b = 1..B (0: not measured)
};

// Throws InputError from the models; stops early (returns what it has) when *interrupted.
AcceptanceProfile acceptance_profile_measure(TokenRunner& target, Drafter& drafter,
                                             const std::vector<PromptTokens>& prompts,
                                             const AcceptanceProfileRequest& request,
                                             const std::atomic<bool>* interrupted = nullptr);

// P(d passes | reached) for one draft token: see the header comment. p: standardized target
// row [vocab]; p_raw: the target's softmax at temperature 1 (lenient greedy rule; may be
// null when lenience = 1); q: the draft row or null (one-hot at d).
double acceptance_token_probability(const float* p, const float* p_raw, const float* q, int32_t d,
                                    int64_t vocab, bool greedy, double lenience);

// top_mass (see above) of deterministic siblings `tokens`, in the order they are tried, under
// the standardized target row p [vocab]: entry b - 1 for the first b of them, b = 1..B (the
// last value repeats when fewer than B tokens are given).
std::vector<float> acceptance_top_mass(const float* p, int64_t vocab,
                                       const std::vector<int32_t>& tokens, int B, bool greedy);

// sample_mass (see above) of b siblings drawn independently from the draft row q [vocab] under
// the standardized target row p [vocab], b = 1..B; greedy: the target's argmax among them.
std::vector<float> acceptance_sample_mass(const float* p, const float* q, int64_t vocab, int B,
                                          bool greedy);

// sample_distinct (see above): expected distinct tokens among b draws from q [vocab], b = 1..B.
std::vector<float> acceptance_sample_distinct(const float* q, int64_t vocab, int B);

}  // namespace speclab
