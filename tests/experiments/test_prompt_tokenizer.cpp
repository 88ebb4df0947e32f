// prompts.tokenizer: prompts of a target without a tokenizer (synthetic shapes) are encoded
// with a named tokenizer; configs without the key keep their hash; bad tokenizers exit 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "experiments/config/experiment_config.h"
#include "tests/experiments/experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

std::string config(const std::string& target, const std::string& tokenizer_line) {
  return "name: ptok\n"
         "question: \"prompt tokenizer\"\n"
         "target: " +
         target +
         "\n"
         "drafters:\n"
         "  lookup: lookup\n"
         "prompts:\n"
         "  file: " +
         std::string(SPECLAB_SOURCE_DIR) +
         "/configs/prompts/tiny-in-domain.jsonl\n"
         "  limit: 1\n" +
         tokenizer_line +
         "generation:\n"
         "  max_new_tokens: 4\n"
         "  warmup: 0\n"
         "  ctx: 256\n"
         "measure:\n"
         "  cost_curve_max_k: 3\n"
         "  bootstrap_resamples: 10\n"
         "sweep:\n"
         "  drafter: [lookup]\n"
         "  gamma: [2]\n"
         "  temperature: [0]\n";
}

struct Ran {
  int exit_code = -1;
  std::string err;
};

Ran run(const ScratchDir& d, const std::string& cfg_text) {
  const std::string cfg = d.write("c.yaml", cfg_text);
  const std::string cmd = std::string("'") + SPECLAB_BIN + "' run '" + cfg + "' --out '" +
                          d.file("out") + "' --no-plots >/dev/null 2>'" + d.file("err") + "'";
  const int status = std::system(cmd.c_str());
  Ran r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream ss;
  ss << std::ifstream(d.file("err")).rdbuf();
  r.err = ss.str();
  return r;
}

const std::string kZoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";

TEST(PromptTokenizer, AbsentKeyKeepsTheHashPresentKeyChangesIt) {
  ScratchDir d;
  const auto plain = experiment_config_load(d.write("a.yaml", config(kZoo + "tiny-target-5m", "")));
  const auto with = experiment_config_load(d.write(
      "b.yaml", config(kZoo + "tiny-target-5m", "  tokenizer: " + kZoo + "tokenizer.model\n")));
  EXPECT_FALSE(plain.to_json()["prompts"].contains("tokenizer"));
  EXPECT_EQ(with.to_json()["prompts"]["tokenizer"], kZoo + "tokenizer.model");
  EXPECT_NE(plain.config_hash(), with.config_hash());
}

TEST(PromptTokenizer, RunsWithTheNamedTokenizer) {
  ScratchDir d;
  const Ran r =
      run(d, config(kZoo + "tiny-target-5m", "  tokenizer: " + kZoo + "tokenizer.model\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream rows(d.file("out") + "/results.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(rows, line)) n += !line.empty();
  EXPECT_EQ(n, 1);
}

TEST(PromptTokenizer, BadTokenizersExitTwoWithOneLine) {
  ScratchDir d;
  const struct {
    std::string text, expect;
  } cases[] = {
      {config("synthetic:tiny", ""),
       "has no tokenizer to encode the prompts with (set prompts.tokenizer)"},
      {config("synthetic:tiny", "  tokenizer: " + std::string(SPECLAB_SOURCE_DIR) +
                                    "/tests/data/tiny_spm_bpe.model\n"),
       "prompts.tokenizer: "},
      {config("synthetic:tiny", "  tokenizer: /nonexistent/tokenizer.json\n"),
       "/nonexistent/tokenizer.json"},
  };
  for (const auto& c : cases) {
    const Ran r = run(d, c.text);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_FALSE(std::ifstream(d.file("out") + "/results.jsonl").good()) << "partial results";
  }
}

}  // namespace
}  // namespace speclab
