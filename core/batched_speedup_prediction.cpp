#include "core/batched_speedup_prediction.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/rng.h"

namespace speclab {

namespace {

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

// Linear interpolation of v (indexed 0..) at fractional index x in [0, v.size() - 1].
double lerp_index(const std::vector<double>& v, double x) {
  SPECLAB_ASSERT(!v.empty() && x >= 0 && x <= static_cast<double>(v.size() - 1) + 1e-9);
  const size_t i = std::min(static_cast<size_t>(x), v.size() - 1);
  if (i + 1 >= v.size()) return v[i];
  const double f = x - static_cast<double>(i);
  return v[i] + f * (v[i + 1] - v[i]);
}

// Where b falls among the profiled slots: the bracketing index i and weight f, so that a
// figure at b is (1 - f) fig[i] + f fig[i + 1].
void slot_bracket(const std::vector<int>& slots, double b, size_t* i, double* f) {
  SPECLAB_ASSERT(!slots.empty() && b >= slots.front() - 1e-9 && b <= slots.back() + 1e-9);
  size_t j = 0;
  while (j + 1 < slots.size() && slots[j + 1] < b) j++;
  *i = j;
  *f = j + 1 < slots.size() ? (b - slots[j]) / static_cast<double>(slots[j + 1] - slots[j]) : 0.0;
  *f = std::clamp(*f, 0.0, 1.0);
}

// One request of the replayed queue.
struct SimRequest {
  size_t queue_index = 0;
  const AcceptancePrompt* prompt = nullptr;
  int64_t n_tokens = 0;  // tokens it generates (the profile's positions)
  int64_t t = 0;         // emitted so far
  double decode_start = 0;
  bool pending_catchup = false;  // its last round accepted every draft
  std::unique_ptr<GammaPolicy> policy;
};

struct LoopTotals {
  double seconds = 0, decode_s = 0, prefill_s = 0;
  double tokens = 0, rounds = 0, request_rounds = 0, drafted = 0, active = 0;
};

// One replay of the closed loop (spec: speculative rounds, else plain steps).
LoopTotals replay(const CostProfile& one, const BatchedCostProfile& many,
                  const AcceptanceProfile& acceptance, const BatchedSetting& s, bool spec,
                  int walk) {
  const ChainSetting& c = s.chain;
  std::vector<const AcceptancePrompt*> queue;  // repeat-major, as the measurement's queue
  std::vector<int64_t> prompt_len;
  for (int rep = 0; rep < s.repeats; rep++)
    for (size_t p = 0; p < acceptance.prompts.size(); p++) {
      queue.push_back(&acceptance.prompts[p]);
      prompt_len.push_back(p < s.prompt_lens.size() ? s.prompt_lens[p] : 0);
    }
  LoopTotals out;
  std::vector<SimRequest> active;
  size_t next = 0;
  double clock = 0, pending_draft_prefill = 0;
  std::vector<int> g;
  std::vector<int> n_acc;
  for (;;) {
    // Admission: one forward over every admitted prompt but its last token.
    double admit_s = 0;
    const size_t first_new = active.size();
    while (static_cast<int>(active.size()) < s.concurrency && next < queue.size()) {
      const double prefill_tokens = static_cast<double>(std::max<int64_t>(0, prompt_len[next] - 1));
      admit_s += prefill_tokens * many.target_prefill_s_per_token;
      // The drafter reads the prompt in its next proposal (its catch-up forward).
      if (spec && s.draft_prefill)
        pending_draft_prefill += prefill_tokens * many.draft_prefill_s_per_token;
      SimRequest r;
      r.queue_index = next;
      r.prompt = queue[next];
      r.n_tokens = acceptance_prompt_tokens(*queue[next]);
      r.policy = gamma_policy_create(c.policy, c.gamma);
      active.push_back(std::move(r));
      next++;
    }
    clock += admit_s;
    out.prefill_s += admit_s;
    for (size_t i = first_new; i < active.size(); i++) active[i].decode_start = clock;
    // Requests with nothing to generate retire at once.
    for (size_t i = 0; i < active.size();) {
      if (active[i].t >= active[i].n_tokens) {
        out.decode_s += clock - active[i].decode_start;
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        i++;
      }
    }
    if (active.empty()) {
      if (next >= queue.size()) break;
      continue;
    }
    const double b = static_cast<double>(active.size());
    double step_s = 0;
    if (!spec) {
      step_s = many.plain_step_at(b) + b * one.host_round_s[0];
      for (SimRequest& r : active) r.t++;
      out.request_rounds += b;
    } else {
      g.assign(active.size(), 0);
      n_acc.assign(active.size(), 0);
      double g_sum = 0, host_s = 0, behind_two = 0;
      for (size_t i = 0; i < active.size(); i++) {
        SimRequest& r = active[i];
        const AcceptanceRollout& roll = acceptance_rollout_for(
            *r.prompt, r.t,
            {c.seed, static_cast<uint64_t>(r.queue_index), static_cast<uint64_t>(r.t),
             kRngProfileStride, static_cast<uint32_t>(walk)});
        const int64_t budget = std::max<int64_t>(0, c.max_new_tokens - r.t - 1);
        const int policy_gamma =
            s.gamma_by_load.empty()
                ? r.policy->next_gamma()
                : s.gamma_by_load[std::min(active.size(), s.gamma_by_load.size() - 1)];
        const int want = std::min<int>(std::min(policy_gamma, many.max_gamma()),
                                       static_cast<int>(std::min<int64_t>(budget, 1 << 20)));
        g[i] = acceptance_drafts_allowed(roll, want, c.p_min);
        int accepted = 0;
        while (accepted < g[i]) {
          const RngKey key{c.seed, static_cast<uint64_t>(r.queue_index),
                           static_cast<uint64_t>(r.t + accepted), kRngTest,
                           static_cast<uint32_t>(walk)};
          if (rng_uniform(key) >= roll.accept[static_cast<size_t>(accepted)]) break;
          accepted++;
        }
        n_acc[i] = accepted;
        g_sum += g[i];
        host_s += one.host_round_s[static_cast<size_t>(g[i])];
        if (r.pending_catchup && g[i] > 0) behind_two += 1;
      }
      const double g_mean = g_sum / b;
      // A round in which nobody drafts is a plain step (it follows a target forward, not a
      // proposal).
      const double verify_s = g_sum > 0 ? many.target_at(b, g_mean + 1) : many.plain_step_at(b);
      // The drafter reads the admitted prompts in its next proposal: a round in which nobody
      // drafts leaves that reading pending.
      const double draft_prefill = g_sum > 0 ? pending_draft_prefill : 0.0;
      step_s = draft_prefill + (g_sum > 0 ? many.draft_at(b, g_mean) : 0.0) +
               many.catchup_at(b) * behind_two / b + verify_s + host_s;
      if (g_sum > 0) pending_draft_prefill = 0;
      for (size_t i = 0; i < active.size(); i++) {
        SimRequest& r = active[i];
        const AcceptanceRollout& roll = acceptance_rollout_for(
            *r.prompt, r.t,
            {c.seed, static_cast<uint64_t>(r.queue_index), static_cast<uint64_t>(r.t),
             kRngProfileStride, static_cast<uint32_t>(walk)});
        std::vector<float> ent(roll.entropy.begin(), roll.entropy.begin() + g[i]);
        r.policy->observe(g[i], n_acc[i], ent);
        r.pending_catchup = g[i] > 0 && n_acc[i] == g[i];
        r.t = std::min(r.n_tokens, r.t + n_acc[i] + 1);
      }
      out.drafted += g_sum;
      out.request_rounds += b;
    }
    clock += step_s;
    out.rounds += 1;
    out.active += b;
    for (size_t i = 0; i < active.size();) {
      if (active[i].t >= active[i].n_tokens) {
        out.decode_s += clock - active[i].decode_start;
        out.tokens += static_cast<double>(active[i].n_tokens);
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        i++;
      }
    }
  }
  out.seconds = clock;
  return out;
}

}  // namespace

double BatchedCostProfile::target_at(double b, double k) const {
  size_t i;
  double f;
  slot_bracket(slots, b, &i, &f);
  const double lo = lerp_index(target_s[i], k - 1);
  return f > 0 ? (1 - f) * lo + f * lerp_index(target_s[i + 1], k - 1) : lo;
}

double BatchedCostProfile::draft_at(double b, double n) const {
  size_t i;
  double f;
  slot_bracket(slots, b, &i, &f);
  const double lo = lerp_index(draft_round_s[i], n);
  return f > 0 ? (1 - f) * lo + f * lerp_index(draft_round_s[i + 1], n) : lo;
}

double BatchedCostProfile::catchup_at(double b) const {
  size_t i;
  double f;
  slot_bracket(slots, b, &i, &f);
  return f > 0 ? (1 - f) * draft_catchup_s[i] + f * draft_catchup_s[i + 1] : draft_catchup_s[i];
}

double BatchedCostProfile::plain_step_at(double b) const {
  if (baseline_step_s.empty()) return target_at(b, 1);
  size_t i;
  double f;
  slot_bracket(slots, b, &i, &f);
  return f > 0 ? (1 - f) * baseline_step_s[i] + f * baseline_step_s[i + 1] : baseline_step_s[i];
}

void batched_cost_profile_validate(const BatchedCostProfile& c, const std::string& where) {
  const size_t n = c.slots.size();
  SPECLAB_INPUT_CHECK(n >= 1 && c.slots[0] == 1, where,
                      ": slots: expected ascending slot counts starting at 1");
  for (size_t i = 1; i < n; i++)
    SPECLAB_INPUT_CHECK(c.slots[i] > c.slots[i - 1], where, ": slots[", i, "] = ", c.slots[i],
                        ": expected ascending slot counts");
  SPECLAB_INPUT_CHECK(
      c.target_s.size() == n && c.draft_round_s.size() == n && c.draft_catchup_s.size() == n, where,
      ": target_s, draft_round_s and draft_catchup_s need one entry per "
      "slot count (",
      n, ")");
  for (size_t i = 0; i < n; i++) {
    SPECLAB_INPUT_CHECK(!c.target_s[i].empty() && c.target_s[i].size() == c.target_s[0].size(),
                        where, ": target_s[", i, "]: expected ", c.target_s[0].size(),
                        " figures (T(b, k) for k = 1..), got ", c.target_s[i].size());
    SPECLAB_INPUT_CHECK(
        !c.draft_round_s[i].empty() && c.draft_round_s[i].size() == c.draft_round_s[0].size(),
        where, ": draft_round_s[", i, "]: expected ", c.draft_round_s[0].size(),
        " figures (n = 0..), got ", c.draft_round_s[i].size());
    SPECLAB_INPUT_CHECK(std::isfinite(c.target_s[i][0]) && c.target_s[i][0] > 0, where,
                        ": target_s[", i, "][0]: expected T(b, 1) > 0 seconds");
    for (size_t k = 0; k < c.target_s[i].size(); k++)
      SPECLAB_INPUT_CHECK(finite_non_negative(c.target_s[i][k]), where, ": target_s[", i, "][", k,
                          "]: expected finite seconds >= 0, got ", c.target_s[i][k]);
    for (size_t k = 0; k < c.draft_round_s[i].size(); k++)
      SPECLAB_INPUT_CHECK(finite_non_negative(c.draft_round_s[i][k]), where, ": draft_round_s[", i,
                          "][", k, "]: expected finite seconds >= 0, got ", c.draft_round_s[i][k]);
    SPECLAB_INPUT_CHECK(finite_non_negative(c.draft_catchup_s[i]), where, ": draft_catchup_s[", i,
                        "]: expected finite seconds >= 0, got ", c.draft_catchup_s[i]);
  }
  SPECLAB_INPUT_CHECK(c.baseline_step_s.empty() || c.baseline_step_s.size() == n, where,
                      ": baseline_step_s: expected one entry per slot count (", n, ") or none");
  for (size_t i = 0; i < c.baseline_step_s.size(); i++)
    SPECLAB_INPUT_CHECK(std::isfinite(c.baseline_step_s[i]) && c.baseline_step_s[i] > 0, where,
                        ": baseline_step_s[", i, "]: expected finite seconds > 0, got ",
                        c.baseline_step_s[i]);
  SPECLAB_INPUT_CHECK(finite_non_negative(c.target_prefill_s_per_token), where,
                      ": target_prefill_s_per_token: expected finite seconds >= 0");
  SPECLAB_INPUT_CHECK(finite_non_negative(c.draft_prefill_s_per_token), where,
                      ": draft_prefill_s_per_token: expected finite seconds >= 0");
}

BatchedPrediction predict_batched(const CostProfile& one, const BatchedCostProfile& many,
                                  const AcceptanceProfile& acceptance, const BatchedSetting& s) {
  const std::string where1 = one.origin.empty() ? "cost profile" : one.origin;
  const std::string where = many.origin.empty() ? "batched cost profile" : many.origin;
  cost_profile_validate(one, where1);
  batched_cost_profile_validate(many, where);
  const ChainSetting& c = s.chain;
  SPECLAB_INPUT_CHECK(c.gamma >= 1, "prediction: gamma ", c.gamma, " (expected >= 1)");
  SPECLAB_INPUT_CHECK(c.tree_nodes_at_depth.empty(),
                      "prediction: trees serve one request at a time");
  SPECLAB_INPUT_CHECK(s.concurrency >= 1 && s.repeats >= 1, "prediction: concurrency ",
                      s.concurrency, ", repeats ", s.repeats, " (expected >= 1)");
  SPECLAB_INPUT_CHECK(s.concurrency <= many.max_slots(), where, ": profiled up to ",
                      many.max_slots(), " slots, the setting serves ", s.concurrency,
                      " requests at once");
  const int g_max = c.policy == "heuristic" ? std::min(many.max_gamma(), one.max_gamma()) : c.gamma;
  SPECLAB_INPUT_CHECK(many.max_k() >= g_max + 1, where, ": T(b, k) up to k = ", many.max_k(),
                      ", the setting needs k = ", g_max + 1);
  SPECLAB_INPUT_CHECK(many.max_gamma() >= g_max, where, ": draft cost for up to ", many.max_gamma(),
                      " tokens per round, the setting needs ", g_max);
  SPECLAB_INPUT_CHECK(static_cast<int>(one.host_round_s.size()) >= g_max + 1, where1,
                      ": host(k) up to k = ", one.host_round_s.size(),
                      ", the setting needs k = ", g_max + 1);
  acceptance_profile_check(acceptance);

  // The plain loop has no randomness: one replay. The speculative loop: the mean of walks.
  const LoopTotals base = replay(one, many, acceptance, s, /*spec=*/false, 0);
  SPECLAB_INPUT_CHECK(base.tokens > 0,
                      "acceptance profile: no generated positions to predict from");
  LoopTotals spec;
  const int walks = std::max(1, c.monte_carlo_walks);
  for (int w = 0; w < walks; w++) {
    const LoopTotals t = replay(one, many, acceptance, s, /*spec=*/true, w);
    spec.seconds += t.seconds;
    spec.decode_s += t.decode_s;
    spec.prefill_s += t.prefill_s;
    spec.tokens += t.tokens;
    spec.rounds += t.rounds;
    spec.request_rounds += t.request_rounds;
    spec.drafted += t.drafted;
    spec.active += t.active;
  }
  BatchedPrediction out;
  out.base_tokens_per_s = base.tokens / base.seconds;
  out.spec_tokens_per_s = spec.tokens / spec.seconds;
  out.throughput_speedup = out.spec_tokens_per_s / out.base_tokens_per_s;
  out.speedup = (base.decode_s / base.tokens) / (spec.decode_s / spec.tokens);
  out.tokens_per_round = spec.tokens / spec.request_rounds;
  out.mean_drafted_per_round = spec.drafted / spec.request_rounds;
  out.mean_active = spec.active / spec.rounds;
  out.spec_round_s = (spec.seconds - spec.prefill_s) / spec.rounds;
  out.base_step_s = (base.seconds - base.prefill_s) / base.rounds;
  out.prefill_share_spec = spec.prefill_s / spec.seconds;
  return out;
}

std::vector<int> predicted_gamma_by_load(const CostProfile& one, const BatchedCostProfile& many,
                                         const std::vector<double>& survival, int g_max) {
  g_max = std::min(
      {g_max, many.max_gamma(), many.max_k() - 1, static_cast<int>(one.host_round_s.size()) - 1});
  std::vector<int> best(static_cast<size_t>(many.max_slots() + 1), 0);
  for (int b = 1; b <= many.max_slots(); b++) {
    const double db = b;
    double best_rate = db / (many.plain_step_at(db) + db * one.host_round_s[0]);  // k = 0
    double tokens = 1, surv = 1;
    for (int k = 1; k <= g_max; k++) {
      surv =
          static_cast<size_t>(k - 1) < survival.size() ? survival[static_cast<size_t>(k - 1)] : 0.0;
      tokens += surv;
      const double round = many.draft_at(db, k) + many.catchup_at(db) * surv +
                           many.target_at(db, k + 1) +
                           db * one.host_round_s[static_cast<size_t>(k)];
      const double rate = db * tokens / round;
      if (rate > best_rate) {
        best_rate = rate;
        best[static_cast<size_t>(b)] = k;
      }
    }
  }
  return best;
}

int crossover_concurrency(const std::vector<int>& grid, const std::vector<double>& speedups) {
  SPECLAB_ASSERT(grid.size() == speedups.size());
  int last = 0;
  for (size_t i = 0; i < grid.size(); i++)
    if (!std::isnan(speedups[i]) && speedups[i] > 1.0) last = std::max(last, grid[i]);
  return last;
}

}  // namespace speclab
