// The sweep's tree axis: which cells become tree cells, their ids, and the one-line errors
// for bad shapes (unit level and through `speclab run`).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "experiments/config/sweep.h"
#include "tests/experiments/experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

const char* kConfig =
    "name: t\n"
    "question: \"q\"\n"
    "target: synthetic:llama-3.2-1b\n"
    "drafters:\n"
    "  a: \"lookup:n=3\"\n"
    "prompts:\n"
    "  file: p.jsonl\n"
    "sweep:\n"
    "  drafter: [a]\n"
    "  gamma: [4, 2]\n"
    "  temperature: [0, 1]\n"
    "  lenience: [1.0, 0.5]\n";

ExperimentConfig load(const ScratchDir& dir, const std::vector<std::string>& overrides = {}) {
  return experiment_config_load(dir.write("c.yaml", kConfig), overrides);
}

TEST(SweepTree, OffKeepsTheChainCellsAndTheirIds) {
  ScratchDir dir;
  const auto plain = sweep_expand(load(dir));
  const auto off = sweep_expand(load(dir, {"sweep.tree=[off]"}));
  ASSERT_EQ(plain.size(), off.size());
  for (size_t i = 0; i < plain.size(); i++) EXPECT_EQ(plain[i].cell_id, off[i].cell_id);
  // An experiment that never mentions trees keeps its config hash too.
  EXPECT_EQ(load(dir).config_hash(), load(dir, {"sweep.tree=[off]"}).config_hash());
}

TEST(SweepTree, TreeCellsOnlyForExactSettingsAtTheFirstGamma) {
  ScratchDir dir;
  const auto chain = sweep_expand(load(dir));
  const auto cells = sweep_expand(load(dir, {"sweep.tree=[off, 3x2x1, '2x2:sample']"}));
  // 8 chain cells; trees for the lenience-1 cells at gamma 4 (2 temperatures) x 2 shapes.
  ASSERT_EQ(cells.size(), chain.size() + 4);
  std::set<std::string> ids;
  int trees = 0;
  for (size_t i = 0; i < cells.size(); i++) {
    const Cell& c = cells[i];
    EXPECT_EQ(c.index, static_cast<int>(i));
    EXPECT_TRUE(ids.insert(c.cell_id).second) << "duplicate id " << c.cell_id;
    if (c.tree.depth() == 0) continue;
    trees++;
    EXPECT_EQ(c.lenience, 1.0);
    const std::string shape = c.tree.to_string();
    EXPECT_TRUE(shape == "3x2x1:topk" || shape == "2x2:sample") << shape;
    EXPECT_EQ(c.gamma, shape == "3x2x1:topk" ? 3 : 2);  // the depth
    EXPECT_EQ(c.to_json()["tree"], shape);
  }
  EXPECT_EQ(trees, 4);
  // Without "off" only the tree cells remain.
  EXPECT_EQ(sweep_expand(load(dir, {"sweep.tree=[3x2x1]"})).size(), 2u);
}

TEST(SweepTree, BadShapesNameTheKey) {
  ScratchDir dir;
  for (const std::string bad : {"[3x0]", "[beam]", "['2x2:wide']", "[16x16]", "[off, off]", "[]"}) {
    try {
      load(dir, {"sweep.tree=" + bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("sweep.tree"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Seen: [2x2, "2x2:topk"] (one tree spelt twice) became one cell without a word.
TEST(SweepTree, OneTreeSpeltTwiceIsADuplicate) {
  ScratchDir dir;
  try {
    load(dir, {"sweep.tree=[2x2, '2x2:topk']"});
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("--set sweep.tree: sweep.tree: [1] '2x2:topk' is the tree of "
                                   "[0] '2x2' (2x2:topk): one cell, given twice"),
        std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(load(dir, {"sweep.tree=[2x2, '2x2:sample']"}));
}

TEST(SweepTree, RunRefusesBadTreeWithExitTwo) {
  ScratchDir d;
  const std::string cfg = d.write("c.yaml",
                                  "name: errs\n"
                                  "question: \"bad tree\"\n"
                                  "target: synthetic:tiny\n"
                                  "drafters:\n"
                                  "  lookup: lookup\n"
                                  "prompts:\n"
                                  "  file: p.jsonl\n"
                                  "generation:\n"
                                  "  max_new_tokens: 8\n"
                                  "  ctx: 64\n"
                                  "sweep:\n"
                                  "  drafter: [lookup]\n"
                                  "  gamma: [2]\n"
                                  "  temperature: [0]\n"
                                  "  tree: [off, 2x99]\n");
  const std::string cmd = std::string("'") + SPECLAB_BIN + "' run '" + cfg + "' --out '" +
                          d.file("out") + "' --no-plots >/dev/null 2>'" + d.file("err") + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::stringstream ss;
  ss << std::ifstream(d.file("err")).rdbuf();
  EXPECT_NE(ss.str().find("sweep.tree[1]: expected off or a tree shape"), std::string::npos)
      << ss.str();
  EXPECT_FALSE(std::ifstream(d.file("out") + "/results.jsonl").good()) << "no partial results";
}

}  // namespace
}  // namespace speclab
