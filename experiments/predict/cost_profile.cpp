#include "experiments/predict/cost_profile.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/rng.h"
#include "core/speculative_verify.h"

namespace speclab {

namespace {

using Clock = std::chrono::steady_clock;
std::vector<int32_t> head(const std::vector<int32_t>& v, int64_t n) {
  return std::vector<int32_t>(v.begin(), v.begin() + n);
}

// The round a target that verifies on its device runs (TokenRunner::verify_on_device), as the
// decoder runs it: a proposal of k - 1 drafts keeping q on the drafter's device (untimed),
// then the timed call over [ctx[L], d_1..d_{k-1}] with the cache at L; cut back to L after.
// The drafts' q rows are read where the proposal left them (DraftRows). prop: scratch.
double device_verify_s(TokenRunner& target, Drafter& drafter, const std::vector<int32_t>& ctx,
                       int64_t L, int k, const CostProfileRequest& r,
                       const std::vector<int32_t>& at_l, DraftProposal* prop) {
  const RngKey key{0x5eed, 1, static_cast<uint64_t>(L + k), 0, 0};
  *prop = DraftProposal();
  if (k > 1)
    drafter.propose_keeping_q_on_device(at_l, k - 1, r.draft_sampling, DraftStopRule{}, key, prop);
  std::vector<int32_t> batch(1, ctx[static_cast<size_t>(L)]);
  batch.insert(batch.end(), prop->tokens.begin(), prop->tokens.end());
  // A proposal may stop early (a drafter with nothing to propose): pad with the context's
  // own tokens, one-hot (no q), so the call verifies k tokens as the figure says.
  for (size_t i = batch.size(); i < static_cast<size_t>(k); i++)
    batch.push_back(ctx[static_cast<size_t>(L) + i]);
  const bool full = static_cast<int>(prop->tokens.size()) == k - 1;
  DraftRows q;
  if (full) {
    q.host = prop->q.empty() ? nullptr : prop->q.data();
    q.device = prop->q_device;
  }
  VerifyConfig vc;
  vc.greedy = r.target_sampling.temperature == 0.0f;
  VerifyOutcome out;
  const auto t0 = Clock::now();
  const bool ran =
      target.verify_on_device(batch.data(), k - 1, q, r.target_sampling, vc, key, &out);
  const double s = timing_since(t0);
  SPECLAB_ASSERT(ran);  // probed before (cost_profile_verifies_on_device)
  target.truncate(L);
  return s;
}

// Whether the target verifies a round on its device (TokenRunner::verify_on_device accepts a
// round of no drafts over tokens[L] with the cache at L, which it leaves at L): then the
// profile times that call (CostProfile::verify_device_s).
bool cost_profile_verifies_on_device(TokenRunner& target, const int32_t* tokens, int64_t L,
                                     const SamplingParams& sampling) {
  SPECLAB_ASSERT(target.n_past() == L);
  VerifyConfig vc;
  vc.greedy = sampling.temperature == 0.0f;
  VerifyOutcome out;
  const bool yes = target.verify_on_device(tokens + L, 0, DraftRows{}, sampling, vc,
                                           RngKey{0x5eed, 2, static_cast<uint64_t>(L), 0, 0}, &out);
  target.truncate(L);
  return yes;
}

}  // namespace

double timing_fastest(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

double timing_median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double timing_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void timing_spread_add(TimingSpread* out, std::vector<double> v) {
  SPECLAB_ASSERT(!v.empty());
  std::sort(v.begin(), v.end());
  out->min.push_back(v.front());
  out->max.push_back(v.back());
  double sum = 0;
  for (double x : v) sum += x;
  // Clamped into [min, max]: a rounding of the sum must not put the mean outside them.
  out->mean.push_back(std::clamp(sum / static_cast<double>(v.size()), v.front(), v.back()));
  out->median.push_back(timing_median(std::move(v)));
}

std::vector<int32_t> cost_profile_tokens(const TokenRunner& target, const CostProfileRequest& r,
                                         int64_t* L) {
  SPECLAB_ASSERT(!r.context.empty());
  // The plain step's run reads tokens L .. L + kPlainRunMaxSteps; T(k) reads L .. L + k - 1.
  const int64_t ahead = std::max<int64_t>(r.k_max, kPlainRunMaxSteps + 1);
  *L = std::min<int64_t>(r.context_len, target.max_ctx() - ahead - r.g_max - 1);
  SPECLAB_INPUT_CHECK(*L >= 3, "cost profile: context limit ", target.max_ctx(),
                      " too small for rounds of up to ", r.k_max, " tokens");
  std::vector<int32_t> ctx(static_cast<size_t>(*L + ahead));
  for (size_t i = 0; i < ctx.size(); i++) ctx[i] = r.context[i % r.context.size()];
  return ctx;
}

PlainRun cost_profile_plain_run(TokenRunner& target, const int32_t* tokens, int64_t L,
                                const SamplingParams& sampling, float* p) {
  const int64_t vocab = target.vocab();
  SPECLAB_ASSERT(target.n_past() == L);
  const float* step_logits = target.forward(tokens + L, 1);  // untimed: the run's first step
  PlainRun run;
  double sum_s = 0, sum_head = 0;
  int steps = 0;
  for (; plain_run_goes_on(steps, sum_s); steps++) {
    sampling_standardize(p, step_logits, vocab, sampling);
    volatile int32_t x = sampling_draw(p, vocab, 0.5);
    (void)x;
    const auto t0 = Clock::now();
    step_logits = target.forward(tokens + L + 1 + steps, 1);
    sum_s += timing_since(t0);
    const ForwardSplit split = target.last_forward_split();
    run.split_known = run.split_known && split.known();
    sum_head += split.head_s;
  }
  target.truncate(L);
  run.step_s = sum_s / steps;
  run.head_s = sum_head / steps;
  return run;
}

CostProfile cost_profile_measure(TokenRunner& target, Drafter& drafter, const CostProfileRequest& r,
                                 CostProfileSpread* spread, CostProfileParts* parts) {
  SPECLAB_ASSERT(r.k_max >= 1 && r.g_max >= 1 && r.reps >= 1);
  const int64_t vocab = target.vocab();
  int64_t L = 0;
  const std::vector<int32_t> ctx = cost_profile_tokens(target, r, &L);
  const int64_t prompt_len = std::clamp<int64_t>(r.prompt_len, 2, L);
  const std::vector<int32_t> at_l = head(ctx, L), at_l1 = head(ctx, L - 1),
                             at_l2 = head(ctx, L - 2), prompt = head(ctx, prompt_len);

  // Real logits of this target for the host figures: [k_max, vocab] after the context.
  target.truncate(0);
  target.forward(ctx.data(), L, /*last_only=*/true);
  const float* rows = target.forward(ctx.data() + L, r.k_max);
  const std::vector<float> logits(rows, rows + r.k_max * vocab);
  target.truncate(L);

  std::vector<std::vector<double>> t_k(static_cast<size_t>(r.k_max)),
      host_k(static_cast<size_t>(r.k_max)), draft_n(static_cast<size_t>(r.g_max + 1));
  std::vector<double> two_behind, one_behind, first_call, plain_step;
  // [k - 1] repetitions of the device round of k tokens, for a target that verifies on its
  // device (asked once, here; empty otherwise).
  std::vector<std::vector<double>> device_k;
  const bool on_device = cost_profile_verifies_on_device(target, ctx.data(), L, r.target_sampling);
  if (on_device) device_k.resize(static_cast<size_t>(r.k_max));
  // The parts (CostProfileParts), per k or n like the figures they split.
  std::vector<std::vector<double>> head_k(static_cast<size_t>(r.k_max)),
      standardize_k(static_cast<size_t>(r.k_max)),
      draft_forward_n(static_cast<size_t>(r.g_max + 1));
  std::vector<double> plain_head;
  // [shape][g] repetitions of tree(shape, g), g = 0..depth (g = 0 stays empty).
  std::vector<std::vector<std::vector<double>>> tree_g(r.trees.size());
  // [n] repetitions of a one-token proposal n tokens behind, n = 1..deepest tree + 1 (trees
  // only; n <= L - 1 so the proposal before it has a context).
  int max_behind = 0;
  for (const TreeShape& t : r.trees) max_behind = std::max(max_behind, t.depth() + 1);
  max_behind = static_cast<int>(std::min<int64_t>(max_behind, L - 1));
  std::vector<std::vector<double>> behind_n(static_cast<size_t>(max_behind + 1));
  for (size_t i = 0; i < r.trees.size(); i++)
    tree_g[i].resize(static_cast<size_t>(r.trees[i].depth() + 1));
  DraftTree tree;
  bool split_known = true;
  std::vector<float> p(static_cast<size_t>(r.k_max * vocab));
  DraftProposal prop;
  const RngKey key{0x5eed, 0, static_cast<uint64_t>(L), 0, 0};
  const DraftStopRule no_stop;
  auto propose_s = [&](const std::vector<int32_t>& c, int n) {
    const auto t0 = Clock::now();
    // As the decoder drafts: on the runner's device when it samples there.
    drafter.propose_keeping_q_on_device(c, n, r.draft_sampling, no_stop, key, &prop);
    return timing_since(t0);
  };
  // rep 0 warms every call and is not kept; then at least r.reps, and more until min_seconds.
  const auto started = Clock::now();
  int kept = 0;
  for (int rep = 0; rep <= r.reps || (timing_since(started) < r.min_seconds && kept < r.max_reps);
       rep++) {
    const bool keep = rep > 0;
    kept += keep ? 1 : 0;
    for (int k = 1; k <= r.k_max; k++) {
      // A verify follows the round's drafting, not another target call: time it after a
      // proposal, as it runs in the decoder.
      propose_s(at_l, 1);
      const auto t0 = Clock::now();
      target.forward(ctx.data() + L, k);
      const double s = timing_since(t0);
      const ForwardSplit split = target.last_forward_split();
      split_known = split_known && split.known();
      target.truncate(L);
      if (keep) {
        t_k[static_cast<size_t>(k - 1)].push_back(s);
        head_k[static_cast<size_t>(k - 1)].push_back(split.head_s);
      }
    }
    // A target that verifies on its device: the decoder's round there is one call (forward,
    // standardize, verify), right after the proposal of its drafts, q left on the device.
    for (int k = 1; on_device && k <= r.k_max; k++) {
      const double s = device_verify_s(target, drafter, ctx, L, k, r, at_l, &prop);
      if (keep) device_k[static_cast<size_t>(k - 1)].push_back(s);
    }
    // The plain loop's step follows its previous step, one position further on, with the
    // host's standardize + draw of the previous step's token between them (priced apart, as
    // host(1)): time a run of such steps after an untimed one (plain_run_goes_on) and keep
    // their mean, as the loop's time per token is the mean over its steps.
    {
      const PlainRun run =
          cost_profile_plain_run(target, ctx.data(), L, r.target_sampling, p.data());
      split_known = split_known && run.split_known;
      if (keep) {
        plain_step.push_back(run.step_s);
        plain_head.push_back(run.head_s);
      }
    }
    for (int n = 1; n <= r.g_max; n++) {
      propose_s(at_l1, 1);  // the drafter now holds the context but its last token
      // In the decoder a round's drafting follows the previous round's target pass, which has
      // pushed the draft's weights out of the caches: time it after one, as it runs there.
      target.forward(ctx.data() + L, 1);
      target.truncate(L);
      const double s = propose_s(at_l, n);
      if (keep) {
        draft_n[static_cast<size_t>(n)].push_back(s);
        draft_forward_n[static_cast<size_t>(n)].push_back(prop.forward_s);
      }
    }
    for (size_t i = 0; i < r.trees.size(); i++)
      for (int g = 1; g <= r.trees[i].depth(); g++) {
        TreeShape cut = r.trees[i];
        cut.branching.resize(static_cast<size_t>(g));
        propose_s(at_l1, 1);  // as round(n): one token behind, after a target call
        target.forward(ctx.data() + L, 1);
        target.truncate(L);
        const auto t0 = Clock::now();
        drafter.propose_tree(at_l, cut, r.draft_sampling, key, &tree);
        if (keep) tree_g[i][static_cast<size_t>(g)].push_back(timing_since(t0));
      }
    // After a tree round the drafter reads the accepted tokens and the correction (it forgot
    // the tree): a proposal n behind, after a target call, as one_behind and two_behind are.
    for (int n = 1; n <= max_behind; n++) {
      propose_s(head(ctx, L - n), 1);
      target.forward(ctx.data() + L, 1);
      target.truncate(L);
      const double s = propose_s(at_l, 1);
      if (keep) behind_n[static_cast<size_t>(n)].push_back(s);
    }
    propose_s(at_l2, 1);  // two tokens behind: the state after a fully accepted round
    target.forward(ctx.data() + L, 1);
    target.truncate(L);
    const double two = propose_s(at_l, 1);
    drafter.reset();
    const double first = propose_s(prompt, 1);
    propose_s(at_l1, 1);
    target.forward(ctx.data() + L, 1);
    target.truncate(L);
    const double one = propose_s(at_l, 1);
    if (keep) {
      two_behind.push_back(two);
      one_behind.push_back(one);
      first_call.push_back(first);
    }
    for (int k = 1; k <= r.k_max; k++) {
      const auto t0 = Clock::now();
      for (int i = 0; i < k; i++)
        sampling_standardize(p.data() + i * vocab, logits.data() + i * vocab, vocab,
                             r.target_sampling);
      if (keep) standardize_k[static_cast<size_t>(k - 1)].push_back(timing_since(t0));
      if (k == 1) {
        volatile int32_t x = sampling_draw(p.data(), vocab, 0.5);
        (void)x;
      } else {
        // Drafts: the target's own likeliest tokens (so the round runs to its end), checked
        // against q = p (a sampled drafter's q has p's shape; one-hot when deterministic).
        std::vector<int32_t> drafts(static_cast<size_t>(k - 1));
        for (int i = 0; i < k - 1; i++) drafts[i] = sampling_argmax(p.data() + i * vocab, vocab);
        VerifyRound round;
        round.n_draft = k - 1;
        round.draft = drafts.data();
        round.q = drafter.deterministic() ? nullptr : p.data();
        round.p = p.data();
        round.vocab = vocab;
        VerifyConfig vc;
        vc.greedy = r.target_sampling.temperature == 0.0f;
        speculative_verify(round, vc, key);
      }
      if (keep) host_k[static_cast<size_t>(k - 1)].push_back(timing_since(t0));
    }
  }
  target.truncate(0);
  drafter.reset();

  CostProfile c;
  c.source = "measured";
  c.context_len = L;
  for (const auto& v : t_k) c.target_s.push_back(timing_median(v));
  for (const auto& v : host_k) c.host_round_s.push_back(timing_median(v));
  for (const auto& v : device_k) c.verify_device_s.push_back(timing_median(v));
  c.baseline_step_s = timing_median(plain_step);
  c.draft_round_s.push_back(0.0);
  for (int n = 1; n <= r.g_max; n++)
    c.draft_round_s.push_back(timing_median(draft_n[static_cast<size_t>(n)]));
  c.draft_step_s = c.draft_round_s[1];
  c.draft_catchup_s = std::max(0.0, timing_median(two_behind) - timing_median(one_behind));
  c.draft_prefill_s = std::max(0.0, timing_median(first_call) - timing_median(one_behind));
  for (size_t i = 0; i < r.trees.size(); i++) {
    std::vector<double>& v = c.draft_tree_s[r.trees[i].to_string()];
    v.assign(1, 0.0);
    for (size_t g = 1; g < tree_g[i].size(); g++) v.push_back(timing_median(tree_g[i][g]));
  }
  if (max_behind >= 1) {
    c.draft_behind_s.push_back(0.0);
    for (int n = 1; n <= max_behind; n++)
      c.draft_behind_s.push_back(timing_median(behind_n[static_cast<size_t>(n)]));
  }
  if (spread) {
    *spread = CostProfileSpread{};
    spread->reps = kept;
    for (const auto& v : t_k) timing_spread_add(&spread->target_s, v);
    timing_spread_add(&spread->baseline_step_s, plain_step);
    for (const auto& v : host_k) timing_spread_add(&spread->host_round_s, v);
    for (const auto& v : device_k) timing_spread_add(&spread->verify_device_s, v);
    timing_spread_add(&spread->draft_round_s, {0.0});
    for (int n = 1; n <= r.g_max; n++)
      timing_spread_add(&spread->draft_round_s, draft_n[static_cast<size_t>(n)]);
    timing_spread_add(&spread->draft_one_behind_s, one_behind);
    timing_spread_add(&spread->draft_two_behind_s, two_behind);
    timing_spread_add(&spread->draft_first_call_s, first_call);
    for (size_t i = 0; i < r.trees.size(); i++) {
      TimingSpread& t = spread->draft_tree_s[r.trees[i].to_string()];
      timing_spread_add(&t, {0.0});
      for (size_t g = 1; g < tree_g[i].size(); g++) timing_spread_add(&t, tree_g[i][g]);
    }
  }
  if (parts) {
    *parts = CostProfileParts{};
    for (const auto& v : standardize_k) parts->host_standardize_s.push_back(timing_median(v));
    parts->draft_forward_s.push_back(0.0);
    for (int n = 1; n <= r.g_max; n++)
      parts->draft_forward_s.push_back(timing_median(draft_forward_n[static_cast<size_t>(n)]));
    if (split_known) {
      for (const auto& v : head_k) parts->target_head_s.push_back(timing_median(v));
      parts->baseline_step_head_s = timing_median(plain_head);
    }
  }
  return c;
}

}  // namespace speclab
