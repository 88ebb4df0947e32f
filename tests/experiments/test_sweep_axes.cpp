// The sweep axis table (experiments/config/sweep_axes.h): an axis registered from this file alone
// loads from YAML, is checked with a one-line error naming its key, expands into cells,
// changes cell ids only away from its default, and appears in the config's JSON, the config
// reference, the rows and Cell::from_json. Plus from_json and the table key of the built-in
// axes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/config/config_schema.h"
#include "experiments/config/sweep.h"
#include "experiments/config/sweep_axes.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

using nlohmann::json;
using testing_util::ScratchDir;

const char* kKey = "test_only_axis";

// An integer >= 1, default 1, left out of the config JSON and the cell id at 1: the shape of
// the next real axis (concurrency). It has no typed Cell field, so it lives in other_axes.
SweepAxis test_axis() {
  SweepAxis a;
  a.key = kKey;
  a.type = "list of integers >= 1";
  a.default_text = "[1]";
  a.meaning = "a test's axis";
  a.defaults = {json(1)};
  a.omit_at_default = true;
  a.parse = [](const YAML::Node& n, const std::string& path, SweepYamlReader& r) -> json {
    return r.integer(n, path);
  };
  a.check = [](const json& v, const ExperimentConfig&) {
    const int x = v.get<int>();
    return x >= 1 ? SweepAxisProblem{}
                  : SweepAxisProblem{"", str_cat("expected an integer >= 1, got ", x)};
  };
  a.apply = [](const json& v, const ExperimentConfig&, Cell& c) {
    c.other_axes[kKey] = v;
    return true;
  };
  a.write_id = [](const Cell& c, json& params) {
    const auto it = c.other_axes.find(kKey);
    if (it != c.other_axes.end() && it->second != 1) params[kKey] = it->second;
  };
  a.read_row = [](const json& row, Cell& c) { c.other_axes[kKey] = row.value(kKey, 1); };
  a.label = "n";
  a.format = [](const Cell& c) { return c.other_axes.at(kKey).dump(); };
  return a;
}

const char* kConfig =
    "name: t\n"
    "question: \"q\"\n"
    "target: synthetic:llama-3.2-1b\n"
    "drafters:\n"
    "  a: \"lookup:n=3\"\n"
    "  b: models/zoo/x\n"
    "prompts:\n"
    "  file: p.jsonl\n"
    "sweep:\n"
    "  drafter: [b, a]\n"
    "  gamma: [4, 1]\n"
    "  temperature: [0, 1]\n";

std::string error_of(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    experiment_config_load(path, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(SweepAxes, TableIsInExpansionOrder) {
  std::vector<std::string> keys;
  for (const auto& a : sweep_axes()) keys.push_back(a.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"drafter", "gamma", "temperature", "draft_temperature",
                                            "top_k", "top_p", "lenience", "gamma_policy", "p_min",
                                            "synthetic_acceptance", "tree", "concurrency"}));
  EXPECT_EQ(sweep_axis(kKey), nullptr);
}

TEST(SweepAxes, ATestAxisIsOneEntry) {
  ScratchDir dir;
  const std::string plain_path = dir.write("c.yaml", kConfig);
  const std::string with_path =
      dir.write("w.yaml", std::string(kConfig) + "  " + kKey + ": [1, 3]\n");
  // Unknown before it is registered.
  EXPECT_EQ(error_of(with_path).rfind(with_path + ":13: sweep.test_only_axis: unknown key", 0), 0u)
      << error_of(with_path);
  const ExperimentConfig plain_before = experiment_config_load(plain_path);
  const std::string plain_hash = plain_before.config_hash();
  const std::vector<Cell> plain = sweep_expand(plain_before);
  {
    ScopedSweepAxisForTests registered(test_axis());
    ASSERT_NE(sweep_axis(kKey), nullptr);

    // Absent = its default: the config hash and every cell id as before.
    const ExperimentConfig absent = experiment_config_load(plain_path);
    EXPECT_EQ(absent.config_hash(), plain_before.config_hash()) << absent.to_json().dump() << "\n"
                                                                << plain_before.to_json().dump();
    EXPECT_FALSE(absent.to_json()["sweep"].contains(kKey));
    EXPECT_EQ(absent.sweep->list<int>(kKey), (std::vector<int>{1}));
    const std::vector<Cell> same = sweep_expand(absent);
    ASSERT_EQ(same.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(same[i].cell_id, plain[i].cell_id);

    // Given: loaded, in the config JSON, expanded as the fastest axis.
    const ExperimentConfig with = experiment_config_load(with_path);
    EXPECT_EQ(with.sweep->list<int>(kKey), (std::vector<int>{1, 3}));
    EXPECT_EQ(with.to_json()["sweep"][kKey], json::parse("[1, 3]"));
    EXPECT_NE(with.config_hash(), plain_hash);
    const std::vector<Cell> cells = sweep_expand(with);
    ASSERT_EQ(cells.size(), 2 * plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      // At the default: the cell and its id as before; away from it: a new id.
      EXPECT_EQ(cells[2 * i].cell_id, plain[i].cell_id);
      EXPECT_FALSE(cells[2 * i].to_json().contains(kKey));
      EXPECT_NE(cells[2 * i + 1].cell_id, plain[i].cell_id);
      EXPECT_EQ(cells[2 * i + 1].gamma, plain[i].gamma);
      const json row = cells[2 * i + 1].to_json();
      EXPECT_EQ(row[kKey], 3);
      // Read back through the same table.
      const Cell back = Cell::from_json(row);
      EXPECT_EQ(back.other_axes.at(kKey), 3);
      EXPECT_EQ(back.to_json(), row);
      EXPECT_EQ(Cell::from_json(cells[2 * i].to_json()).other_axes.at(kKey), 1);
    }
    // --set works like any key.
    EXPECT_EQ(
        sweep_expand(experiment_config_load(plain_path, {"sweep.test_only_axis=3"}))[0].cell_id,
        cells[1].cell_id);

    // Bad values: one line naming file:line and the key.
    auto bad = [&](const std::string& value) {
      return error_of(
          dir.write("b.yaml", std::string(kConfig) + "  " + kKey + ": " + value + "\n"));
    };
    const std::string b = dir.file("b.yaml");
    EXPECT_EQ(bad("[1, 0]"), b + ":13: sweep.test_only_axis[1]: expected an integer >= 1, got 0");
    EXPECT_EQ(bad("[2, x]"), b + ":13: sweep.test_only_axis[1]: expected an integer, got 'x'");
    EXPECT_EQ(
        bad("[2, 2]"),
        b + ":13: sweep.test_only_axis[1]: duplicate value (same as sweep.test_only_axis[0])");
    EXPECT_EQ(bad("[]"), b + ":13: sweep.test_only_axis: expected a non-empty list");
    EXPECT_EQ(
        error_of(plain_path, {"sweep.test_only_axis=-1"}),
        "--set sweep.test_only_axis: sweep.test_only_axis[0]: expected an integer >= 1, got -1");

    // The schema, hence the config reference and the allowed keys.
    // (The last axis; sweep.exclude, which is no axis, follows the axes.)
    const auto children = config_schema_children("sweep");
    ASSERT_GE(children.size(), 2u);
    EXPECT_EQ(children[children.size() - 2], kKey);
    EXPECT_EQ(children.back(), "exclude");
    EXPECT_NE(config_reference_markdown().find("| `sweep.test_only_axis` | list of integers >= 1 | "
                                               "[1] | a test's axis |"),
              std::string::npos);
    // The table key.
    const auto key = sweep_axes_table_key(cells[1], {"drafter", "gamma"});
    ASSERT_FALSE(key.empty());
    EXPECT_EQ(key.back(), (std::pair<std::string, std::string>{"n", "3"}));
  }
  // Gone again with its registration.
  EXPECT_EQ(sweep_axis(kKey), nullptr);
  EXPECT_EQ(config_reference_markdown().find("test_only_axis"), std::string::npos);
  EXPECT_EQ(sweep_expand(experiment_config_load(plain_path))[1].cell_id, plain[1].cell_id);
}

TEST(SweepAxes, FromJsonInvertsToJson) {
  ScratchDir dir;
  const std::string path = dir.write("c.yaml", kConfig);
  const std::vector<Cell> cells = sweep_expand(experiment_config_load(
      path, {"sweep.draft_temperature=[same, 0.5]", "sweep.synthetic_acceptance=[off, [0.9, 0.6]]",
             "sweep.tree=[off, 3x2x1]", "sweep.top_k=[0, 40]"}));
  ASSERT_GT(cells.size(), 16u);
  bool saw_tree = false;
  for (const Cell& c : cells) {
    const json row = c.to_json();
    const Cell back = Cell::from_json(row);
    EXPECT_EQ(back.to_json().dump(), row.dump());
    EXPECT_EQ(back.drafter, c.drafter);
    EXPECT_EQ(back.drafter_ref.spec, c.drafter_ref.spec);
    EXPECT_EQ(back.gamma, c.gamma);
    EXPECT_EQ(back.temperature, c.temperature);
    EXPECT_EQ(back.draft_temperature, c.draft_temperature);
    EXPECT_EQ(back.draft_temperature_same, c.draft_temperature_same);
    EXPECT_EQ(back.top_k, c.top_k);
    EXPECT_EQ(back.synthetic_acceptance, c.synthetic_acceptance);
    EXPECT_EQ(back.tree.to_string(), c.tree.to_string());
    EXPECT_EQ(back.index, c.index);
    EXPECT_EQ(back.cell_id, c.cell_id);
    saw_tree = saw_tree || back.tree.depth() == 3;
  }
  EXPECT_TRUE(saw_tree);
  // A row written before an axis existed: the axis' default.
  const Cell old = Cell::from_json(json::parse(
      R"({"cell_index": 2, "cell_id": "0123456789ab", "drafter": "a", "drafter_spec": "lookup",
          "gamma": 3, "temperature": 0.7, "top_k": 0, "top_p": 1.0, "lenience": 1.0,
          "gamma_policy": "fixed", "p_min": 0.0, "speedup": 1.5})"));
  EXPECT_EQ(old.index, 2);
  EXPECT_EQ(old.gamma, 3);
  EXPECT_TRUE(old.draft_temperature_same);
  EXPECT_EQ(old.draft_temperature, 0.7);  // "same"
  EXPECT_TRUE(old.synthetic_acceptance.empty());
  EXPECT_EQ(old.tree.depth(), 0);
}

TEST(SweepAxes, TableKeyLabelsAndFormatsEachAxis) {
  ScratchDir dir;
  const Cell c = sweep_expand(
      experiment_config_load(dir.write("c.yaml", kConfig), {"sweep.temperature=0.5"}))[0];
  const std::vector<std::pair<std::string, std::string>> want = {
      {"draft", "b"},       {"T", "0.5"},         {"T_draft", "0.50"}, {"top_k", "0"},
      {"top_p", "1.00"},    {"lenience", "1.00"}, {"policy", "fixed"}, {"p_min", "0.00"},
      {"synthetic", "off"}, {"tree", "off"},      {"N", "1"}};
  EXPECT_EQ(sweep_axes_table_key(c, {"gamma"}), want);
  EXPECT_EQ(sweep_axes_table_key(c).size(), sweep_axes().size());
}

}  // namespace
}  // namespace speclab
