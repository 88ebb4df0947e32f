#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/error.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

// Line numbers below refer to this text (line 1 = name).
const char* kBase =
    "name: t\n"                         // 1
    "question: \"Does it load?\"\n"     // 2
    "target: synthetic:llama-3.2-1b\n"  // 3
    "drafters:\n"                       // 4
    "  a: \"lookup:n=3\"\n"             // 5
    "  b: models/zoo/x\n"               // 6
    "prompts:\n"                        // 7
    "  file: p.jsonl\n"                 // 8
    "sweep:\n"                          // 9
    "  drafter: [a, b]\n"               // 10
    "  gamma: [1, 2, 4]\n"              // 11
    "  temperature: [0, 1]\n";          // 12

struct ConfigTest : ::testing::Test {
  ScratchDir dir;
  std::string write(const std::string& text) { return dir.write("c.yaml", text); }
  // The InputError message of loading `text`, or "" if it loads.
  std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
    const std::string path = write(text);
    try {
      experiment_config_load(path, overrides);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string f() const { return dir.file("c.yaml"); }
  std::string replaced(const std::string& from, const std::string& to) {
    std::string s = kBase;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  }
};

TEST_F(ConfigTest, LoadsTypedValuesAndDefaults) {
  const ExperimentConfig c = experiment_config_load(write(kBase));
  EXPECT_EQ(c.name, "t");
  EXPECT_EQ(c.question, "Does it load?");
  ASSERT_TRUE(c.target.has_value());
  EXPECT_EQ(c.target->path, "synthetic:llama-3.2-1b");
  ASSERT_EQ(c.drafters.size(), 2u);
  EXPECT_EQ(c.drafters[0].name, "a");
  EXPECT_EQ(c.drafters[0].ref.path, "lookup:n=3");
  EXPECT_EQ(c.drafters[1].name, "b");
  ASSERT_TRUE(c.sweep.has_value());
  EXPECT_EQ(c.sweep->gamma(), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(c.sweep->list<double>("temperature"), (std::vector<double>{0, 1}));
  EXPECT_EQ(c.sweep->list<double>("top_p"), (std::vector<double>{1.0}));
  EXPECT_EQ(c.sweep->list<std::string>("gamma_policy"), (std::vector<std::string>{"fixed"}));
  ASSERT_EQ(c.sweep->values("draft_temperature").size(), 1u);
  EXPECT_EQ(c.sweep->values("draft_temperature")[0], "same");
  EXPECT_EQ(c.generation.max_new_tokens, 64);
  EXPECT_EQ(c.generation.ctx, 1024);
  EXPECT_TRUE(c.measure.baseline);
  EXPECT_EQ(c.measure.cost_curve_max_k, 5);  // max gamma + 1
  EXPECT_EQ(c.prompts->limit, 0);
  EXPECT_FALSE(c.simulate.has_value());
  EXPECT_EQ(c.gate.sigmas, 4.0);
  EXPECT_EQ(c.config_hash().size(), 16u);
}

TEST_F(ConfigTest, ScalarsStandForOneElementListsAndSameIsAWord) {
  const ExperimentConfig c = experiment_config_load(
      write(std::string(kBase) + "  top_k: 40\n  draft_temperature: [same, 0.5]\n"));
  EXPECT_EQ(c.sweep->list<int>("top_k"), (std::vector<int>{40}));
  ASSERT_EQ(c.sweep->values("draft_temperature").size(), 2u);
  EXPECT_EQ(c.sweep->values("draft_temperature")[0], "same");
  EXPECT_EQ(c.sweep->values("draft_temperature")[1], 0.5);
}

// Each bad input: one line naming file:line, the YAML path, and what was expected.
TEST_F(ConfigTest, UnknownKeyNamesItsPathAndTheAllowedKeys) {
  EXPECT_EQ(error_of(std::string(kBase) + "colour: red\n"),
            f() +
                ":13: colour: unknown key (expected one of: name, question, target, drafters, "
                "prompts, generation, measure, sweep, simulate, gate)");
  EXPECT_EQ(error_of(replaced("  gamma:", "  gama:")),
            f() +
                ":11: sweep.gama: unknown key (expected one of: drafter, gamma, temperature, "
                "draft_temperature, top_k, top_p, lenience, gamma_policy, p_min, "
                "synthetic_acceptance, tree, concurrency, exclude)");
}

TEST_F(ConfigTest, MissingRequiredKey) {
  EXPECT_EQ(error_of(replaced("name: t\n", "")), f() + ":1: name: required key is missing");
  EXPECT_EQ(error_of(replaced("  file: p.jsonl\n", "  limit: 2\n")),
            f() + ":8: prompts.file: required key is missing");
  EXPECT_EQ(error_of(replaced("target: synthetic:llama-3.2-1b\n", "")),
            f() +
                ":1: target: required key is missing (only simulator-only configs, with "
                "`simulate`, have no target)");
  EXPECT_EQ(error_of(replaced("prompts:\n  file: p.jsonl\n", "")),
            f() +
                ":1: prompts: required key is missing (only measure.cost_only configs run "
                "without prompts)");
}

TEST_F(ConfigTest, WrongType) {
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, two, 4]")),
            f() + ":11: sweep.gamma[1]: expected an integer, got 'two'");
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, \"2\", 4]")),
            f() + ":11: sweep.gamma[1]: expected an integer, got '2'");
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, 2.5]")),
            f() + ":11: sweep.gamma[1]: expected an integer, got '2.5'");
  // A scalar tagged as a string is one, as a quoted one is; the core schema's own number tags
  // read as numbers.
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, !!str 2]")),
            f() + ":11: sweep.gamma[1]: expected an integer, got '2' (tagged !!str)");
  EXPECT_EQ(error_of(replaced("[0, 1]", "[0, !!str 1]")),
            f() + ":12: sweep.temperature[1]: expected a finite number, got '1' (tagged !!str)");
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, !custom 2]")),
            f() + ":11: sweep.gamma[1]: expected an integer, got '2' (tagged !custom)");
  EXPECT_EQ(experiment_config_load(write(replaced("[1, 2, 4]", "[1, !!int 2, 4]")))
                .sweep->axes.at("gamma")
                .size(),
            3u);
  EXPECT_EQ(error_of(replaced("[0, 1]", "{a: 1}")),
            f() + ":12: sweep.temperature: expected a list or a single value, got a mapping");
  EXPECT_EQ(error_of(replaced("[0, 1]", "[0, .inf]")),
            f() + ":12: sweep.temperature[1]: expected a finite number, got '.inf'");
  EXPECT_EQ(error_of(std::string(kBase) + "generation: 5\n"),
            f() + ":13: generation: expected a mapping, got '5'");
  EXPECT_EQ(error_of(replaced("  file: p.jsonl\n", "  file: p.jsonl\n  chat_template: yes\n")),
            f() + ":9: prompts.chat_template: expected true or false, got 'yes'");
  EXPECT_EQ(error_of(std::string(kBase) + "  draft_temperature: [hot]\n"),
            f() + ":13: sweep.draft_temperature[0]: expected \"same\" or a number, got 'hot'");
  EXPECT_EQ(error_of(replaced("drafters:\n  a: \"lookup:n=3\"\n  b: models/zoo/x\n",
                              "drafters: [a, b]\n")),
            f() + ":4: drafters: expected a mapping name -> drafter spec, got a list");
  EXPECT_EQ(error_of(replaced("name: t", "name: [t]")),
            f() + ":1: name: expected a string, got a list");
}

TEST_F(ConfigTest, OutOfRange) {
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, 2, 100]")),
            f() + ":11: sweep.gamma[2]: expected an integer in 1..64, got 100");
  EXPECT_EQ(error_of(replaced("[0, 1]", "[-1]")),
            f() + ":12: sweep.temperature[0]: expected a number >= 0 (0 = greedy), got -1");
  EXPECT_EQ(error_of(std::string(kBase) + "  top_p: [0.9, 0]\n"),
            f() + ":13: sweep.top_p[1]: expected a number in (0, 1], got 0");
  EXPECT_EQ(error_of(std::string(kBase) + "  lenience: 1.5\n"),
            f() + ":13: sweep.lenience[0]: expected a number in (0, 1], got 1.5");
  EXPECT_EQ(error_of(std::string(kBase) + "  top_k: -1\n"),
            f() + ":13: sweep.top_k[0]: expected an integer >= 0 (0 = off), got -1");
  EXPECT_EQ(error_of(std::string(kBase) + "  p_min: [2]\n"),
            f() + ":13: sweep.p_min[0]: expected a number in [0, 1], got 2");
  EXPECT_EQ(error_of(std::string(kBase) + "  gamma_policy: [fixed, greedy]\n"),
            f() +
                ":13: sweep.gamma_policy[1]: expected one of fixed | heuristic | entropy | "
                "predicted, got "
                "'greedy'");
  EXPECT_EQ(error_of(std::string(kBase) + "  draft_temperature: -2\n"),
            f() + ":13: sweep.draft_temperature[0]: expected \"same\" or a number >= 0, got -2");
  EXPECT_EQ(error_of(std::string(kBase) + "generation:\n  max_new_tokens: 0\n"),
            f() + ":14: generation.max_new_tokens: expected an integer in 1..1048576, got 0");
  EXPECT_EQ(error_of(std::string(kBase) + "generation:\n  max_new_tokens: 64\n  ctx: 64\n"),
            f() +
                ":15: generation.ctx: expected an integer > generation.max_new_tokens (64), "
                "got 64");
  EXPECT_EQ(error_of(std::string(kBase) + "generation:\n  seed: -3\n"),
            f() + ":14: generation.seed: expected an integer >= 0, got -3");
  EXPECT_EQ(error_of(std::string(kBase) + "generation:\n  repeats: 0\n"),
            f() + ":14: generation.repeats: expected an integer in 1..1000, got 0");
  EXPECT_EQ(error_of(std::string(kBase) + "generation:\n  warmup: -1\n"),
            f() + ":14: generation.warmup: expected an integer in 0..1000, got -1");
  EXPECT_EQ(
      error_of(std::string(kBase) + "generation:\n  threads: -1\n"),
      f() + ":14: generation.threads: expected an integer in 0..1024 (0 = all cores), got -1");
  EXPECT_EQ(error_of(std::string(kBase) + "generation:\n  ctx: 99999999999\n"),
            f() + ":14: generation.ctx: expected an integer, got 99999999999 (too large)");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  confidence: 1\n"),
            f() + ":14: measure.confidence: expected a number in (0, 1), got 1");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  bootstrap_resamples: 0\n"),
            f() + ":14: measure.bootstrap_resamples: expected an integer in 1..1000000, got 0");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  cost_curve_max_k: 3\n"),
            f() +
                ":14: measure.cost_curve_max_k: expected at least max(sweep.gamma) + 1 = 5 (the "
                "speedup prediction needs T(gamma + 1)), got 3");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  cost_curve_max_k: 99\n"),
            f() + ":14: measure.cost_curve_max_k: expected an integer in 1..65, got 99");
  EXPECT_EQ(error_of(std::string(kBase) + "gate:\n  sigmas: 0\n"),
            f() + ":14: gate.sigmas: expected a number > 0, got 0");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  acceptance_stride: 0\n"),
            f() + ":14: measure.acceptance_stride: expected an integer in 1..1000000, got 0");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  cost_profile_seconds: -1\n"),
            f() + ":14: measure.cost_profile_seconds: expected seconds in [0, 3600], got -1");
  EXPECT_EQ(error_of(std::string(kBase) + "measure:\n  cost_profile_seconds: 1e9\n"),
            f() + ":14: measure.cost_profile_seconds: expected seconds in [0, 3600], got 1e+09");
  EXPECT_EQ(error_of(std::string(kBase) + "gate:\n  deterministic_band: 1\n"),
            f() + ":14: gate.deterministic_band: expected a number in [0, 1), got 1");
  EXPECT_EQ(error_of(std::string(kBase) + "gate:\n  deterministic_band: -0.1\n"),
            f() + ":14: gate.deterministic_band: expected a number in [0, 1), got -0.1");
  EXPECT_EQ(error_of(replaced("  file: p.jsonl\n", "  file: p.jsonl\n  limit: -1\n")),
            f() + ":9: prompts.limit: expected an integer >= 0 (0 = all), got -1");
  EXPECT_EQ(error_of(replaced("  file: p.jsonl\n", "  file: p.jsonl\n  skip: -2\n")),
            f() + ":9: prompts.skip: expected an integer >= 0, got -2");
  EXPECT_EQ(error_of(replaced("name: t", "name: ../escape")),
            f() +
                ":1: name: expected 1-128 letters, digits, '.', '_' or '-', not . or .. (it names "
                "results/<name>/), got '../escape'");
  // Seen: ".." wrote results/../results.jsonl (over the user's own files); a 300-character
  // name failed only when its folder was made, leaving results/ behind.
  for (const std::string& name : {std::string("\"..\""), std::string("."), std::string(129, 'n')})
    EXPECT_NE(error_of(replaced("name: t", "name: " + name)).find(":1: name: expected 1-128"),
              std::string::npos)
        << name;
  // Seen: -0.0 a cell apart from 0 (another cell id for the same setting).
  EXPECT_EQ(error_of(replaced("[0, 1]", "[0, -0.0]")),
            f() + ":12: sweep.temperature[1]: duplicate value (same as sweep.temperature[0])");
  // Seen: prompts.tokenizer "" taken as unset (target "" is refused).
  EXPECT_EQ(error_of(replaced("  file: p.jsonl\n", "  file: p.jsonl\n  tokenizer: \"\"\n")),
            f() +
                ":9: prompts.tokenizer: expected a tokenizer path, got an empty string (leave "
                "the key out for the target's own)");
  // Seen: 1e39 passed, became inf as the sampler's float and failed mid-run; 1e-320 became 0.
  EXPECT_EQ(error_of(replaced("[0, 1]", "[1e39]")),
            f() +
                ":12: sweep.temperature[0]: expected 0 or a number in [1e-30, 1e30] (the sampler "
                "computes in float), got 1e+39");
  EXPECT_EQ(error_of(replaced("[0, 1]", "[1e-320]")),
            f() +
                ":12: sweep.temperature[0]: expected 0 or a number in [1e-30, 1e30] (the sampler "
                "computes in float), got 9.99989e-321");
  EXPECT_EQ(error_of(std::string(kBase) + "  draft_temperature: 1e308\n"),
            f() +
                ":13: sweep.draft_temperature[0]: expected 0 or a number in [1e-30, 1e30] (the "
                "sampler computes in float), got 1e+308");
  EXPECT_EQ(error_of(std::string(kBase) + "  lenience: 1e-320\n"),
            f() +
                ":13: sweep.lenience[0]: expected a number in (0, 1] of at least 1e-30 (the "
                "sampler computes in float), got 9.99989e-321");
  EXPECT_EQ(error_of(std::string(kBase) + "simulate:\n  table: paper-table9\n"),
            f() + ":14: simulate.table: expected one of paper-table1, got 'paper-table9'");
  // A known table beside a target: nothing would run it.
  EXPECT_EQ(error_of(std::string(kBase) + "simulate:\n  table: paper-table1\n"),
            f() +
                ":14: simulate: a simulator-only section (speclab simulate --table), but this "
                "config has a target and runs its sweep: remove `simulate`, or the target and its "
                "sweep");
}

TEST_F(ConfigTest, SweepSemantics) {
  EXPECT_EQ(error_of(replaced("[a, b]", "[a, c]")),
            f() + ":10: sweep.drafter[1]: unknown drafter 'c' (known: a, b)");
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[]")),
            f() + ":11: sweep.gamma: expected a non-empty list");
  EXPECT_EQ(error_of(replaced("[a, b]", "[]")),
            f() + ":10: sweep.drafter: expected a non-empty list of drafter names");
  EXPECT_EQ(error_of(replaced("[1, 2, 4]", "[1, 2, 1]")),
            f() + ":11: sweep.gamma[2]: duplicate value (same as sweep.gamma[0])");
  // Seen: "", "a\nb", "..", "a/b" accepted as drafter names (stderr lines and table rows
  // broke). Expected: a safe word ('+' allowed: skip-14-15+26-27).
  for (const std::string& name : {std::string("\"a b\""), std::string("\"a/b\""),
                                  std::string("\"..\""), std::string("\"a\\nb\"")})
    EXPECT_NE(error_of(replaced("  b: models/zoo/x\n", "  " + name + ": models/zoo/x\n"))
                  .find(":6: drafters: expected a drafter name of 1-64 letters"),
              std::string::npos)
        << name;
  // Seen: drafters the sweep does not use were never checked (lookup:n=-1 ran with exit 0),
  // and a repeated or empty option was read past. Expected: every drafter's syntax, by line.
  EXPECT_EQ(
      error_of(replaced("  b: models/zoo/x\n", "  b: models/zoo/x\n  c: \"lookup:n=-1\"\n")),
      f() + ":7: drafters.c: drafter 'lookup:n=-1': n=-1 min=1 (expected 1 <= min <= n <= 64)");
  EXPECT_EQ(error_of(replaced("  a: \"lookup:n=3\"", "  a: \"lookup:n=3,n=4\"")),
            f() + ":5: drafters.a: drafter 'lookup:n=3,n=4': option 'n' given twice");
  EXPECT_EQ(error_of(replaced("  a: \"lookup:n=3\"", "  a: \"lookup:n=3,\"")),
            f() + ":5: drafters.a: drafter 'lookup:n=3,': an empty option after the last ','");
  EXPECT_EQ(error_of(replaced("  a: \"lookup:n=3\"", "  a: \"self:skip=4-2\"")),
            f() +
                ":5: drafters.a: drafter 'self:skip=4-2': layer range 4-2 (expected A-B with 0 "
                "<= A <= B)");
  // Seen: a tree beside lenience leaves no cell; run wrote empty results, exit 0.
  EXPECT_EQ(error_of(std::string(kBase) + "  tree: [2x2]\n  lenience: [0.5]\n"),
            "");  // the config loads; expanding it is refused (SweepTree tests, CLI below)
  EXPECT_EQ(error_of(replaced("  b: models/zoo/x\n", "  b: \"\"\n")),
            f() +
                ":6: drafters.b: expected a drafter spec (model path, lookup:n=N, "
                "self:skip=A-B, ngram:PATH), got an empty string");
}

// measure.acceptance_stride: 1 (the default, written out or not) keeps the config hash; another
// stride is another config.
TEST_F(ConfigTest, AcceptanceStrideLeavesTheHashAtItsDefault) {
  const ExperimentConfig plain = experiment_config_load(write(kBase));
  EXPECT_EQ(plain.measure.acceptance_stride, 1);
  EXPECT_FALSE(plain.to_json()["measure"].contains("acceptance_stride"));
  EXPECT_EQ(experiment_config_load(write(std::string(kBase) + "measure:\n  acceptance_stride: 1\n"))
                .config_hash(),
            plain.config_hash());
  const ExperimentConfig four =
      experiment_config_load(write(kBase), {"measure.acceptance_stride=4"});
  EXPECT_EQ(four.measure.acceptance_stride, 4);
  EXPECT_EQ(four.to_json()["measure"]["acceptance_stride"], 4);
  EXPECT_NE(four.config_hash(), plain.config_hash());
}

// sweep.synthetic_acceptance: off, a probability, or a per-position list of them.
TEST_F(ConfigTest, SyntheticAcceptanceAxis) {
  const ExperimentConfig plain = experiment_config_load(write(kBase));
  ASSERT_EQ(plain.sweep->values("synthetic_acceptance").size(), 1u);
  EXPECT_EQ(plain.sweep->values("synthetic_acceptance")[0], "off");  // default: off
  // Off, written out, is the default: the config hash does not change.
  EXPECT_EQ(experiment_config_load(write(std::string(kBase) + "  synthetic_acceptance: off\n"))
                .config_hash(),
            plain.config_hash());
  const ExperimentConfig c = experiment_config_load(
      write(std::string(kBase) + "  synthetic_acceptance: [off, 0.5, 1, [0.9, 0.8, 0.7]]\n"));
  EXPECT_EQ(nlohmann::json(c.sweep->values("synthetic_acceptance")),
            nlohmann::json::parse(R"(["off", [0.5], [1.0], [0.9, 0.8, 0.7]])"));
  EXPECT_NE(c.config_hash(), plain.config_hash());
  EXPECT_EQ(c.to_json()["sweep"]["synthetic_acceptance"],
            nlohmann::json::parse(R"(["off", [0.5], [1.0], [0.9, 0.8, 0.7]])"));
  EXPECT_EQ(experiment_config_load(write(std::string(kBase) + "  synthetic_acceptance: 0.8\n"))
                .sweep->list<std::vector<double>>("synthetic_acceptance"),
            (std::vector<std::vector<double>>{{0.8}}));
  EXPECT_EQ(experiment_config_load(write(kBase), {"sweep.synthetic_acceptance=[0.6, [1, 0.5]]"})
                .sweep->list<std::vector<double>>("synthetic_acceptance"),
            (std::vector<std::vector<double>>{{0.6}, {1.0, 0.5}}));
}

TEST_F(ConfigTest, SyntheticAcceptanceErrors) {
  const std::string key = "  synthetic_acceptance: ";
  auto err = [&](const std::string& value) {
    return error_of(std::string(kBase) + key + value + "\n");
  };
  EXPECT_EQ(err("[0.5, 0]"),
            f() +
                ":13: sweep.synthetic_acceptance[1]: expected an acceptance probability in "
                "(0, 1], got 0");
  EXPECT_EQ(err("1.5"),
            f() +
                ":13: sweep.synthetic_acceptance[0]: expected an acceptance probability in "
                "(0, 1], got 1.5");
  EXPECT_EQ(err("[[0.9, -0.2]]"),
            f() +
                ":13: sweep.synthetic_acceptance[0][1]: expected an acceptance probability "
                "in (0, 1], got -0.2");
  // Seen: [[0.5, 0.5], [0.5]] (one setting: the last repeats) ran as two cells; a list of
  // 100,000 probabilities for gamma 2 was accepted.
  EXPECT_EQ(err("[[0.5, 0.5], [0.5]]"),
            f() +
                ":13: sweep.synthetic_acceptance: [1] [0.5] is the setting of [0] [0.5,0.5] (the "
                "last probability repeats): given twice");
  EXPECT_EQ(err("[[" + std::string("0.5, ") +
                [] {
                  std::string many;
                  for (int i = 0; i < 64; ++i) many += "0.5, ";
                  return many;
                }() +
                "0.5]]"),
            f() +
                ":13: sweep.synthetic_acceptance[0]: expected at most 64 probabilities (one per "
                "draft position; gamma is at most 64), got 66");
  EXPECT_EQ(err("[0.5, high]"),
            f() +
                ":13: sweep.synthetic_acceptance[1]: expected off, a number in (0, 1] or a "
                "list of numbers in (0, 1] (one per draft position), got 'high'");
  EXPECT_EQ(err("[[0.9, .nan]]"),
            f() +
                ":13: sweep.synthetic_acceptance[0][1]: expected off, a number in (0, 1] or "
                "a list of numbers in (0, 1] (one per draft position), got '.nan'");
  EXPECT_EQ(err("[[]]"),
            f() +
                ":13: sweep.synthetic_acceptance[0]: expected off, a number in (0, 1] or a "
                "list of numbers in (0, 1] (one per draft position), got an empty list");
  EXPECT_EQ(err("{a: 1}"),
            f() +
                ":13: sweep.synthetic_acceptance: expected a list or a single value, got a "
                "mapping");
  EXPECT_EQ(err("[[0.5, {a: 1}]]"),
            f() +
                ":13: sweep.synthetic_acceptance[0][1]: expected off, a number in (0, 1] or "
                "a list of numbers in (0, 1] (one per draft position), got a mapping");
  EXPECT_EQ(err("[]"), f() + ":13: sweep.synthetic_acceptance: expected a non-empty list");
  EXPECT_EQ(err("[0.5, [0.5]]"), f() +
                                     ":13: sweep.synthetic_acceptance[1]: duplicate value (same as "
                                     "sweep.synthetic_acceptance[0])");
  EXPECT_EQ(err("0.5\nmeasure:\n  cost_only: true"),
            f() +
                ":13: sweep.synthetic_acceptance: expected off with measure.cost_only "
                "(cost-only runs make no speculative runs; their predicted grid already spans "
                "alpha)");
  EXPECT_EQ(error_of(kBase, {"sweep.synthetic_acceptance=[0.7, 2]"}),
            "--set sweep.synthetic_acceptance: sweep.synthetic_acceptance[1]: expected an "
            "acceptance probability in (0, 1], got 2");
}

TEST_F(ConfigTest, FileLevelErrors) {
  EXPECT_EQ(error_of("name: [t\n"), f() + ":2: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(error_of(""), f() + ": the config file is empty (expected a mapping)");
  EXPECT_EQ(error_of("- a\n- b\n"), f() + ":1: (top level): expected a mapping, got a list");
  // Seen: a second document, or text after "...", was ignored; 100,000 brackets or 5,000
  // indented levels gave "YAML syntax error: bad file".
  EXPECT_EQ(error_of(std::string(kBase) + "---\nname: other\n"),
            f() +
                ": holds 2 YAML documents, expected one (a second after --- or ... would be "
                "ignored)");
  EXPECT_NE(error_of(std::string(kBase) + "...\ngarbage: [\n").find("YAML syntax error"),
            std::string::npos);
  EXPECT_EQ(error_of("name: t\nquestion: q\nx: " + std::string(100000, '[') + "\n"),
            f() + ":3: nested deeper than 64 levels ([ and {); expected a config of a few levels");
  std::string deep = "name: t\n";
  for (int i = 0; i < 70; ++i)
    deep += std::string(static_cast<size_t>(i), ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_EQ(error_of(deep), f() +
                                ":66: nested deeper than 64 levels (indentation); expected a "
                                "config of a few levels");
  EXPECT_EQ(error_of(std::string(kBase) + "# [[[[ a comment\nmeasure:\n  note: \"[[[\"\n")
                .find("nested deeper"),
            std::string::npos);
  const std::string missing = dir.file("nope.yaml");
  try {
    experiment_config_load(missing);
    FAIL() << "loaded a missing file";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open config file (no such file)");
  }
}

TEST_F(ConfigTest, DuplicateKeyIsAnError) {
  const std::string msg = error_of(std::string(kBase) + "name: u\n");
  EXPECT_EQ(msg, f() + ":13: name: duplicate key");
}

TEST_F(ConfigTest, OverridesApplyBeforeValidation) {
  const std::string path = write(kBase);
  const ExperimentConfig c = experiment_config_load(
      path, {"sweep.gamma=[2,8]", "generation.max_new_tokens=16", "target=models/other",
             "measure.cost_only=true", "drafters.c=self:skip=2-5"});
  EXPECT_EQ(c.sweep->gamma(), (std::vector<int>{2, 8}));
  EXPECT_EQ(c.generation.max_new_tokens, 16);
  EXPECT_EQ(c.target->spec, "models/other");
  EXPECT_TRUE(c.measure.cost_only);
  ASSERT_EQ(c.drafters.size(), 3u);
  EXPECT_EQ(c.drafters[2].ref.path, "self:skip=2-5");
  EXPECT_EQ(c.measure.cost_curve_max_k, 9);
  EXPECT_NE(c.config_hash(), experiment_config_load(path).config_hash());
}

TEST_F(ConfigTest, OverrideErrorsNameTheOverride) {
  EXPECT_EQ(error_of(kBase, {"sweep.gamma=[0]"}),
            "--set sweep.gamma: sweep.gamma[0]: expected an integer in 1..64, got 0");
  EXPECT_EQ(error_of(kBase, {"generation.max_new_tokens=lots"}),
            "--set generation.max_new_tokens: generation.max_new_tokens: expected an integer, "
            "got 'lots'");
  EXPECT_EQ(error_of(kBase, {"sweep.gama=[1]"}),
            "--set sweep.gama: sweep.gama: unknown key (expected one of: drafter, gamma, "
            "temperature, draft_temperature, top_k, top_p, lenience, gamma_policy, p_min, "
            "synthetic_acceptance, tree, concurrency, exclude)");
  EXPECT_EQ(error_of(kBase, {"nosuch.key=1"}),
            "--set nosuch.key: nosuch: unknown key (expected one of: name, question, target, "
            "drafters, prompts, generation, measure, sweep, simulate, gate)");
  EXPECT_EQ(error_of(kBase, {"sweep.gamma"}),
            "--set sweep.gamma: expected key.path=value (e.g. --set sweep.gamma=[2,4])");
  EXPECT_EQ(error_of(kBase, {"sweep..gamma=1"}),
            "--set sweep..gamma: empty key segment (expected key.path=value)");
  EXPECT_EQ(error_of(kBase, {"name.x=1"}), "--set name.x: 'name' is not a mapping");
  // Seen: the last of two --set of one key won without a word.
  EXPECT_EQ(error_of(kBase, {"sweep.gamma=[2]", "sweep.gamma=[4]"}),
            "--set sweep.gamma: given twice (once is enough; the last would win)");
  EXPECT_EQ(error_of(kBase, {"sweep.gamma=[1,"})
                .rfind("--set sweep.gamma: the value is not valid YAML: ", 0),
            0u);
}

TEST_F(ConfigTest, EnvironmentVariablesAndHome) {
  ::unsetenv("SPECLAB_TEST_UNSET");
  EXPECT_EQ(error_of(replaced("synthetic:llama-3.2-1b",
                              "\"${SPECLAB_TEST_UNSET:?point it at a model}\"")),
            f() +
                ":3: target: environment variable SPECLAB_TEST_UNSET is not set (point it at a "
                "model)");
  EXPECT_EQ(error_of(replaced("models/zoo/x", "${SPECLAB_TEST_UNSET}/m.gguf")),
            f() + ":6: drafters.b: environment variable SPECLAB_TEST_UNSET is not set");
  EXPECT_EQ(error_of(replaced("models/zoo/x", "${OOPS")),
            f() + ":6: drafters.b: unterminated '${' in '${OOPS'");
  ::setenv("SPECLAB_TEST_SET", "/models/big", 1);
  const ExperimentConfig c = experiment_config_load(
      write(replaced("synthetic:llama-3.2-1b", "${SPECLAB_TEST_SET}/3b.gguf")));
  EXPECT_EQ(c.target->path, "/models/big/3b.gguf");
  // An override replaces the ${VAR} before it is expanded: no variable needed.
  EXPECT_EQ(experiment_config_load(
                write(replaced("synthetic:llama-3.2-1b", "${SPECLAB_TEST_UNSET}")), {"target=/m"})
                .target->path,
            "/m");
  ::setenv("HOME", "/home/tester", 1);
  EXPECT_EQ(
      experiment_config_load(write(replaced("synthetic:llama-3.2-1b", "~/m.gguf"))).target->path,
      "/home/tester/m.gguf");
}

TEST_F(ConfigTest, RelativePathsResolveAgainstCwdThenRepositoryRoot) {
  // No CMakeLists.txt + configs/ above the scratch dir: the root is the config's directory.
  dir.write("p.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n");
  const std::string text = replaced("models/zoo/x", "ngram:tables/t.bin");
  const auto saved = std::filesystem::current_path();
  ScratchDir empty_cwd;  // p.jsonl is not in the current directory
  std::filesystem::current_path(empty_cwd.path);
  ExperimentConfig c = experiment_config_load(write(text));
  const std::string root = std::filesystem::weakly_canonical(dir.path).string();
  auto canon = [](const std::string& p) { return std::filesystem::weakly_canonical(p).string(); };
  EXPECT_EQ(canon(c.prompts->files[0].path), root + "/p.jsonl");
  EXPECT_EQ(c.prompts->files[0].spec, "p.jsonl");
  EXPECT_EQ(c.drafters[1].ref.path.substr(0, 6), "ngram:");
  EXPECT_EQ(canon(c.drafters[1].ref.path.substr(6)), root + "/tables/t.bin");
  EXPECT_EQ(c.target->path, "synthetic:llama-3.2-1b");  // not a path

  // A file that exists relative to the current directory wins.
  ScratchDir cwd;
  cwd.write("p.jsonl", "{\"id\": \"b\", \"text\": \"y\"}\n");
  std::filesystem::current_path(cwd.path);
  c = experiment_config_load(write(text));
  std::filesystem::current_path(empty_cwd.path);
  EXPECT_EQ(canon(c.prompts->files[0].path),
            std::filesystem::weakly_canonical(cwd.path).string() + "/p.jsonl");

  // Inside a repository (CMakeLists.txt + configs/), paths resolve against its root even for
  // a config in a subfolder.
  dir.write("CMakeLists.txt", "");
  std::filesystem::create_directories(dir.path / "configs");
  const std::string nested = dir.write("configs/n.yaml", text);
  c = experiment_config_load(nested);
  std::filesystem::current_path(saved);
  EXPECT_EQ(canon(c.prompts->files[0].path), root + "/p.jsonl");
}

TEST_F(ConfigTest, SimulateOnlyAndCostOnlyConfigs) {
  const ExperimentConfig sim =
      experiment_config_load(write("name: s\nquestion: \"q\"\nsimulate:\n  table: paper-table1\n"));
  EXPECT_FALSE(sim.target.has_value());
  EXPECT_EQ(sim.simulate->table, "paper-table1");
  const ExperimentConfig cost = experiment_config_load(
      write(replaced("prompts:\n  file: p.jsonl\n", "measure:\n  cost_only: true\n")));
  EXPECT_TRUE(cost.measure.cost_only);
  EXPECT_FALSE(cost.prompts.has_value());
}

TEST_F(ConfigTest, PromptFileMayBeAList) {
  const ExperimentConfig c =
      experiment_config_load(write(replaced("file: p.jsonl", "file: [a.jsonl, b.jsonl]")));
  ASSERT_EQ(c.prompts->files.size(), 2u);
  EXPECT_EQ(c.prompts->files[1].spec, "b.jsonl");
  EXPECT_EQ(error_of(replaced("file: p.jsonl", "file: []")),
            f() + ":8: prompts.file: expected a JSONL file path or a non-empty list of them");
}

// Every shipped config loads, states in its header comment its question (first line), its
// expected duration on the reference machine ("# Duration: ...") and what it shows ("# What
// it shows: ..."), and is named after its file.
TEST(ShippedConfigs, AllLoadAndStateQuestionDurationAndFinding) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SPECLAB_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const ExperimentConfig c = experiment_config_load(entry.path().string());
    EXPECT_EQ(c.name, entry.path().stem().string());
    if (c.sweep) {  // a sweep of no cells is refused
      EXPECT_FALSE(sweep_expand(c).empty());
    }
    std::ifstream in(entry.path());
    std::string first, line;
    std::getline(in, first);
    EXPECT_EQ(first, "# Question: " + c.question);
    bool duration = false, shows = false;
    while (std::getline(in, line) && line.rfind("#", 0) == 0) {
      duration = duration || line.rfind("# Duration: ", 0) == 0;
      shows = shows || line.rfind("# What it shows: ", 0) == 0;
    }
    EXPECT_TRUE(duration) << "no '# Duration: ' line in the header";
    EXPECT_TRUE(shows) << "no '# What it shows: ' line in the header";
    ++n;
  }
  EXPECT_GE(n, 5);
}

// The named pair is given as Hugging Face model ids, kept as written (the run finds them in
// the local HF cache); local paths replace them through --set.
TEST(ShippedConfigs, LlamaPairNamesHuggingFaceIdsOrOverrides) {
  const std::string path = SPECLAB_SOURCE_DIR "/configs/llama32-1b-3b.yaml";
  const ExperimentConfig ids = experiment_config_load(path);
  EXPECT_EQ(ids.target->spec, "meta-llama/Llama-3.2-3B-Instruct");
  EXPECT_EQ(ids.target->path, "meta-llama/Llama-3.2-3B-Instruct");
  EXPECT_EQ(ids.find_drafter("draft-1b")->ref.path, "meta-llama/Llama-3.2-1B-Instruct");
  const ExperimentConfig c =
      experiment_config_load(path, {"target=/m/3b.gguf", "drafters.draft-1b=/m/1b.gguf"});
  EXPECT_EQ(c.target->path, "/m/3b.gguf");
  EXPECT_EQ(c.find_drafter("draft-1b")->ref.path, "/m/1b.gguf");
}

TEST(ExpandString, HandlesPlainTextAndDollarSigns) {
  EXPECT_EQ(experiment_expand_string("a$b{c}", "x"), "a$b{c}");
  EXPECT_EQ(experiment_expand_string("", "x"), "");
  EXPECT_EQ(experiment_hash_hex(""), "cbf29ce484222325");  // FNV-1a 64 offset basis
}

}  // namespace
}  // namespace speclab
