#include "experiments/predict/batched_cost_profile.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/rng.h"

namespace speclab {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

BatchedCostProfile batched_cost_profile_measure(BatchTokenRunner& target, BatchDrafter& drafter,
                                                const BatchedCostRequest& r,
                                                BatchedCostSpread* spread) {
  SPECLAB_ASSERT(!r.context.empty() && !r.slots.empty() && r.slots[0] == 1 && r.k_max >= 1 &&
                 r.g_max >= 1 && r.reps >= 1);
  for (size_t i = 1; i < r.slots.size(); i++) SPECLAB_ASSERT(r.slots[i] > r.slots[i - 1]);
  const int b_max = r.slots.back();
  SPECLAB_ASSERT(target.n_slots() >= b_max && drafter.n_slots() >= b_max);
  // The plain run reads tokens L .. L + kPlainRunMaxSteps; T(b, k) reads L .. L + k - 1.
  const int64_t ahead = std::max<int64_t>(r.k_max, kPlainRunMaxSteps + 1);
  const int64_t L = std::min<int64_t>(r.context_len, target.max_ctx() - ahead - r.g_max - 1);
  SPECLAB_INPUT_CHECK(L >= 3, "batched cost profile: context limit ", target.max_ctx(),
                      " too small for rounds of up to ", r.k_max, " tokens");
  const int64_t prompt_len = std::clamp<int64_t>(r.prompt_len, 2, L);
  std::vector<int32_t> ctx(static_cast<size_t>(L + ahead));
  for (size_t i = 0; i < ctx.size(); i++) ctx[i] = r.context[i % r.context.size()];
  const std::vector<int32_t> at_l(ctx.begin(), ctx.begin() + L),
      at_l1(ctx.begin(), ctx.begin() + L - 1), at_l2(ctx.begin(), ctx.begin() + L - 2),
      prompt(ctx.begin(), ctx.begin() + prompt_len);

  // Every slot holds the context: one forward per slot (rows of one slot at a time keep the
  // prefill's activations small for many slots).
  std::vector<BatchRow> rows;
  auto fill_slot = [&](int32_t s) {
    target.truncate(s, 0);
    rows.clear();
    for (int64_t i = 0; i < L; i++) rows.push_back({s, ctx[static_cast<size_t>(i)]});
    target.forward_batch(rows, /*last_only=*/true);
  };
  for (int32_t s = 0; s < b_max; s++) fill_slot(s);

  const DraftStopRule no_stop;
  std::vector<DraftProposal> props;
  std::vector<SlotDraftRequest> reqs;
  // One batched proposal of n tokens for slots [0, b) from context c; its seconds.
  auto propose_s = [&](int b, const std::vector<int32_t>& c, int n) {
    reqs.clear();
    for (int s = 0; s < b; s++) {
      SlotDraftRequest q;
      q.slot = s;
      q.context = &c;
      q.k = n;
      q.key = RngKey{0x5eed, static_cast<uint64_t>(s), static_cast<uint64_t>(L), 0, 0};
      reqs.push_back(q);
    }
    const auto t0 = Clock::now();
    drafter.propose_batch(reqs, r.draft_sampling, no_stop, &props);
    return timing_since(t0);
  };
  // A one-row target forward on slot 0, undone: in the loop the draft runs right after the
  // target's verify, whose weights have displaced the draft's from the caches.
  auto target_between = [&] {
    const BatchRow row{0, ctx[static_cast<size_t>(L)]};
    target.forward_batch(&row, 1);
    target.truncate(0, L);
  };

  const size_t B = r.slots.size();
  // [B][K], [B][G + 1], [B] repetitions of each figure.
  std::vector<std::vector<std::vector<double>>> t_bk(
      B, std::vector<std::vector<double>>(static_cast<size_t>(r.k_max)));
  std::vector<std::vector<std::vector<double>>> d_bn(
      B, std::vector<std::vector<double>>(static_cast<size_t>(r.g_max + 1)));
  std::vector<std::vector<double>> two_b(B), plain_b(B);
  std::vector<double> prefill, first_call;
  for (int rep = 0; rep <= r.reps; rep++) {  // rep 0 warms every call and is not kept
    const bool keep = rep > 0;
    for (size_t bi = 0; bi < B; bi++) {
      const int b = r.slots[bi];
      for (int k = 1; k <= r.k_max; k++) {
        rows.clear();
        for (int32_t s = 0; s < b; s++)
          for (int i = 0; i < k; i++) rows.push_back({s, ctx[static_cast<size_t>(L + i)]});
        // A verify follows the round's batched proposal: time it after one.
        propose_s(b, at_l, 1);
        const auto t0 = Clock::now();
        target.forward_batch(rows, /*last_only=*/false);  // every row's logits, as a verify
        const double sec = timing_since(t0);
        for (int s = 0; s < b; s++) target.truncate(s, L);
        if (keep) t_bk[bi][static_cast<size_t>(k - 1)].push_back(sec);
      }
      // The plain loop's step of b rows follows its previous step one position on: time a
      // run of them after an untimed one (plain_run_goes_on, cost_profile.h) and keep their
      // mean (each slot's last row only, as that loop asks; the host's sampling between steps
      // is priced per request from the one-request profile).
      // One step of b rows at position L + i; its seconds.
      auto plain_step_s = [&](int64_t i) {
        rows.clear();
        for (int32_t s = 0; s < b; s++) rows.push_back({s, ctx[static_cast<size_t>(L + i)]});
        const auto t0 = Clock::now();
        target.forward_batch(rows, /*last_only=*/true);
        return timing_since(t0);
      };
      plain_step_s(0);
      double plain_sum = 0;
      int steps = 0;
      for (; plain_run_goes_on(steps, plain_sum); steps++) plain_sum += plain_step_s(1 + steps);
      for (int s = 0; s < b; s++) target.truncate(s, L);
      if (keep) plain_b[bi].push_back(plain_sum / steps);
      for (int n = 1; n <= r.g_max; n++) {
        propose_s(b, at_l1, 1);  // every slot now holds the context but its last token
        target_between();
        const double sec = propose_s(b, at_l, n);
        if (keep) d_bn[bi][static_cast<size_t>(n)].push_back(sec);
      }
      propose_s(b, at_l2, 1);  // two tokens behind: the state after a fully accepted round
      target_between();
      const double two = propose_s(b, at_l, 1);
      if (keep) two_b[bi].push_back(two);
    }
    // Admission of one request: the target prefills all prompt tokens but the last; the
    // drafter reads the prompt in its first proposal after a reset.
    target.truncate(0, 0);
    rows.clear();
    for (int64_t i = 0; i + 1 < prompt_len; i++)
      rows.push_back({0, prompt[static_cast<size_t>(i)]});
    auto t0 = Clock::now();
    target.forward_batch(rows, /*last_only=*/true);
    const double pre = timing_since(t0);
    fill_slot(0);
    drafter.reset_slot(0);
    const double first = propose_s(1, prompt, 1);
    if (keep) {
      prefill.push_back(pre);
      first_call.push_back(first);
    }
  }
  for (int32_t s = 0; s < b_max; s++) {
    target.truncate(s, 0);
    drafter.reset_slot(s);
  }

  BatchedCostProfile c;
  c.source = "measured";
  c.context_len = L;
  c.slots = r.slots;
  for (size_t bi = 0; bi < B; bi++) {
    std::vector<double> t, d{0.0};
    for (const auto& v : t_bk[bi]) t.push_back(timing_median(v));
    for (int n = 1; n <= r.g_max; n++) d.push_back(timing_median(d_bn[bi][static_cast<size_t>(n)]));
    c.target_s.push_back(t);
    c.draft_catchup_s.push_back(std::max(0.0, timing_median(two_b[bi]) - d[1]));
    c.draft_round_s.push_back(d);
    c.baseline_step_s.push_back(timing_median(plain_b[bi]));
  }
  const double extra_tokens = static_cast<double>(std::max<int64_t>(1, prompt_len - 1));
  c.target_prefill_s_per_token = timing_median(prefill) / extra_tokens;
  c.draft_prefill_s_per_token =
      std::max(0.0, timing_median(first_call) - c.draft_round_s[0][1]) / extra_tokens;
  if (spread) {
    *spread = BatchedCostSpread{};
    spread->reps = r.reps;
    for (size_t bi = 0; bi < B; bi++) {
      for (const auto& v : t_bk[bi]) timing_spread_add(&spread->target_s, v);
      timing_spread_add(&spread->draft_round_s, {0.0});
      for (int n = 1; n <= r.g_max; n++)
        timing_spread_add(&spread->draft_round_s, d_bn[bi][static_cast<size_t>(n)]);
      timing_spread_add(&spread->draft_two_behind_s, two_b[bi]);
      timing_spread_add(&spread->baseline_step_s, plain_b[bi]);
    }
    timing_spread_add(&spread->target_prefill_s, prefill);
    timing_spread_add(&spread->draft_first_call_s, first_call);
  }
  return c;
}

}  // namespace speclab
