#include "core/speedup_prediction.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/rng.h"
#include "core/stats.h"

namespace speclab {

namespace {

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

// v[k - 1] at a fractional k >= 1, linear between the measured whole k (T(k) and host(k) of
// a tree whose expected node count is not whole).
double at_fractional_k(const std::vector<double>& v, double k) {
  const double x = std::clamp(k, 1.0, static_cast<double>(v.size())) - 1.0;
  const size_t i = static_cast<size_t>(x);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (x - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

// Drafted tokens of a round of depth g: g for a chain, the tree's expected nodes cut to g.
double drafted_nodes(int g, const ChainSetting& s) {
  return s.tree_nodes_at_depth.empty() || g == 0 ? g
                                                 : s.tree_nodes_at_depth.at(static_cast<size_t>(g));
}

// Extra seconds of the next proposal after a round of depth g that accepted i drafts: a chain's
// drafter is one token behind, two after a fully accepted round (draft_catchup_s); a tree's is
// i + 1 behind (CostProfile::draft_behind_s), where profiled.
double catchup_after(const CostProfile& cost, int g, int i, const ChainSetting& s) {
  if (g == 0) return 0.0;
  const size_t behind = static_cast<size_t>(i + 1);
  if (!s.tree_nodes_at_depth.empty() && behind < cost.draft_behind_s.size())
    return std::max(0.0, cost.draft_behind_s[behind] - cost.draft_behind_s[1]);
  return i == g ? cost.draft_catchup_s : 0.0;
}

// Seconds of one round that drafts g tokens and verifies k = g + 1 of them (chain), or drafts
// the setting's tree cut to depth g and verifies its nodes + 1: the tree's drafting as
// profiled for its shape (draft_tree_s), else as a chain of g.
double round_seconds(const CostProfile& cost, int g, const ChainSetting& s) {
  const size_t gi = static_cast<size_t>(g);
  if (s.tree_nodes_at_depth.empty() || g == 0)
    return cost.draft_round_s[gi] + cost.round_target_side_at(g + 1, s.verify_on_device);
  const double k = drafted_nodes(g, s) + 1;
  const auto tree = cost.draft_tree_s.find(s.tree_shape);
  const double draft = tree != cost.draft_tree_s.end() && gi < tree->second.size()
                           ? tree->second[gi]
                           : cost.draft_round_s[gi];
  return draft + cost.target_at(k) + cost.host_at(k);
}

std::unique_ptr<GammaPolicy> policy_for(const ChainSetting& s) {
  return gamma_policy_create(s.policy, s.gamma);  // the decoder's own factory
}

struct PromptTotals {
  double seconds = 0, rounds = 0, drafted = 0, nodes = 0;  // nodes: tree rounds' drafted nodes
};

// Exact expectation for a fixed gamma: backward recursion over start positions (see header).
PromptTotals expected_fixed(const CostProfile& cost, const AcceptancePrompt& p,
                            const ChainSetting& s) {
  const int64_t n = acceptance_prompt_tokens(p);
  // [n + 1] expected seconds / rounds / drafted tokens / drafted tree nodes to finish from t;
  // the extra catch-up after a fully accepted round is charged to the round that caused it.
  std::vector<double> v(static_cast<size_t>(n + s.gamma + 2), 0.0), r(v.size(), 0.0),
      d(v.size(), 0.0), e(v.size(), 0.0);
  // A strided prompt: the round at t under the mixture of its measured rollouts (header).
  const bool mixture = acceptance_prompt_strided(p);
  const double weight = mixture ? 1.0 / static_cast<double>(p.positions.size()) : 1.0;
  for (int64_t t = n - 1; t >= 0; t--) {
    const int64_t budget = std::max<int64_t>(0, s.max_new_tokens - t - 1);
    double vt = 0, rt = 0, dt = 0, et = 0;
    auto add_round = [&](const AcceptanceRollout& roll) {
      const int g = acceptance_drafts_allowed(
          roll, static_cast<int>(std::min<int64_t>(s.gamma, budget)), s.p_min);
      double vr = round_seconds(cost, g, s), rr = 1, dr = g, er = drafted_nodes(g, s);
      double survive = 1;  // S_t(i)
      for (int i = 0; i <= g; i++) {
        const double next = i < g ? survive * roll.accept[static_cast<size_t>(i)] : 0.0;
        const double p_n = survive - next;  // exactly i accepted
        const size_t to = static_cast<size_t>(t + i + 1);
        vr += p_n * (v[to] + catchup_after(cost, g, i, s));
        rr += p_n * r[to];
        dr += p_n * d[to];
        er += p_n * e[to];
        survive = next;
      }
      vt += weight * vr;
      rt += weight * rr;
      dt += weight * dr;
      et += weight * er;
    };
    if (mixture) {
      for (const AcceptanceRollout& roll : p.positions) add_round(roll);
    } else {
      add_round(p.positions[static_cast<size_t>(t)]);
    }
    v[static_cast<size_t>(t)] = vt;
    r[static_cast<size_t>(t)] = rt;
    d[static_cast<size_t>(t)] = dt;
    e[static_cast<size_t>(t)] = et;
  }
  return {v[0], r[0], d[0], e[0]};
}

// Monte Carlo walks for adaptive policies: the policy sees each round's outcome.
PromptTotals expected_by_walks(const CostProfile& cost, const AcceptancePrompt& p,
                               const ChainSetting& s, uint64_t prompt_index) {
  const int64_t n = acceptance_prompt_tokens(p);
  PromptTotals sum;
  for (int w = 0; w < s.monte_carlo_walks; w++) {
    auto policy = policy_for(s);
    double pending_catchup_s = 0;
    int64_t t = 0;
    while (t < n) {
      const AcceptanceRollout& roll =
          acceptance_rollout_for(p, t,
                                 {s.seed, prompt_index, static_cast<uint64_t>(t), kRngProfileStride,
                                  static_cast<uint32_t>(w)});
      const int64_t budget = std::max<int64_t>(0, s.max_new_tokens - t - 1);
      const int want = std::min<int>(std::min(policy->next_gamma(), cost.max_gamma()),
                                     static_cast<int>(std::min<int64_t>(budget, 1 << 20)));
      const int g = acceptance_drafts_allowed(roll, want, s.p_min);
      sum.seconds += round_seconds(cost, g, s) + pending_catchup_s;
      sum.rounds += 1;
      sum.drafted += g;
      sum.nodes += drafted_nodes(g, s);
      int accepted = 0;
      while (accepted < g) {
        const RngKey key{s.seed, prompt_index, static_cast<uint64_t>(t + accepted), kRngTest,
                         static_cast<uint32_t>(w)};
        if (rng_uniform(key) >= roll.accept[static_cast<size_t>(accepted)]) break;
        accepted++;
      }
      pending_catchup_s = catchup_after(cost, g, accepted, s);
      std::vector<float> ent(roll.entropy.begin(), roll.entropy.begin() + g);
      policy->observe(g, accepted, ent);
      t += accepted + 1;
    }
  }
  const double inv = 1.0 / std::max(1, s.monte_carlo_walks);
  return {sum.seconds * inv, sum.rounds * inv, sum.drafted * inv, sum.nodes * inv};
}

}  // namespace

int64_t acceptance_prompt_tokens(const AcceptancePrompt& p) {
  return p.n_tokens >= 0 ? p.n_tokens : static_cast<int64_t>(p.positions.size());
}

bool acceptance_prompt_strided(const AcceptancePrompt& p) {
  return p.stride > 1 || p.n_tokens >= 0;
}

const AcceptanceRollout& acceptance_rollout_for(const AcceptancePrompt& p, int64_t t,
                                                const RngKey& draw) {
  SPECLAB_ASSERT(!p.positions.empty());
  const uint64_t m = p.positions.size();
  if (!acceptance_prompt_strided(p))
    return p.positions[static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(t), m - 1))];
  return p.positions[static_cast<size_t>(rng_bits64(draw) % m)];
}

int acceptance_drafts_allowed(const AcceptanceRollout& r, int cap, double p_min) {
  int m = std::min<int>(cap, static_cast<int>(r.accept.size()));
  for (int j = 0; j < m; j++)
    if (r.top_prob[static_cast<size_t>(j)] < p_min) return j;
  return m;
}

void acceptance_profile_check(const AcceptanceProfile& acceptance) {
  for (const auto& p : acceptance.prompts)
    for (const auto& r : p.positions)
      SPECLAB_INPUT_CHECK(
          r.top_prob.size() == r.accept.size() && r.entropy.size() == r.accept.size(),
          "acceptance profile: prompt '", p.prompt_id,
          "': accept, top_prob and entropy lengths differ");
}

double CostProfile::target_at(double k) const {
  SPECLAB_ASSERT(!target_s.empty());
  return at_fractional_k(target_s, k);
}

double CostProfile::host_at(double k) const {
  SPECLAB_ASSERT(!host_round_s.empty());
  return at_fractional_k(host_round_s, k);
}

double CostProfile::round_target_side_at(double k, bool on_device) const {
  if (on_device && !verify_device_s.empty()) return at_fractional_k(verify_device_s, k);
  return target_at(k) + host_at(k);
}

void cost_profile_validate(const CostProfile& c, const std::string& where) {
  SPECLAB_INPUT_CHECK(!c.target_s.empty(), where, ": target_s: expected T(k) for k = 1.. (empty)");
  SPECLAB_INPUT_CHECK(std::isfinite(c.target_s[0]) && c.target_s[0] > 0, where,
                      ": target_s[0]: expected T(1) > 0 seconds, got ", c.target_s[0]);
  SPECLAB_INPUT_CHECK(c.host_round_s.size() == c.target_s.size(), where, ": host_round_s has ",
                      c.host_round_s.size(), " entries, expected one per T(k) (", c.target_s.size(),
                      ")");
  SPECLAB_INPUT_CHECK(!c.draft_round_s.empty(), where,
                      ": draft_round_s: expected draft seconds for n = 0.. tokens (empty)");
  SPECLAB_INPUT_CHECK(c.draft_round_s[0] == 0, where,
                      ": draft_round_s[0]: expected 0 (drafting no token takes no time), got ",
                      c.draft_round_s[0]);
  auto check_all = [&](const std::vector<double>& v, const char* name) {
    for (size_t i = 0; i < v.size(); i++)
      SPECLAB_INPUT_CHECK(finite_non_negative(v[i]), where, ": ", name, "[", i,
                          "]: expected finite seconds >= 0, got ", v[i]);
  };
  SPECLAB_INPUT_CHECK(finite_non_negative(c.baseline_step_s), where,
                      ": baseline_step_s: expected finite seconds >= 0, got ", c.baseline_step_s);
  check_all(c.target_s, "target_s");
  check_all(c.draft_round_s, "draft_round_s");
  check_all(c.host_round_s, "host_round_s");
  SPECLAB_INPUT_CHECK(c.verify_device_s.empty() || c.verify_device_s.size() == c.target_s.size(),
                      where, ": verify_device_s has ", c.verify_device_s.size(),
                      " entries, expected one per T(k) (", c.target_s.size(), ") or none");
  check_all(c.verify_device_s, "verify_device_s");
  SPECLAB_INPUT_CHECK(finite_non_negative(c.draft_step_s), where,
                      ": draft_step_s: expected finite seconds >= 0");
  SPECLAB_INPUT_CHECK(finite_non_negative(c.draft_catchup_s), where,
                      ": draft_catchup_s: expected finite seconds >= 0");
  check_all(c.draft_behind_s, "draft_behind_s");
  SPECLAB_INPUT_CHECK(
      c.draft_behind_s.empty() || (c.draft_behind_s.size() >= 2 && c.draft_behind_s[0] == 0), where,
      ": draft_behind_s: expected [0, s(1 behind), ...] (at least 2 entries, "
      "the first 0)");
  SPECLAB_INPUT_CHECK(finite_non_negative(c.draft_prefill_s), where,
                      ": draft_prefill_s: expected finite seconds >= 0");
}

AcceptanceSummary acceptance_summarize(const AcceptanceProfile& profile) {
  AcceptanceSummary s;
  std::vector<double> sum(static_cast<size_t>(profile.max_depth), 0.0);
  double beta_sum = 0, tv_sum = 0;
  int64_t n_beta = 0, n = 0;
  for (const auto& p : profile.prompts) {
    for (const auto& r : p.positions) {
      n++;
      if (r.beta >= 0) {
        beta_sum += r.beta;
        tv_sum += r.lenient_tv;
        n_beta++;
      }
      double surv = 1;
      for (size_t j = 0; j < sum.size(); j++) {
        surv *= j < r.accept.size() ? r.accept[j] : 0.0f;  // nothing proposed: not accepted
        sum[j] += surv;
      }
    }
  }
  s.n_positions = n;
  s.alpha_beta = n_beta ? beta_sum / n_beta : 0.0;
  s.lenient_tv = n_beta ? tv_sum / n_beta : 0.0;
  for (size_t j = 0; j < sum.size(); j++) {
    s.survival.push_back(n ? sum[j] / n : 0.0);
    const double before = j == 0 ? 1.0 : s.survival[j - 1];
    s.conditional.push_back(before > 0 ? s.survival[j] / before : 0.0);
  }
  return s;
}

AlphaInterval acceptance_alpha_interval(const AcceptanceProfile& profile, int resamples,
                                        double confidence, uint64_t seed) {
  // Per prompt: sum of beta and count; the statistic is the pooled ratio of sums.
  std::vector<double> sums, counts;
  for (const auto& p : profile.prompts) {
    double b = 0, c = 0;
    for (const auto& r : p.positions)
      if (r.beta >= 0) {
        b += r.beta;
        c += 1;
      }
    sums.push_back(b);
    counts.push_back(c);
  }
  if (sums.empty() || resamples < 2) return {};
  const Interval ci = stats_cluster_bootstrap_interval(
      sums.size(),
      [&](const std::vector<size_t>& picks) {
        double b = 0, c = 0;
        for (size_t i : picks) {
          b += sums[i];
          c += counts[i];
        }
        return c > 0 ? b / c : NAN;
      },
      resamples, 1 - confidence, seed);
  if (!std::isfinite(ci.lo)) return {};
  return {ci.lo, ci.hi};
}

AcceptanceProfile acceptance_profile_configured(const std::vector<double>& accept_prob, int depth,
                                                int n_prompts, int64_t n_positions) {
  SPECLAB_INPUT_CHECK(!accept_prob.empty(), "configured acceptance: empty list");
  AcceptanceRollout r;
  for (int i = 0; i < depth; i++) {
    const double a = accept_prob[std::min<size_t>(static_cast<size_t>(i), accept_prob.size() - 1)];
    SPECLAB_INPUT_CHECK(a > 0 && a <= 1, "configured acceptance: ", a, " (expected (0, 1])");
    r.accept.push_back(static_cast<float>(a));
    r.top_prob.push_back(1.0f);
    r.entropy.push_back(0.0f);
  }
  r.beta = r.accept.empty() ? -1.0f : r.accept[0];
  AcceptanceProfile p;
  p.max_depth = depth;
  for (int i = 0; i < n_prompts; i++) {
    AcceptancePrompt ap;
    ap.prompt_id = "configured-" + std::to_string(i);
    ap.positions.assign(static_cast<size_t>(n_positions), r);
    p.prompts.push_back(std::move(ap));
  }
  return p;
}

namespace {

// predict_chain's checks, and each prompt's expected totals (tokens in `tokens`); prompts
// without positions are left out.
std::vector<PromptTotals> chain_prompt_totals(const CostProfile& cost,
                                              const AcceptanceProfile& acceptance,
                                              const ChainSetting& s, std::vector<double>* tokens) {
  const std::string where = cost.origin.empty() ? "cost profile" : cost.origin;
  cost_profile_validate(cost, where);
  SPECLAB_INPUT_CHECK(s.gamma >= 1, "prediction: gamma ", s.gamma, " (expected >= 1)");
  SPECLAB_INPUT_CHECK(s.max_new_tokens >= 1, "prediction: max_new_tokens ", s.max_new_tokens);
  const int g_max = s.policy == "heuristic" ? cost.max_gamma() : s.gamma;
  const int64_t k_max = s.tree_nodes_at_depth.empty()
                            ? g_max + 1
                            : static_cast<int64_t>(std::ceil(s.tree_nodes_at_depth.back())) + 1;
  SPECLAB_INPUT_CHECK(static_cast<int64_t>(cost.target_s.size()) >= k_max, where,
                      ": T(k) up to k = ", cost.target_s.size(), ", the setting needs k = ", k_max);
  SPECLAB_INPUT_CHECK(cost.max_gamma() >= g_max, where, ": draft cost for up to ", cost.max_gamma(),
                      " tokens per round, the setting needs ", g_max);
  acceptance_profile_check(acceptance);
  std::vector<PromptTotals> out;
  tokens->clear();
  for (size_t i = 0; i < acceptance.prompts.size(); i++) {
    const AcceptancePrompt& p = acceptance.prompts[i];
    if (p.positions.empty()) continue;
    out.push_back(s.policy == "fixed" && !s.force_walks ? expected_fixed(cost, p, s)
                                                        : expected_by_walks(cost, p, s, i));
    tokens->push_back(static_cast<double>(acceptance_prompt_tokens(p)));
  }
  return out;
}

}  // namespace

Prediction predict_chain(const CostProfile& cost, const AcceptanceProfile& acceptance,
                         const ChainSetting& s) {
  std::vector<double> n;
  const std::vector<PromptTotals> per = chain_prompt_totals(cost, acceptance, s, &n);
  Prediction out;
  out.base_s_per_token = cost.plain_step_s() + cost.host_round_s[0];
  double seconds = 0, rounds = 0, drafted = 0, nodes = 0, tokens = 0;
  for (size_t i = 0; i < per.size(); i++) {
    seconds += cost.draft_prefill_s + per[i].seconds;
    rounds += per[i].rounds;
    drafted += per[i].drafted;
    nodes += per[i].nodes;
    tokens += n[i];
  }
  SPECLAB_INPUT_CHECK(tokens > 0, "acceptance profile: no generated positions to predict from");
  out.spec_s_per_token = seconds / tokens;
  out.speedup = out.base_s_per_token / out.spec_s_per_token;
  out.tokens_per_round = tokens / rounds;
  out.mean_drafted_per_round = drafted / rounds;
  if (!s.tree_nodes_at_depth.empty()) out.mean_tree_nodes_per_round = nodes / rounds;
  return out;
}

PredictionInterval predict_chain_interval(const CostProfile& cost,
                                          const AcceptanceProfile& acceptance,
                                          const ChainSetting& s, int resamples, double confidence,
                                          uint64_t seed) {
  std::vector<double> n;
  const std::vector<PromptTotals> per = chain_prompt_totals(cost, acceptance, s, &n);
  PredictionInterval out{NAN, NAN, NAN, NAN};
  if (per.size() < 2 || resamples < 2) return out;
  const double base = cost.plain_step_s() + cost.host_round_s[0];
  auto pooled = [&](const std::vector<size_t>& picks, bool speedup) {
    double seconds = 0, rounds = 0, tokens = 0;
    for (size_t i : picks) {
      seconds += cost.draft_prefill_s + per[i].seconds;
      rounds += per[i].rounds;
      tokens += n[i];
    }
    if (speedup) return seconds > 0 ? base * tokens / seconds : NAN;
    return rounds > 0 ? tokens / rounds : NAN;
  };
  // One seed for both figures: the same resamples of prompts.
  const Interval sp = stats_cluster_bootstrap_interval(
      per.size(), [&](const std::vector<size_t>& p) { return pooled(p, true); }, resamples,
      1 - confidence, seed);
  const Interval tpr = stats_cluster_bootstrap_interval(
      per.size(), [&](const std::vector<size_t>& p) { return pooled(p, false); }, resamples,
      1 - confidence, seed);
  out.speedup_lo = sp.lo;
  out.speedup_hi = sp.hi;
  out.tokens_per_round_lo = tpr.lo;
  out.tokens_per_round_hi = tpr.hi;
  return out;
}

}  // namespace speclab
