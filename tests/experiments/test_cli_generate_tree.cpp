// speclab generate --tree through the executable: on SmolLM2 (real weights) the greedy tree
// output equals transformers' tokens for a model-free drafter and self-speculation; on the
// zoo the JSON reports the tree; each bad tree argument exits 2 with one line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::ids_arg;
using testing_util::run_speclab;
const auto& have = testing_util::file_exists;

const std::string kZoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";

TEST(CliGenerateTree, SmolLM2GreedyTreeMatchesTransformers) {
  const std::string gguf = testing_util::smollm2_gguf();
  if (!have(gguf)) GTEST_SKIP() << gguf << " absent: run `bash .ci/install`";
  std::ifstream f(std::string(SPECLAB_SOURCE_DIR) + "/tests/golden/smollm2.json");
  const auto golden = nlohmann::json::parse(f);
  const auto& p = golden["prompts"][0];
  const auto ids = p["ids"].get<std::vector<int32_t>>();
  const auto want = p["greedy"].get<std::vector<int32_t>>();
  for (const std::string args :
       {"--draft lookup:n=3 --tree 1x1x1x1", "--draft self:skip=14-15+26-27 --tree 3x2x1"}) {
    const CliResult r = run_speclab("generate --target '" + gguf + "' --prompt-ids " +
                                    ids_arg(ids) + " --temperature 0 --ignore-eos --json " +
                                    "--max-new-tokens " + std::to_string(want.size()) + " " + args);
    ASSERT_EQ(r.exit_code, 0) << args << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), want) << args;
    EXPECT_EQ(j["accepted"].get<int64_t>() + j["rounds"].get<int64_t>(),
              static_cast<int64_t>(want.size()));
  }
}

TEST(CliGenerateTree, ZooJsonReportsTheTree) {
  const CliResult r =
      run_speclab("generate --target " + kZoo + "tiny-target-5m --draft " + kZoo +
                  "tiny-draft-2m --prompt 'And God said' --temperature 1 "
                  "--seed 3 --max-new-tokens 24 --ignore-eos --json --tree 2x2:sample");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tree"], "2x2:sample");
  EXPECT_EQ(j["tokens"].size(), 24u);
  EXPECT_GT(j["tree_nodes"].get<int64_t>(), 0);
  EXPECT_LE(j["tree_nodes"].get<int64_t>(), 6 * j["rounds"].get<int64_t>());
  EXPECT_EQ(j["accepted"].get<int64_t>() + j["rounds"].get<int64_t>(), 24);
}

TEST(CliGenerateTree, BadTreeArgumentsExitTwoWithOneLine) {
  const std::string base = "generate --target " + kZoo + "tiny-target-5m --prompt 'And' ";
  const std::string draft = "--draft " + kZoo + "tiny-draft-0.5m ";
  const struct {
    std::string args, expect;
  } cases[] = {
      {base + "--tree 2x2", "--tree: needs --draft"},
      {base + draft + "--tree 2x0", "--tree: tree shape '2x0'"},
      {base + draft + "--tree 2x2:beam", "--tree: tree mode 'beam'"},
      {base + draft + "--tree 16x16", "drafts 272 nodes"},
      {base + draft + "--tree 2 --lenience 0.5", "does not combine"},
      {base + draft + "--tree 2 --synthetic-acceptance 0.5", "does not combine"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_speclab(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_TRUE(r.one_line_error()) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace speclab
