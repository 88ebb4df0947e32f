// Refusals before work starts: generation.ctx longer than the target's context
// (through `speclab run`, exit 2, naming the key), and longer than a draft model's.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "models/drafters/drafter.h"
#include "models/llama/llama_model.h"
#include "tests/experiments/experiments_test_util.h"
#include "tests/formats/expect_input_error.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

TEST(ContextLimits, RunRefusesCtxLongerThanTheTargetsBeforeWork) {
  ScratchDir d;
  // synthetic:tiny has max_seq_len 2048.
  const std::string config = d.write("ctx.yaml",
                                     "name: ctx-test\n"
                                     "question: \"too long a context\"\n"
                                     "target: synthetic:tiny\n"
                                     "drafters:\n"
                                     "  lookup: lookup\n"
                                     "generation:\n"
                                     "  max_new_tokens: 8\n"
                                     "  ctx: 4096\n"
                                     "measure:\n"
                                     "  cost_only: true\n"
                                     "sweep:\n"
                                     "  drafter: [lookup]\n"
                                     "  gamma: [2]\n"
                                     "  temperature: [0]\n");
  const std::string err = d.file("err");
  const std::string cmd = std::string("'") + SPECLAB_BIN + "' run '" + config + "' --out '" +
                          d.file("out") + "' --no-plots >/dev/null 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::stringstream ss;
  ss << std::ifstream(err).rdbuf();
  const std::string msg = ss.str();
  EXPECT_NE(msg.find("generation.ctx = 4096 exceeds the target's context length 2048"),
            std::string::npos)
      << msg;
  // The error is the last line (`speclab run` prints its cell count first).
  const size_t last = msg.rfind('\n', msg.size() - 2);
  EXPECT_NE(msg.substr(last == std::string::npos ? 0 : last + 1).find("generation.ctx"),
            std::string::npos)
      << msg;
  std::ifstream rows(d.file("out") + "/results.jsonl");
  std::string line;
  EXPECT_FALSE(std::getline(rows, line)) << "rows were written before the refusal";
}

TEST(ContextLimits, DraftModelWithAShorterContextIsRefused) {
  auto target = llama_load("synthetic:tiny");
  testing::expect_input_error(
      [&] { drafter_create("synthetic:tiny", *target, 4096); },
      {"drafter 'synthetic:tiny'", "4096", "generation.ctx", "context length 2048"});
  EXPECT_NO_THROW(drafter_create("synthetic:tiny", *target, 2048));
}

// The distilled SmolLM2 draft (its committed Q8_0 GGUF) serves the 2048-token context of
// chat-templated runs (configs/smollm2-distill-alpha.yaml, generation.ctx 2048) against the real
// target; a draft model with a 256-token context (the zoo's tiny-draft-0.5m) is refused there,
// naming its context.
TEST(ContextLimits, DistilledSmolLM2DraftServesCtx2048) {
  const char* home = std::getenv("HOME");
  const std::string gguf =
      std::string(home ? home : "") + "/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::ifstream(gguf).good()) GTEST_SKIP() << gguf << " not present";
  auto target = llama_load(gguf);
  const std::string zoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";
  testing::expect_input_error([&] { drafter_create(zoo + "tiny-draft-0.5m", *target, 2048); },
                              {"tiny-draft-0.5m", "2048", "generation.ctx", "context length 256"});
  const std::string draft_path = zoo + "smollm2-draft-distill/smollm2-draft-distill.Q8_0.gguf";
  auto draft = llama_load(draft_path);
  EXPECT_EQ(draft->config.max_seq_len, 2048);
  EXPECT_EQ(draft->config.rope_theta, 100000.0f);
  EXPECT_EQ(draft->config.vocab_size, target->config.vocab_size);
  EXPECT_NO_THROW(drafter_create(draft_path, *target, 2048));
  testing::expect_input_error([&] { drafter_create(draft_path, *target, 4096); },
                              {"smollm2-draft-distill.Q8_0.gguf", "4096", "context length 2048"});
}

}  // namespace
}  // namespace speclab
