// sweep.exclude: combinations left out of the cross product. The remaining cells keep their
// ids (a cell's id does not depend on its neighbours), a config without exclusions keeps its
// hash, and every way of writing an exclusion wrongly is one line naming the key.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "experiments/config/sweep.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

// Line 13 is the exclusion (when there is one).
const std::string kConfig =
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
    "  temperature: [0, 0.5, 1]\n";

ExperimentConfig load(const ScratchDir& dir, const std::string& exclude,
                      const std::vector<std::string>& overrides = {}) {
  const std::string text = kConfig + (exclude.empty() ? "" : "  exclude: " + exclude + "\n");
  return experiment_config_load(dir.write("c.yaml", text), overrides);
}

std::string error_of(const std::string& exclude, const std::vector<std::string>& overrides = {}) {
  ScratchDir dir;
  try {
    sweep_expand(load(dir, exclude, overrides));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepExclude, LeavesOutTheMatchingCellsAndKeepsTheOthersIds) {
  ScratchDir dir;
  const std::vector<Cell> all = sweep_expand(load(dir, ""));
  ASSERT_EQ(all.size(), 12u);
  // One entry naming two axes: drafter a at temperature 1 (both gammas).
  const std::vector<Cell> some = sweep_expand(load(dir, "[{drafter: a, temperature: 1}]"));
  ASSERT_EQ(some.size(), 10u);
  std::set<std::string> kept;
  for (const Cell& c : some) {
    EXPECT_FALSE(c.drafter == "a" && c.temperature == 1) << c.cell_id;
    kept.insert(c.cell_id);
  }
  for (const Cell& c : all)
    EXPECT_EQ(kept.count(c.cell_id), c.drafter == "a" && c.temperature == 1 ? 0u : 1u) << c.cell_id;
  // Lists of values and several entries; a value written as 1.0 is the temperature 1.
  const std::vector<Cell> fewer =
      sweep_expand(load(dir, "[{drafter: a, temperature: [0.5, 1.0]}, {drafter: b, gamma: 1}]"));
  EXPECT_EQ(fewer.size(), 12u - 4 - 3);
  // Cells are indexed in order after the exclusion.
  for (size_t i = 0; i < fewer.size(); i++) EXPECT_EQ(fewer[i].index, static_cast<int>(i));
}

TEST(SweepExclude, ChangesTheConfigHashOnlyWhenPresent) {
  ScratchDir dir;
  const std::string plain = load(dir, "").config_hash();
  EXPECT_EQ(load(dir, "[]").config_hash(), plain);  // an empty list is no exclusion
  EXPECT_NE(load(dir, "[{drafter: a}]").config_hash(), plain);
  // --set sweep.exclude works like the key in the file.
  EXPECT_EQ(sweep_expand(load(dir, "", {"sweep.exclude=[{drafter: a}]"})).size(), 6u);
}

// Narrowing an axis with --set (a check of some cells) keeps a config's exclusion valid even
// when the value it names is gone; in the file itself such a value is a typo (next test).
TEST(SweepExclude, NarrowingAnAxisWithSetKeepsTheExclusionValid) {
  ScratchDir dir;
  const std::vector<Cell> b_only =
      sweep_expand(load(dir, "[{drafter: a, temperature: 1}]", {"sweep.drafter=[b]"}));
  EXPECT_EQ(b_only.size(), 6u);
  const std::vector<Cell> a_only =
      sweep_expand(load(dir, "[{drafter: a, temperature: 1}]", {"sweep.drafter=[a]"}));
  EXPECT_EQ(a_only.size(), 4u);
}

TEST(SweepExclude, BadExclusionsAreOneLineNamingTheKey) {
  // Not a list.
  EXPECT_NE(error_of("{drafter: a}").find("c.yaml:13: sweep.exclude: expected a list of mappings"),
            std::string::npos)
      << error_of("{drafter: a}");
  // An entry that is not a mapping, or names no axis.
  EXPECT_NE(error_of("[a]").find("sweep.exclude[0]: expected a mapping"), std::string::npos)
      << error_of("[a]");
  EXPECT_NE(error_of("[{}]").find("sweep.exclude[0]: expected at least one axis"),
            std::string::npos)
      << error_of("[{}]");
  // An unknown axis, with the axes listed.
  EXPECT_NE(error_of("[{gama: 1}]")
                .find("sweep.exclude[0].gama: unknown key (expected one of: "
                      "drafter, gamma"),
            std::string::npos)
      << error_of("[{gama: 1}]");
  // A value of the wrong type, or one the sweep does not have (a typo would exclude nothing).
  EXPECT_NE(error_of("[{gamma: two}]").find("sweep.exclude[0].gamma"), std::string::npos)
      << error_of("[{gamma: two}]");
  EXPECT_NE(error_of("[{temperature: 0.7}]")
                .find("sweep.exclude[0].temperature[0]: expected one of sweep.temperature's "
                      "values, got 0.7"),
            std::string::npos)
      << error_of("[{temperature: 0.7}]");
  EXPECT_NE(error_of("[{drafter: c}]").find("sweep.exclude[0].drafter[0]: expected one of"),
            std::string::npos)
      << error_of("[{drafter: c}]");
  // An entry that removes nothing (an earlier one took its cells), and one that removes all.
  EXPECT_NE(
      error_of("[{drafter: a}, {drafter: a, gamma: 1}]").find("sweep.exclude[1]: excludes no cell"),
      std::string::npos)
      << error_of("[{drafter: a}, {drafter: a, gamma: 1}]");
  EXPECT_NE(error_of("[{gamma: [1, 4]}]").find("sweep.exclude: excludes every cell"),
            std::string::npos)
      << error_of("[{gamma: [1, 4]}]");
  // Each of these is one line.
  for (const char* bad :
       {"{drafter: a}", "[{}]", "[{gama: 1}]", "[{temperature: 0.7}]", "[{gamma: [1, 4]}]"}) {
    const std::string e = error_of(bad);
    EXPECT_FALSE(e.empty()) << bad;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace speclab
