#include "experiments/predict/acceptance_profile.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "core/speculative_verify.h"
#include "core/token_tree.h"
#include "models/decode/autoregressive.h"

namespace speclab {

// The profile's own seed stream: its text and rollouts never reuse a measured run's draws.
constexpr uint64_t kProfileSeedMix = 0x9e3779b97f4a7c15ULL;

double acceptance_token_probability(const float* p, const float* p_raw, const float* q, int32_t d,
                                    int64_t vocab, bool greedy, double lenience) {
  if (greedy) {
    if (d == sampling_argmax(p, vocab)) return 1.0;
    if (lenience < 1.0 && p_raw != nullptr)
      return verify_greedy_lenient_accepts(p_raw, vocab, d, lenience) ? 1.0 : 0.0;
    return 0.0;
  }
  const double qd = q ? q[d] : 1.0;
  if (qd <= 0) return 0.0;
  return std::min(1.0, p[d] / (lenience * qd));
}

std::vector<float> acceptance_top_mass(const float* p, int64_t vocab,
                                       const std::vector<int32_t>& tokens, int B, bool greedy) {
  const int32_t best = greedy ? sampling_argmax(p, vocab) : -1;
  std::vector<float> mass;
  double m = 0;
  for (int b = 0; b < B; b++) {
    if (b < static_cast<int>(tokens.size())) {
      const int32_t x = tokens[static_cast<size_t>(b)];
      if (greedy)
        m = m > 0 || x == best ? 1.0 : 0.0;
      else
        m += p[x];
    }
    mass.push_back(static_cast<float>(std::min(1.0, m)));
  }
  return mass;
}

std::vector<float> acceptance_sample_mass(const float* p, const float* q, int64_t vocab, int B,
                                          bool greedy) {
  std::vector<float> mass;
  double fail = 1;  // P(the first b siblings all rejected)
  if (greedy) {
    const double q_best = q[sampling_argmax(p, vocab)];
    for (int b = 0; b < B; b++) {
      fail *= 1.0 - q_best;
      mass.push_back(static_cast<float>(1.0 - fail));
    }
    return mass;
  }
  std::vector<double> r(p, p + vocab);  // [vocab] the verifier's law after b rejections
  for (int b = 0; b < B; b++) {
    double pass = 0, residual = 0;
    for (int64_t x = 0; x < vocab; x++) {
      pass += std::min(r[static_cast<size_t>(x)], static_cast<double>(q[x]));
      residual += std::max(0.0, r[static_cast<size_t>(x)] - q[x]);
    }
    fail *= std::max(0.0, 1.0 - pass);
    mass.push_back(static_cast<float>(std::clamp(1.0 - fail, 0.0, 1.0)));
    // As the verifier (core/tree_verify.cpp): a residual without mass keeps r.
    if (residual > 0)
      for (int64_t x = 0; x < vocab; x++)
        r[static_cast<size_t>(x)] = std::max(0.0, r[static_cast<size_t>(x)] - q[x]) / residual;
  }
  return mass;
}

std::vector<float> acceptance_sample_distinct(const float* q, int64_t vocab, int B) {
  std::vector<double> distinct(static_cast<size_t>(B), 0.0);
  for (int64_t x = 0; x < vocab; x++) {
    double miss = 1;  // (1 - q(x))^b: x not among b draws
    for (int b = 0; b < B; b++) {
      miss *= 1.0 - q[x];
      distinct[static_cast<size_t>(b)] += 1.0 - miss;
    }
  }
  return std::vector<float>(distinct.begin(), distinct.end());
}

AcceptanceProfile acceptance_profile_measure(TokenRunner& target, Drafter& drafter,
                                             const std::vector<PromptTokens>& prompts,
                                             const AcceptanceProfileRequest& r,
                                             const std::atomic<bool>* interrupted) {
  SPECLAB_ASSERT(r.depth >= 1 && r.stride >= 1);
  const int64_t vocab = target.vocab();
  const bool greedy = r.target_sampling.temperature == 0.0f;
  const uint64_t seed = r.seed ^ kProfileSeedMix;
  SamplingParams raw;  // temperature 1, nothing cut: the lenient greedy rule's p
  AcceptanceProfile profile;
  profile.max_depth = r.depth;
  profile.stride = r.stride;
  std::vector<float> p, p_raw;  // [m + 1, vocab]
  std::vector<int32_t> batch;
  DraftProposal prop;
  // The drafter's B likeliest proposals at a prefix: one level of a top-B tree.
  const bool top_b = r.top_branching > 0 && r.lenience == 1.0;
  const bool sample_b = r.sample_branching > 0 && r.lenience == 1.0;
  TreeShape top_level;
  top_level.branching = {r.top_branching};
  top_level.mode = TreeMode::kTopK;
  DraftTree siblings;
  std::vector<int32_t> sibling_tokens;
  for (size_t pi = 0; pi < prompts.size(); pi++) {
    if (interrupted && interrupted->load()) break;
    GenerationRequest req;
    req.prompt = prompts[pi].ids;
    req.max_new_tokens = r.max_new_tokens;
    req.sampling = r.target_sampling;
    req.stop_ids = r.stop_ids;
    req.seed = seed;
    req.request_id = pi;
    const std::vector<int32_t> text = generate_autoregressive(target, req).tokens;

    AcceptancePrompt ap;
    ap.prompt_id = prompts[pi].id;
    const int64_t n_text = static_cast<int64_t>(text.size());
    if (r.stride > 1) {
      ap.stride = r.stride;
      ap.n_tokens = n_text;
      const RngKey okey{seed, pi, 0, kRngProfileStride, 0};
      ap.offset =
          n_text > 0
              ? static_cast<int64_t>(rng_bits64(okey) %
                                     static_cast<uint64_t>(std::min<int64_t>(r.stride, n_text)))
              : 0;
    }
    std::vector<int32_t> context = req.prompt;
    target.truncate(0);
    drafter.reset();
    if (context.size() > 1)
      target.forward(context.data(), static_cast<int64_t>(context.size()) - 1, true);
    // Tokens of the context the target has read; the rest go in front of the next rollout.
    int64_t fed = static_cast<int64_t>(context.size()) - 1;
    for (int64_t t = 0; t < n_text; t++) {
      const int64_t L = static_cast<int64_t>(context.size());
      if (t < ap.offset || (t - ap.offset) % r.stride != 0) {
        context.push_back(text[static_cast<size_t>(t)]);
        continue;
      }
      const int depth = static_cast<int>(std::min<int64_t>(r.depth, target.max_ctx() - L));
      AcceptanceRollout roll;
      prop = DraftProposal();
      if (depth > 0) {
        const RngKey key{seed, pi, static_cast<uint64_t>(L), 0, 1};
        drafter.propose(context, depth, r.draft_sampling, DraftStopRule{}, key, &prop);
      }
      const int m = static_cast<int>(prop.tokens.size());
      // [x_fed..x_{t-1}, d_1..d_m]: p at the rollout comes from the last pending row on.
      const int64_t pending = L - fed;
      batch.assign(context.begin() + fed, context.end());
      batch.insert(batch.end(), prop.tokens.begin(), prop.tokens.end());
      const float* logits = target.forward(batch.data(), pending + m) + (pending - 1) * vocab;
      p.resize(static_cast<size_t>((m + 1) * vocab));
      for (int j = 0; j <= m; j++)
        sampling_standardize(p.data() + j * vocab, logits + j * vocab, vocab, r.target_sampling);
      const bool lenient_greedy = greedy && r.lenience < 1.0;
      if (lenient_greedy) {
        p_raw.resize(p.size());
        for (int j = 0; j <= m; j++)
          sampling_standardize(p_raw.data() + j * vocab, logits + j * vocab, vocab, raw);
      }
      for (int j = 0; j < m; j++) {
        const float* q = prop.q.empty() ? nullptr : prop.q.data() + j * vocab;
        roll.accept.push_back(static_cast<float>(acceptance_token_probability(
            p.data() + j * vocab, lenient_greedy ? p_raw.data() + j * vocab : nullptr, q,
            prop.tokens[j], vocab, greedy, r.lenience)));
        roll.top_prob.push_back(j < static_cast<int>(prop.top_prob.size()) ? prop.top_prob[j]
                                                                           : 1.0f);
        roll.entropy.push_back(j < static_cast<int>(prop.entropy_norm.size()) ? prop.entropy_norm[j]
                                                                              : 0.0f);
      }
      if (m == 0) {
        roll.beta = -1;  // nothing proposed: no acceptance to estimate here
      } else if (prop.q.empty()) {
        roll.beta = roll.accept[0];  // one-hot q: sum_x min(q, p / l) = min(1, p(d) / l)
      } else if (greedy) {
        // Greedy verification accepts d iff it is the target's argmax (or leniently close):
        // over d ~ q that has probability sum of q over the accepted tokens.
        const int32_t best = sampling_argmax(p.data(), vocab);
        double b = prop.q[static_cast<size_t>(best)];
        if (lenient_greedy)
          for (int64_t x = 0; x < vocab; x++)
            if (x != best && verify_greedy_lenient_accepts(p_raw.data(), vocab,
                                                           static_cast<int32_t>(x), r.lenience))
              b += prop.q[static_cast<size_t>(x)];
        roll.beta = static_cast<float>(b);
      } else {
        roll.beta = static_cast<float>(
            verify_expected_acceptance(p.data(), prop.q.data(), vocab, r.lenience));
        // The quality cost of lenience at this position (Leviathan et al. A.5): how far the
        // emitted token's law is from p.
        if (r.lenience < 1.0)
          roll.lenient_tv =
              static_cast<float>(verify_lenient_tv(p.data(), prop.q.data(), vocab, r.lenience));
      }
      if (top_b && depth > 0) {
        const RngKey key{seed, pi, static_cast<uint64_t>(L), 0, 2};
        drafter.propose_tree(context, top_level, r.draft_sampling, key, &siblings);
        sibling_tokens.clear();
        for (const TreeProposal& s : siblings.proposals[0]) sibling_tokens.push_back(s.token);
        roll.top_mass =
            acceptance_top_mass(p.data(), vocab, sibling_tokens, r.top_branching, greedy);
      }
      if (sample_b && m > 0) {
        if (prop.q.empty()) {
          // A deterministic drafter's draws are all its one proposal: one node, passing as
          // the chain's first draft does.
          roll.sample_mass.assign(static_cast<size_t>(r.sample_branching), roll.accept[0]);
          roll.sample_distinct.assign(static_cast<size_t>(r.sample_branching), 1.0f);
        } else {
          roll.sample_mass =
              acceptance_sample_mass(p.data(), prop.q.data(), vocab, r.sample_branching, greedy);
          roll.sample_distinct =
              acceptance_sample_distinct(prop.q.data(), vocab, r.sample_branching);
        }
      }
      ap.positions.push_back(std::move(roll));
      target.truncate(L);  // keep x_{t-1}; forget the rollout
      fed = L;
      context.push_back(text[static_cast<size_t>(t)]);
    }
    profile.prompts.push_back(std::move(ap));
  }
  target.truncate(0);
  drafter.reset();
  return profile;
}

}  // namespace speclab
