// `speclab run` leaves beside results.jsonl what the HTML report (analysis/report_html.py)
// shows besides the rows: the config file as written (config.yaml, header comment included)
// and the resolved config with the --set overrides applied (config.resolved.json). With
// --no-plots no report is written.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::file_exists;
using testing_util::run_speclab;
using testing_util::ScratchDir;

std::string slurp(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

TEST(CliRunReportInputs, CopiesTheConfigAndWritesTheResolvedConfig) {
  ScratchDir d;
  const std::string src = SPECLAB_SOURCE_DIR;
  const std::string text =
      "# Question: does the report get this header?\n"
      "name: rep\n"
      "question: \"does the report get this header?\"\n"
      "target: " +
      src +
      "/models/zoo/tiny-target-5m\n"
      "drafters:\n"
      "  lookup: \"lookup:n=3\"\n"
      "prompts:\n"
      "  file: " +
      src +
      "/configs/prompts/tiny-in-domain.jsonl\n"
      "  limit: 1\n"
      "generation:\n"
      "  max_new_tokens: 4\n"
      "  warmup: 0\n"
      "  threads: 1\n"
      "  ctx: 256\n"
      "measure:\n"
      "  baseline: false\n"
      "  cost_curve_max_k: 4\n"
      "sweep:\n"
      "  drafter: [lookup]\n"
      "  gamma: [1, 3]\n"
      "  temperature: [0]\n";
  const std::string cfg = d.write("rep.yaml", text);
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") +
                                  "' --no-plots --set 'sweep.gamma=[2]'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(d.file("out/config.yaml")), text);
  const auto resolved = nlohmann::json::parse(slurp(d.file("out/config.resolved.json")));
  EXPECT_EQ(resolved["sweep"]["gamma"], nlohmann::json::parse("[2]"));  // the override
  EXPECT_EQ(resolved["question"], "does the report get this header?");
  EXPECT_EQ(resolved["generation"]["max_new_tokens"], 4);
  EXPECT_FALSE(file_exists(d.file("out/index.html")));  // --no-plots: no report
}

}  // namespace
}  // namespace speclab
