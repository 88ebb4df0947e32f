// Where a plain step and a round go (experiments/measure/time_parts.h): the runner splits its
// forward into layers and head, the decoders time every part where it runs, the cost profile
// times the same parts in isolation, its file keeps them, and a run's rounds are priced part
// by part as the profile prices rounds.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/measure/time_parts.h"
#include "experiments/predict/cost_profile.h"
#include "experiments/predict/profile_io.h"
#include "experiments/results/time_parts_table.h"
#include "models/decode/autoregressive.h"
#include "models/decode/speculative_decoder.h"
#include "tests/decode/decode_test_models.h"

namespace speclab {
namespace {

constexpr int64_t kVocab = 64;

TEST(TimeParts, TheRunnerSplitsEachForwardIntoLayersAndHead) {
  decode_test::Pair pair(kVocab);
  for (const bool team : {true, false}) {
    LlamaRunner r(*pair.target, 0);
    r.set_step_team(team);
    EXPECT_FALSE(ForwardSplit{}.known()) << "unknown by default";
    const std::vector<int32_t> toks = {1, 2, 3, 4, 5};
    for (const int64_t n : {int64_t{5}, int64_t{1}, int64_t{3}}) {
      const auto t0 = std::chrono::steady_clock::now();
      r.forward(toks.data(), n);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const ForwardSplit s = r.last_forward_split();
      ASSERT_TRUE(s.known()) << (team ? "team" : "per call");
      EXPECT_GT(s.layers_s, 0.0);
      EXPECT_GT(s.head_s, 0.0);
      EXPECT_LE(s.layers_s + s.head_s, wall) << "the parts lie inside the call";
    }
  }
}

TEST(TimeParts, TheDecodersTimeEveryPartInsideTheirOwnTotals) {
  decode_test::Pair pair(kVocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  GenerationRequest req;
  req.prompt = decode_test::prompts(kVocab)[3];
  req.max_new_tokens = 24;
  req.sampling.temperature = 1.0f;
  const GenerationResult base = generate_autoregressive(target, req);
  EXPECT_TRUE(base.step_head_known);
  EXPECT_GT(base.step_forward_s, base.step_head_s);
  EXPECT_GT(base.step_head_s, 0.0);
  EXPECT_GT(base.step_standardize_s, 0.0);
  EXPECT_GT(base.step_draw_s, 0.0);
  EXPECT_LE(base.step_forward_s + base.step_standardize_s + base.step_draw_s, base.decode_s);

  SpeculativeConfig spec;
  spec.gamma = 3;
  spec.draft_sampling = req.sampling;
  const GenerationResult out = generate_speculative(target, drafter, req, spec);
  ASSERT_FALSE(out.rounds.empty());
  double parts = 0;
  for (const RoundRecord& r : out.rounds) {
    EXPECT_GT(r.draft_forward_s, 0.0);
    EXPECT_LE(r.draft_forward_s, r.draft_s);
    EXPECT_GT(r.verify_head_s, 0.0);
    EXPECT_LT(r.verify_head_s, r.verify_s);
    EXPECT_GT(r.standardize_s, 0.0);
    EXPECT_LE(r.standardize_s, r.sample_s);
    parts += r.draft_s + r.verify_s + r.sample_s;
  }
  EXPECT_LE(parts, out.decode_s);

  // The tally puts them per token and per round; the rest of each loop is its bookkeeping.
  TimePartsTally t;
  t.add_baseline(base);
  t.add_speculative(out);
  ResultRow row;
  time_parts_put(t, nullptr, nullptr, &row);
  const double n = static_cast<double>(base.tokens.size());
  EXPECT_DOUBLE_EQ(*row.step_layers_s + *row.step_head_s, base.step_forward_s / n);
  EXPECT_NEAR(*row.step_layers_s + *row.step_head_s + *row.step_standardize_s + *row.step_draw_s +
                  *row.step_other_s,
              base.decode_s / n, 1e-12);
  EXPECT_GE(*row.step_other_s, 0.0);
  const double rounds = static_cast<double>(out.rounds.size());
  EXPECT_NEAR(*row.round_draft_forward_s + *row.round_draft_other_s + *row.round_verify_layers_s +
                  *row.round_verify_head_s + *row.round_standardize_s + *row.round_accept_s +
                  *row.round_other_s,
              out.decode_s / rounds, 1e-12);
  EXPECT_GE(*row.round_other_s, 0.0);
  EXPECT_FALSE(row.profile_step_layers_s) << "no profile: nothing priced";
}

// A profile whose every figure is distinct, with parts.
CostProfile a_cost() {
  CostProfile c;
  c.source = "measured";
  c.context_len = 40;
  c.target_s = {0.100, 0.110, 0.120, 0.130};
  c.draft_round_s = {0.0, 0.030, 0.061, 0.092};
  c.draft_step_s = 0.030;
  c.draft_catchup_s = 0.007;
  c.draft_prefill_s = 0.021;
  c.host_round_s = {0.0010, 0.0021, 0.0032, 0.0043};
  c.baseline_step_s = 0.098;
  return c;
}
CostProfileParts a_parts() {
  CostProfileParts p;
  p.target_head_s = {0.010, 0.011, 0.012, 0.013};
  p.baseline_step_head_s = 0.0099;
  p.host_standardize_s = {0.0006, 0.0012, 0.0018, 0.0024};
  p.draft_forward_s = {0.0, 0.028, 0.057, 0.086};
  return p;
}

TEST(TimeParts, TheProfilePricesTheRunsOwnRoundsPartByPart) {
  // Four rounds of one request: one drafted nothing, two drafted 1, one drafted 3; two followed a
  // round that accepted all it drafted.
  TimePartsTally t;
  t.rounds = 4;
  t.rounds_by_draft = {1, 2, 0, 1};
  t.catchups = 2;
  t.requests = 1;
  ResultRow row;
  const CostProfile c = a_cost();
  const CostProfileParts p = a_parts();
  time_parts_put(t, &c, &p, &row);
  EXPECT_DOUBLE_EQ(*row.profile_step_layers_s, 0.098 - 0.0099);
  EXPECT_DOUBLE_EQ(*row.profile_step_head_s, 0.0099);
  EXPECT_DOUBLE_EQ(*row.profile_step_standardize_s, 0.0006);
  EXPECT_DOUBLE_EQ(*row.profile_step_draw_s, 0.0010 - 0.0006);
  EXPECT_DOUBLE_EQ(*row.profile_round_draft_forward_s,
                   (2 * 0.028 + 0.086 + 2 * 0.007 + c.draft_prefill_s) / 4);
  EXPECT_DOUBLE_EQ(*row.profile_round_draft_other_s, (2 * (0.030 - 0.028) + (0.092 - 0.086)) / 4);
  EXPECT_DOUBLE_EQ(*row.profile_round_verify_layers_s,
                   ((0.100 - 0.010) + 2 * (0.110 - 0.011) + (0.130 - 0.013)) / 4);
  EXPECT_DOUBLE_EQ(*row.profile_round_verify_head_s, (0.010 + 2 * 0.011 + 0.013) / 4);
  EXPECT_DOUBLE_EQ(*row.profile_round_standardize_s, (0.0006 + 2 * 0.0012 + 0.0024) / 4);
  EXPECT_DOUBLE_EQ(*row.profile_round_accept_s,
                   ((0.0010 - 0.0006) + 2 * (0.0021 - 0.0012) + (0.0043 - 0.0024)) / 4);
  // The parts of the profile's round add up to what the predictor prices
  // (core/speedup_prediction.h: round_s(g) = draft_round_s[g] + T(g + 1) + host(g + 1), plus
  // a catch-up after a fully accepted round, plus the draft's prefill per request).
  const double whole =
      (c.draft_round_s[0] + c.target_s[0] + c.host_round_s[0] +
       2 * (c.draft_round_s[1] + c.target_s[1] + c.host_round_s[1]) + c.draft_round_s[3] +
       c.target_s[3] + c.host_round_s[3] + 2 * c.draft_catchup_s + c.draft_prefill_s) /
      4;
  EXPECT_NEAR(*row.profile_round_draft_forward_s + *row.profile_round_draft_other_s +
                  *row.profile_round_verify_layers_s + *row.profile_round_verify_head_s +
                  *row.profile_round_standardize_s + *row.profile_round_accept_s,
              whole, 1e-15);

  // The profile's speedup at these rounds: its plain step (forward + host(1)) times the run's
  // tokens per round over the whole price of a round; nothing without a positive token count.
  EXPECT_NEAR(*time_parts_profile_speedup_at_rounds(row, 1.75),
              (c.baseline_step_s + c.host_round_s[0]) * 1.75 / whole, 1e-12);
  EXPECT_FALSE(time_parts_profile_speedup_at_rounds(row, 0.0));
  EXPECT_FALSE(time_parts_profile_speedup_at_rounds(ResultRow{}, 1.75)) << "no parts: none";

  // A model-free drafter's catch-ups and prefills are the rest of its drafting, not forwards.
  CostProfileParts lookup = p;
  lookup.draft_forward_s = {0, 0, 0, 0};
  ResultRow rl;
  time_parts_put(t, &c, &lookup, &rl);
  EXPECT_EQ(*rl.profile_round_draft_forward_s, 0.0);
  EXPECT_DOUBLE_EQ(*rl.profile_round_draft_other_s,
                   (0.030 * 2 + 0.092 + 2 * 0.007 + c.draft_prefill_s) / 4);

  // Rounds beyond what the profile covers, or verified on a device, are not priced.
  TimePartsTally beyond = t;
  beyond.rounds_by_draft = {0, 0, 0, 0, 4};
  ResultRow r2;
  time_parts_put(beyond, &c, &p, &r2);
  EXPECT_TRUE(r2.profile_step_layers_s);
  EXPECT_FALSE(r2.profile_round_verify_layers_s);
  TimePartsTally device = t;
  device.priceable = false;
  ResultRow r3;
  time_parts_put(device, &c, &p, &r3);
  EXPECT_FALSE(r3.profile_round_verify_layers_s);
}

TEST(TimeParts, TheCostProfileTimesTheSamePartsInIsolation) {
  decode_test::Pair pair(kVocab);
  LlamaRunner target(*pair.target, 256);
  ModelDrafter drafter(*pair.other, "other", 256);
  CostProfileRequest req;
  req.context = decode_test::prompts(kVocab)[5];
  req.context_len = 24;
  req.prompt_len = 8;
  req.k_max = 4;
  req.g_max = 3;
  req.reps = 3;
  req.target_sampling.temperature = 1.0f;
  req.draft_sampling = req.target_sampling;
  CostProfileParts parts;
  const CostProfile c = cost_profile_measure(target, drafter, req, nullptr, &parts);
  ASSERT_EQ(parts.target_head_s.size(), c.target_s.size());
  ASSERT_EQ(parts.host_standardize_s.size(), c.host_round_s.size());
  ASSERT_EQ(parts.draft_forward_s.size(), c.draft_round_s.size());
  for (size_t k = 0; k < c.target_s.size(); k++) {
    EXPECT_GT(parts.target_head_s[k], 0.0);
    EXPECT_LE(parts.target_head_s[k], c.target_s[k]);  // medians of parts of each repetition
    EXPECT_GT(parts.host_standardize_s[k], 0.0);
    EXPECT_LE(parts.host_standardize_s[k], c.host_round_s[k]);
  }
  EXPECT_EQ(parts.draft_forward_s[0], 0.0);
  for (size_t n = 1; n < c.draft_round_s.size(); n++) {
    EXPECT_GT(parts.draft_forward_s[n], 0.0);
    EXPECT_LE(parts.draft_forward_s[n], c.draft_round_s[n]);
  }
  EXPECT_GT(parts.baseline_step_head_s, 0.0);
  EXPECT_LE(parts.baseline_step_head_s, c.baseline_step_s);
}

TEST(TimeParts, TheProfileFileKeepsThePartsAndRefusesBadOnes) {
  CostProfileRecord r;
  r.cost = a_cost();
  r.parts = a_parts();
  const nlohmann::json j = nlohmann::json::parse(cost_profile_to_json(r).dump());
  const CostProfileRecord b = cost_profile_record_from_json(j, "f.json");
  EXPECT_EQ(b.parts.target_head_s, r.parts.target_head_s);
  EXPECT_EQ(b.parts.baseline_step_head_s, r.parts.baseline_step_head_s);
  EXPECT_EQ(b.parts.host_standardize_s, r.parts.host_standardize_s);
  EXPECT_EQ(b.parts.draft_forward_s, r.parts.draft_forward_s);
  // A profile without parts (older files) reads as before and is written without them.
  nlohmann::json old = j;
  old.erase("parts");
  const CostProfileRecord o = cost_profile_record_from_json(old, "old.json");
  EXPECT_TRUE(o.parts.empty());
  EXPECT_FALSE(cost_profile_to_json(o).contains("parts"));

  auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& want) {
    nlohmann::json bad = j;
    edit(bad);
    try {
      cost_profile_record_from_json(bad, "f.json");
      ADD_FAILURE() << "accepted: " << want;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  refused([](nlohmann::json& x) { x["parts"] = 3; }, "f.json: parts: expected an object");
  refused(
      [](nlohmann::json& x) {
        x["parts"]["draft_forward_s"] = {0.0, 0.01};
      },
      "f.json: parts.draft_forward_s: expected 4 entries");
  refused([](nlohmann::json& x) { x["parts"]["target_head_s"][2] = 0.5; },
          "f.json: parts.target_head_s[2]: expected finite seconds >= 0 and at most");
  refused([](nlohmann::json& x) { x["parts"]["host_standardize_s"][0] = -1; },
          "f.json: parts.host_standardize_s[0]");
  refused([](nlohmann::json& x) { x["parts"].erase("host_standardize_s"); },
          "host_standardize_s: expected a list of numbers");
  refused([](nlohmann::json& x) { x["parts"]["baseline_step_head_s"] = 1.0; },
          "f.json: parts.baseline_step_head_s: expected seconds >= 0 and at most");
}

TEST(TimeParts, TablesShowEachPartInTheLoopBesideTheProfile) {
  ResultRow a, b, bare;
  a.cell.drafter = b.cell.drafter = bare.cell.drafter = "draft-1b";
  a.cell.gamma = 1;
  b.cell.gamma = 4;
  a.cell.synthetic_acceptance = {0.6};
  b.cell.synthetic_acceptance = {0.9};
  for (ResultRow* r : {&a, &b}) {
    r->step_layers_s = 0.300;
    r->step_head_s = 0.030;
    r->step_standardize_s = 0.0002;
    r->step_draw_s = 0.0001;
    r->step_other_s = 0.00001;
    r->profile_step_layers_s = 0.310;
    r->round_draft_forward_s = 0.140;
    r->round_draft_other_s = 0.002;
    r->round_verify_layers_s = 0.350;
    r->round_verify_head_s = 0.040;
    r->round_standardize_s = 0.0004;
    r->round_accept_s = 0.0001;
    r->round_other_s = 0.00002;
    r->profile_round_draft_forward_s = 0.125;
  }
  const std::vector<Table> t = time_parts_tables({&a, &b, &bare}, /*machine=*/false);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "step_parts");
  EXPECT_EQ(t[1].name, "round_parts");
  ASSERT_EQ(t[1].rows.size(), 2u) << "a row without the loop's parts is left out";
  // Named by the axes that vary (and the drafter and gamma), then each part as loop / profile.
  EXPECT_EQ(t[1].headers[0], "draft");
  EXPECT_EQ(t[1].headers[1], "synthetic");
  EXPECT_EQ(t[1].headers[2], "gamma");
  EXPECT_EQ(t[1].rows[1][2], "4");
  EXPECT_EQ(t[1].rows[1][3], "140 / 125");  // draft forward, ms
  EXPECT_EQ(t[1].rows[1][4], "2 / -");      // the profile's part unknown
  EXPECT_EQ(t[1].rows[1].back(), "0.02") << "other: the loop's alone";
  EXPECT_EQ(t[0].rows[0][3], "300 / 310");
  // For machines: seconds, loop and profile in columns of their own.
  const std::vector<Table> m = time_parts_tables({&a, &b}, /*machine=*/true);
  EXPECT_EQ(m[1].headers[3], "draft forward loop");
  EXPECT_EQ(m[1].headers[4], "draft forward profile");
  EXPECT_EQ(m[1].rows[0][3], "0.14");
  EXPECT_EQ(m[1].rows[0][4], "0.125");
  EXPECT_TRUE(time_parts_tables({&bare}, false).empty());
}

}  // namespace
}  // namespace speclab
