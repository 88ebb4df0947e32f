#include "experiments/measure/time_parts.h"

namespace speclab {

void TimePartsTally::add_baseline(const GenerationResult& g) {
  base_tokens += static_cast<int64_t>(g.tokens.size());
  base_decode_s += g.decode_s;
  base_forward_s += g.step_forward_s;
  base_head_s += g.step_head_s;
  base_standardize_s += g.step_standardize_s;
  base_draw_s += g.step_draw_s;
  base_head_known = base_head_known && g.step_head_known;
}

void TimePartsTally::add_speculative(const GenerationResult& g) {
  spec_decode_s += g.decode_s;
  requests += g.rounds.empty() ? 0 : 1;
  bool after_full = false;  // the previous round of this request accepted all it drafted
  for (const RoundRecord& r : g.rounds) {
    rounds++;
    draft_s += r.draft_s;
    draft_forward_s += r.draft_forward_s;
    verify_s += r.verify_s;
    sample_s += r.sample_s;
    standardize_s += r.standardize_s;
    if (r.verify_head_s >= 0) verify_head_s += r.verify_head_s;
    verify_head_known = verify_head_known && r.verify_head_s >= 0;
    chains = chains && r.tree_nodes == 0;
    rounds_on_device += r.verified_on_device ? 1 : 0;
    priceable = priceable && r.tree_nodes == 0;
    const size_t g_drafted = static_cast<size_t>(r.n_draft);
    if (rounds_by_draft.size() <= g_drafted) rounds_by_draft.resize(g_drafted + 1, 0);
    rounds_by_draft[g_drafted]++;
    catchups += after_full;
    after_full = r.n_draft > 0 && r.n_accepted == r.n_draft;
  }
}

void time_parts_put(const TimePartsTally& t, const CostProfile* cost, const CostProfileParts* parts,
                    ResultRow* row) {
  if (t.base_tokens > 0) {
    const double n = static_cast<double>(t.base_tokens);
    row->step_layers_s = (t.base_forward_s - (t.base_head_known ? t.base_head_s : 0)) / n;
    if (t.base_head_known) row->step_head_s = t.base_head_s / n;
    row->step_standardize_s = t.base_standardize_s / n;
    row->step_draw_s = t.base_draw_s / n;
    row->step_other_s =
        (t.base_decode_s - t.base_forward_s - t.base_standardize_s - t.base_draw_s) / n;
  }
  if (t.rounds > 0) {
    const double n = static_cast<double>(t.rounds);
    if (t.chains) {
      row->round_draft_forward_s = t.draft_forward_s / n;
      row->round_draft_other_s = (t.draft_s - t.draft_forward_s) / n;
    }
    row->round_verify_layers_s = (t.verify_s - (t.verify_head_known ? t.verify_head_s : 0)) / n;
    if (t.verify_head_known) row->round_verify_head_s = t.verify_head_s / n;
    row->round_standardize_s = t.standardize_s / n;
    row->round_accept_s = (t.sample_s - t.standardize_s) / n;
    row->round_other_s = (t.spec_decode_s - t.draft_s - t.verify_s - t.sample_s) / n;
  }
  if (cost == nullptr || parts == nullptr || parts->empty()) return;
  const bool head = !parts->target_head_s.empty();
  // The plain step as the profile times it (cost_profile.h): the plain step's forward, host(1).
  row->profile_step_layers_s = cost->plain_step_s() - (head ? parts->baseline_step_head_s : 0);
  if (head) row->profile_step_head_s = parts->baseline_step_head_s;
  row->profile_step_standardize_s = parts->host_standardize_s[0];
  row->profile_step_draw_s = cost->host_round_s[0] - parts->host_standardize_s[0];
  // The run's rounds, each priced as the profile prices a round drafting g and verifying g + 1.
  if (t.rounds == 0 || !t.priceable) return;
  const size_t g_max = t.rounds_by_draft.size() - 1;
  if (g_max >= cost->draft_round_s.size() || g_max + 1 > cost->target_s.size()) return;
  // Rounds verified on the target's device: the run's verify_s is the whole device round
  // (forward, standardize, verify), priced by the profile's timing of that round.
  const bool on_device = t.rounds_on_device > 0;
  if (on_device && (t.rounds_on_device != t.rounds || cost->verify_device_s.size() < g_max + 1))
    return;  // a mix of host and device rounds, or a profile without the device's round
  double dfwd = 0, dother = 0, layers = 0, vhead = 0, stdz = 0, accept = 0;
  for (size_t g = 0; g <= g_max; g++) {
    const double w = static_cast<double>(t.rounds_by_draft[g]);
    dfwd += w * parts->draft_forward_s[g];
    dother += w * (cost->draft_round_s[g] - parts->draft_forward_s[g]);
    if (on_device) {
      layers += w * cost->verify_device_s[g];
      continue;
    }
    layers += w * (cost->target_s[g] - (head ? parts->target_head_s[g] : 0));
    if (head) vhead += w * parts->target_head_s[g];
    stdz += w * parts->host_standardize_s[g];
    accept += w * (cost->host_round_s[g] - parts->host_standardize_s[g]);
  }
  // Catch-ups and each request's prefill of its prompt: draft forwards for a draft model, the
  // rest of the drafting for a model-free drafter (no forward in any of its profiled rounds).
  bool forwards = false;
  for (double s : parts->draft_forward_s) forwards = forwards || s > 0;
  (forwards ? dfwd : dother) += static_cast<double>(t.catchups) * cost->draft_catchup_s +
                                static_cast<double>(t.requests) * cost->draft_prefill_s;
  const double n = static_cast<double>(t.rounds);
  row->profile_round_draft_forward_s = dfwd / n;
  row->profile_round_draft_other_s = dother / n;
  row->profile_round_verify_layers_s = layers / n;
  if (head && !on_device) row->profile_round_verify_head_s = vhead / n;
  row->profile_round_standardize_s = stdz / n;
  row->profile_round_accept_s = accept / n;
}

std::optional<double> time_parts_profile_speedup_at_rounds(const ResultRow& row,
                                                           double tokens_per_round) {
  if (tokens_per_round <= 0 || !row.profile_step_layers_s || !row.profile_step_standardize_s ||
      !row.profile_step_draw_s || !row.profile_round_draft_forward_s ||
      !row.profile_round_draft_other_s || !row.profile_round_verify_layers_s ||
      !row.profile_round_standardize_s || !row.profile_round_accept_s)
    return std::nullopt;
  const double step = *row.profile_step_layers_s + row.profile_step_head_s.value_or(0) +
                      *row.profile_step_standardize_s + *row.profile_step_draw_s;
  const double round = *row.profile_round_draft_forward_s + *row.profile_round_draft_other_s +
                       *row.profile_round_verify_layers_s +
                       row.profile_round_verify_head_s.value_or(0) +
                       *row.profile_round_standardize_s + *row.profile_round_accept_s;
  if (round <= 0) return std::nullopt;
  return step * tokens_per_round / round;
}

}  // namespace speclab
