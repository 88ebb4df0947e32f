// The batched cost profile (experiments/predict/batched_cost_profile.h) measured on the tiny
// zoo's runners for continuous batching: one figure per slot count, k and n, each positive, a
// spread per figure, the slots left empty; the file round trip (profile_io.h) keeps every
// figure, and a damaged file is refused naming the file and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/predict/batched_cost_profile.h"
#include "experiments/predict/profile_io.h"
#include "models/drafters/batch_drafter.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_model.h"

namespace speclab {
namespace {

const std::string kZoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";

BatchedCostRequest small_request() {
  BatchedCostRequest r;
  for (int32_t i = 0; i < 40; i++) r.context.push_back(5 + (i * 37) % 200);
  r.context_len = 24;
  r.prompt_len = 12;
  r.slots = {1, 2, 4};
  r.k_max = 3;
  r.g_max = 2;
  r.reps = 2;
  return r;
}

void expect_spread_ordered(const TimingSpread& s, size_t n, const char* what) {
  ASSERT_EQ(s.min.size(), n) << what;
  ASSERT_EQ(s.median.size(), n) << what;
  ASSERT_EQ(s.max.size(), n) << what;
  for (size_t i = 0; i < n; i++) {
    EXPECT_LE(s.min[i], s.median[i]) << what << " " << i;
    EXPECT_LE(s.median[i], s.max[i]) << what << " " << i;
  }
}

TEST(BatchedCostProfile, EveryFigureOfAModelDrafter) {
  const auto target = llama_load(kZoo + "tiny-target-5m");
  BatchedLlamaRunner runner(*target, 4, 64);
  auto drafter = batch_drafter_create(kZoo + "tiny-draft-2m", *target, 4, 64);
  BatchedCostSpread spread;
  const BatchedCostRequest req = small_request();
  const BatchedCostProfile p = batched_cost_profile_measure(runner, *drafter, req, &spread);
  EXPECT_EQ(p.source, "measured");
  EXPECT_EQ(p.context_len, 24);
  EXPECT_EQ(p.slots, req.slots);
  ASSERT_EQ(p.target_s.size(), 3u);
  ASSERT_EQ(p.draft_round_s.size(), 3u);
  ASSERT_EQ(p.draft_catchup_s.size(), 3u);
  for (size_t b = 0; b < 3; b++) {
    ASSERT_EQ(p.target_s[b].size(), 3u);
    for (double t : p.target_s[b]) EXPECT_GT(t, 0.0);
    ASSERT_EQ(p.draft_round_s[b].size(), 3u);
    EXPECT_EQ(p.draft_round_s[b][0], 0.0);
    EXPECT_GT(p.draft_round_s[b][1], 0.0);
    EXPECT_GT(p.draft_round_s[b][2], 0.0);
    EXPECT_GE(p.draft_catchup_s[b], 0.0);
  }
  EXPECT_GT(p.target_prefill_s_per_token, 0.0);
  EXPECT_GE(p.draft_prefill_s_per_token, 0.0);
  EXPECT_NO_THROW(batched_cost_profile_validate(p, "measured"));
  EXPECT_EQ(spread.reps, 2);
  expect_spread_ordered(spread.target_s, 9, "target_s");
  expect_spread_ordered(spread.draft_round_s, 9, "draft_round_s");
  expect_spread_ordered(spread.draft_two_behind_s, 3, "two behind");
  expect_spread_ordered(spread.target_prefill_s, 1, "prefill");
  expect_spread_ordered(spread.draft_first_call_s, 1, "first call");
  // The median over repetitions is the figure.
  EXPECT_EQ(spread.target_s.median[3 + 1], p.target_s[1][1]);
  ASSERT_EQ(p.baseline_step_s.size(), 3u);
  for (double t : p.baseline_step_s) EXPECT_GT(t, 0.0);
  expect_spread_ordered(spread.baseline_step_s, 3, "plain step");
  for (int64_t s = 0; s < 4; s++) EXPECT_EQ(runner.n_past(s), 0) << s;
}

TEST(BatchedCostProfile, ModelFreeDrafterPerSlot) {
  const auto target = llama_load(kZoo + "tiny-target-5m");
  BatchedLlamaRunner runner(*target, 2, 64);
  auto drafter = batch_drafter_create("lookup", *target, 2, 64);
  BatchedCostRequest req = small_request();
  req.slots = {1, 2};
  const BatchedCostProfile p = batched_cost_profile_measure(runner, *drafter, req);
  EXPECT_EQ(p.slots, req.slots);
  for (const auto& t : p.target_s)
    for (double x : t) EXPECT_GT(x, 0.0);
  // A lookup proposal reads no weights: far cheaper than a target forward.
  EXPECT_LT(p.draft_round_s[1][2], p.target_s[1][0]);
}

BatchedCostProfileRecord a_record() {
  BatchedCostProfileRecord r;
  BatchedCostProfile& c = r.cost;
  c.source = "measured";
  c.context_len = 40;
  c.slots = {1, 2};
  c.target_s = {{0.01, 0.012}, {0.015, 0.02}};
  c.draft_round_s = {{0, 0.002, 0.004}, {0, 0.003, 0.005}};
  c.draft_catchup_s = {0.0005, 0.0007};
  c.baseline_step_s = {0.009, 0.013};
  c.target_prefill_s_per_token = 0.001;
  c.draft_prefill_s_per_token = 0.0002;
  r.spread.reps = 3;
  for (double x : {0.01, 0.012, 0.015, 0.02}) timing_spread_add(&r.spread.target_s, {x, x * 1.1});
  for (double x : {0.0, 0.002, 0.004, 0.0, 0.003, 0.005})
    timing_spread_add(&r.spread.draft_round_s, {x, x * 1.2});
  for (double x : {0.0025, 0.0037}) timing_spread_add(&r.spread.draft_two_behind_s, {x});
  for (double x : {0.009, 0.013}) timing_spread_add(&r.spread.baseline_step_s, {x, x * 1.3});
  timing_spread_add(&r.spread.target_prefill_s, {0.011});
  timing_spread_add(&r.spread.draft_first_call_s, {0.0042});
  r.taken.utc = "2026-11-24T22:00:00Z";
  r.taken.load_before = 0.5;
  r.taken.git_commit = "abc1234";
  return r;
}

TEST(BatchedCostProfile, FileRoundTrip) {
  const BatchedCostProfileRecord r = a_record();
  const BatchedCostProfileRecord back =
      batched_cost_profile_record_from_json(batched_cost_profile_to_json(r), "f.json");
  EXPECT_EQ(back.cost.source, "reused");
  EXPECT_EQ(back.cost.origin, "f.json");
  EXPECT_EQ(back.cost.slots, r.cost.slots);
  EXPECT_EQ(back.cost.target_s, r.cost.target_s);
  EXPECT_EQ(back.cost.draft_round_s, r.cost.draft_round_s);
  EXPECT_EQ(back.cost.draft_catchup_s, r.cost.draft_catchup_s);
  EXPECT_EQ(back.cost.baseline_step_s, r.cost.baseline_step_s);
  EXPECT_EQ(back.spread.baseline_step_s.max, r.spread.baseline_step_s.max);
  EXPECT_EQ(back.cost.target_prefill_s_per_token, r.cost.target_prefill_s_per_token);
  EXPECT_EQ(back.cost.draft_prefill_s_per_token, r.cost.draft_prefill_s_per_token);
  EXPECT_EQ(back.cost.context_len, 40);
  EXPECT_EQ(back.spread.reps, 3);
  EXPECT_EQ(back.spread.target_s.max, r.spread.target_s.max);
  EXPECT_EQ(back.spread.draft_round_s.median, r.spread.draft_round_s.median);
  EXPECT_EQ(back.taken.utc, r.taken.utc);
  EXPECT_EQ(back.taken.git_commit, "abc1234");
}

TEST(BatchedCostProfile, DamagedFilesAreRefusedByField) {
  const nlohmann::json good = batched_cost_profile_to_json(a_record());
  struct Case {
    std::string what;
    nlohmann::json file;
    std::string expected;
  };
  std::vector<Case> cases;
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = std::move(v);
    return j;
  };
  cases.push_back({"format", with("format", "speclab-cost-profile"),
                   "f.json: expected a speclab batched cost profile"});
  cases.push_back({"version", with("version", 2), "f.json: version: expected 1"});
  cases.push_back({"slots", with("slots", {2, 1}), "f.json: slots: expected ascending slot"});
  cases.push_back({"slot 0", with("slots", {0, 2}), "f.json: slots: expected whole numbers >= 1"});
  cases.push_back({"rows", with("target_s", {{0.01, 0.012}}),
                   "f.json: target_s, draft_round_s and draft_catchup_s need one entry per slot"});
  cases.push_back({"ragged", with("target_s", {{0.01, 0.012}, {0.015}}),
                   "f.json: target_s[1]: expected 2 figures"});
  cases.push_back({"negative", with("draft_catchup_s", {0.0005, -1}),
                   "f.json: draft_catchup_s[1]: expected finite seconds >= 0"});
  cases.push_back({"not a list", with("draft_round_s", {1, 2}),
                   "f.json: draft_round_s[0]: expected a list of seconds"});
  cases.push_back({"plain steps", with("baseline_step_s", {0.009}),
                   "f.json: baseline_step_s: expected one entry per slot count (2) or none"});
  cases.push_back({"plain step 0", with("baseline_step_s", {0.009, 0}),
                   "f.json: baseline_step_s[1]: expected finite seconds > 0"});
  nlohmann::json no_prefill = good;
  no_prefill.erase("target_prefill_s_per_token");
  cases.push_back({"missing", no_prefill, "f.json: target_prefill_s_per_token: missing"});
  nlohmann::json short_spread = good;
  short_spread["spread"]["target_s"]["min"] = {0.01};
  cases.push_back({"spread", short_spread, "f.json: spread.target_s: expected 4 entries"});
  for (const Case& c : cases) {
    try {
      batched_cost_profile_record_from_json(c.file, "f.json");
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos)
          << c.what << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace speclab
