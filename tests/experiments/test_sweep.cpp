#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "experiments/config/sweep.h"
#include "experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

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
    "  temperature: [0, 1]\n"
    "  draft_temperature: [same, 0.5]\n";

ExperimentConfig load(const ScratchDir& dir, const std::vector<std::string>& overrides = {}) {
  return experiment_config_load(dir.write("c.yaml", kConfig), overrides);
}

TEST(Sweep, ExpandsEveryCombinationInDocumentedOrder) {
  ScratchDir dir;
  const std::vector<Cell> cells = sweep_expand(load(dir));
  ASSERT_EQ(cells.size(), 2u * 2 * 2 * 2);
  // Last axis (of those given) fastest, first axis outermost, file order within an axis.
  EXPECT_EQ(cells[0].drafter, "b");
  EXPECT_EQ(cells[0].gamma, 4);
  EXPECT_EQ(cells[0].temperature, 0);
  EXPECT_TRUE(cells[0].draft_temperature_same);
  EXPECT_FALSE(cells[1].draft_temperature_same);
  EXPECT_EQ(cells[1].draft_temperature, 0.5);
  EXPECT_EQ(cells[2].temperature, 1);
  EXPECT_EQ(cells[2].draft_temperature, 1);  // "same" resolves to the cell's temperature
  EXPECT_EQ(cells[4].gamma, 1);
  EXPECT_EQ(cells[8].drafter, "a");
  EXPECT_EQ(cells[8].drafter_ref.spec, "lookup:n=3");
  for (size_t i = 0; i < cells.size(); ++i) EXPECT_EQ(cells[i].index, static_cast<int>(i));
  EXPECT_EQ(cells[3].draft_sampling().temperature, 0.5f);
  EXPECT_EQ(cells[3].target_sampling().temperature, 1.0f);
}

TEST(Sweep, CellIdsAreUniqueStableAndFollowIdentity) {
  ScratchDir dir;
  const std::vector<Cell> cells = sweep_expand(load(dir));
  std::set<std::string> ids;
  for (const auto& c : cells) {
    EXPECT_EQ(c.cell_id.size(), 12u);
    ids.insert(c.cell_id);
  }
  EXPECT_EQ(ids.size(), cells.size());
  // Same config -> same ids; a sweep reordered or narrowed keeps each cell's id.
  EXPECT_EQ(sweep_expand(load(dir))[5].cell_id, cells[5].cell_id);
  const std::vector<Cell> narrowed = sweep_expand(load(dir, {"sweep.gamma=1", "sweep.drafter=a"}));
  ASSERT_EQ(narrowed.size(), 4u);
  EXPECT_EQ(narrowed[0].cell_id, cells[12].cell_id);
  // What a cell measures changes its id: generation settings and the target.
  EXPECT_NE(sweep_expand(load(dir, {"generation.max_new_tokens=8"}))[0].cell_id, cells[0].cell_id);
  EXPECT_NE(sweep_expand(load(dir, {"target=synthetic:llama-3.2-3b"}))[0].cell_id,
            cells[0].cell_id);
  // Renaming a drafter does not (identity is the spec).
  EXPECT_EQ(sweep_expand(load(dir, {"drafters.c=models/zoo/x", "sweep.drafter=c"}))[0].cell_id,
            cells[0].cell_id);
}

TEST(Sweep, ToJsonHasEveryParameter) {
  ScratchDir dir;
  const nlohmann::json j = sweep_expand(load(dir))[1].to_json();
  for (const char* key : {"cell_index", "cell_id", "drafter", "drafter_spec", "gamma",
                          "temperature", "draft_temperature", "draft_temperature_same", "top_k",
                          "top_p", "lenience", "gamma_policy", "p_min"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["drafter_spec"], "models/zoo/x");
  EXPECT_EQ(j["draft_temperature"], 0.5);
  EXPECT_EQ(j["cell_index"], 1);
}

TEST(Sweep, SameAndAnEqualNumberCollapseIntoOneCell) {
  ScratchDir dir;
  const auto cells =
      sweep_expand(load(dir, {"sweep.temperature=[0.5]", "sweep.draft_temperature=[same, 0.5]"}));
  EXPECT_EQ(cells.size(), 4u);  // 2 drafters x 2 gammas
}

// synthetic_acceptance is the last (fastest) axis; it enters a cell's id and row only when
// on, so cells without it keep the ids they had before the axis existed.
TEST(Sweep, SyntheticAcceptanceAxisKeepsTheIdsOfCellsWithoutIt) {
  ScratchDir dir;
  const std::vector<Cell> plain = sweep_expand(load(dir));
  const std::vector<Cell> cells =
      sweep_expand(load(dir, {"sweep.synthetic_acceptance=[off, 0.5, [0.9, 0.6]]"}));
  ASSERT_EQ(cells.size(), 3 * plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(cells[3 * i].cell_id, plain[i].cell_id);
    EXPECT_TRUE(cells[3 * i].synthetic_acceptance.empty());
    EXPECT_FALSE(cells[3 * i].to_json().contains("synthetic_acceptance"));
    EXPECT_EQ(cells[3 * i + 1].synthetic_acceptance, (std::vector<double>{0.5}));
    EXPECT_EQ(cells[3 * i + 2].synthetic_acceptance, (std::vector<double>{0.9, 0.6}));
    EXPECT_EQ(cells[3 * i + 2].to_json()["synthetic_acceptance"],
              nlohmann::json::parse("[0.9, 0.6]"));
    EXPECT_NE(cells[3 * i + 1].cell_id, cells[3 * i].cell_id);
    EXPECT_NE(cells[3 * i + 2].cell_id, cells[3 * i + 1].cell_id);
  }
  // The same value, written as a number or a one-element list, is the same cell.
  EXPECT_EQ(sweep_expand(load(dir, {"sweep.synthetic_acceptance=[[0.5]]"}))[0].cell_id,
            cells[1].cell_id);
}

TEST(Sweep, SimulatorOnlyConfigHasNoCells) {
  ScratchDir dir;
  const std::string path =
      dir.write("s.yaml", "name: s\nquestion: q\nsimulate:\n  table: paper-table1\n");
  EXPECT_THROW(sweep_expand(experiment_config_load(path)), InputError);
}

// Seen: axes whose every combination does not exist (tree speculation is exact only) gave 0
// cells, an empty results file and exit 0. Expected: refused, naming the sweep.
TEST(Sweep, ASweepOfNoCellsIsRefused) {
  ScratchDir dir;
  for (const char* extra :
       {"sweep.lenience=[0.5]", "sweep.p_min=[0.3]", "sweep.gamma_policy=[heuristic]"}) {
    try {
      sweep_expand(load(dir, {"sweep.tree=[2x2]", extra}));
      FAIL() << extra << ": expanded";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(": sweep: expands to no cells"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(sweep_expand(load(dir, {"sweep.tree=[2x2]"})).empty());
}

TEST(Shard, RoundRobinPartitionsTheCells) {
  ScratchDir dir;
  const std::vector<Cell> cells = sweep_expand(load(dir));
  std::multiset<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    const auto part = sweep_shard(cells, i, 3);
    for (size_t k = 0; k < part.size(); ++k) {
      EXPECT_EQ(part[k].index, i + 3 * static_cast<int>(k));
      seen.insert(part[k].cell_id);
    }
  }
  EXPECT_EQ(seen.size(), cells.size());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), cells.size());
  EXPECT_EQ(sweep_shard(cells, 0, 1).size(), cells.size());
  EXPECT_TRUE(sweep_shard(cells, 20, 21).empty());
}

TEST(Shard, ParsesIOverN) {
  const Shard s = sweep_parse_shard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  const std::pair<const char*, const char*> bad[] = {
      {"5/5", "--shard '5/5': expected 0 <= I < N and N >= 1, got I=5 N=5"},
      {"0/0", "--shard '0/0': expected 0 <= I < N and N >= 1, got I=0 N=0"},
      {"1", "--shard '1': expected I/N with integers 0 <= I < N (e.g. 0/4)"},
      {"-1/4", "--shard '-1/4': expected I/N with integers 0 <= I < N (e.g. 0/4)"},
      {"a/b", "--shard 'a/b': expected I/N with integers 0 <= I < N (e.g. 0/4)"},
      {"1/", "--shard '1/': expected I/N with integers 0 <= I < N (e.g. 0/4)"},
  };
  for (const auto& [text, msg] : bad) {
    try {
      sweep_parse_shard(text);
      ADD_FAILURE() << text << " parsed";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), msg);
    }
  }
}

}  // namespace
}  // namespace speclab
