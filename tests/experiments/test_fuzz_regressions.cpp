// Inputs that crashed tests/fuzz/fuzz_experiment_config, kept as regression tests:
// invalid UTF-8 in a config string reached nlohmann::json::dump() (config hash, result rows)
// and escaped as json::type_error; YAML error text quoted control bytes. Each must now be a
// one-line InputError, the UTF-8 one naming the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/trace_simulator.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/prompt_set.h"
#include "experiments/results/results_store.h"
#include "tests/experiments/experiments_test_util.h"

namespace speclab {
namespace {

TEST(FuzzRegressions, ExperimentConfigCrashInputsAreOneLineInputErrors) {
  const std::string dir =
      std::string(SPECLAB_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_experiment_config";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(e.path().string());
    n++;
    try {
      ExperimentConfig c = experiment_config_load(e.path().string());
      c.config_hash();  // dumps every string as JSON
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& err) {
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos) << err.what();
    }
  }
  EXPECT_GT(n, 0);
}

TEST(FuzzRegressions, InvalidUtf8InConfigNamesTheLine) {
  testing_util::ScratchDir d;
  const std::string path =
      d.write("bad.yaml", "name: x\nquestion: \"caf\xe9\"\nsimulate:\n  table: paper-table1\n");
  try {
    experiment_config_load(path);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: invalid UTF-8 byte 0xe9"), std::string::npos)
        << e.what();
  }
}

// The JSON readers caught json::parse_error only; a number that overflows a double (1e999)
// throws json::out_of_range (found by fuzz_tokenizer_json; the same code shape was here).
TEST(FuzzRegressions, JsonNumberOverflowIsABadLineNotACrash) {
  testing_util::ScratchDir d;
  const std::string prompts = d.write("p.jsonl",
                                      "{\"id\": \"a\", \"text\": \"x\"}\n"
                                      "{\"id\": \"b\", \"text\": \"y\", \"w\": 1e999}\n");
  try {
    prompt_set_load(prompts);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(prompts + ":2: not valid JSON"), std::string::npos)
        << e.what();
  }
  const std::string rows = d.write("r.jsonl", "{\"cell_id\": \"c\", \"x\": 2e400}\n");
  try {
    results_read(rows);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(rows + ":1: not a valid JSON row"), std::string::npos)
        << e.what();
  }
  try {
    trace_parse("{\"n_draft\": 4, \"n_accepted\": 1e999}\n", "t.jsonl");
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:1: not valid JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace speclab
