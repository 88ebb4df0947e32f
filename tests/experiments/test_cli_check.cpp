// The acceptance-rate gate (speclab check) against the committed baseline: it passes on the
// current code, fails (exit 1) on a planted regression, and refuses a baseline that lacks a
// cell (exit 2).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::run_speclab;
using testing_util::ScratchDir;

const std::string kSrc = SPECLAB_SOURCE_DIR;
const std::string kConfig = kSrc + "/configs/gate.yaml";
const std::string kBaseline = kSrc + "/results/baselines/gate.jsonl";

std::vector<nlohmann::json> read_rows(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

std::string write_rows(const ScratchDir& dir, const std::vector<nlohmann::json>& rows) {
  std::ostringstream s;
  for (const auto& r : rows) s << r.dump() << "\n";
  return dir.write("baseline.jsonl", s.str());
}

TEST(CliCheck, PassesAgainstCommittedBaseline) {
  const auto r = run_speclab("check '" + kConfig + "' --baseline '" + kBaseline + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all 12 cells within"), std::string::npos) << r.out;
}

// A planted regression: the baseline claims a higher acceptance than the code delivers
// (what a real regression looks like from the other side), in one cell.
TEST(CliCheck, FailsOnPlantedRegression) {
  ScratchDir dir;
  auto rows = read_rows(kBaseline);
  ASSERT_EQ(rows.size(), 12u);
  rows[3]["alpha_empirical"] = rows[3]["alpha_empirical"].get<double>() + 0.2;
  rows[3]["tau"] = rows[3]["tau"].get<double>() + 0.5;
  const auto r = run_speclab("check '" + kConfig + "' --baseline '" + write_rows(dir, rows) + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("REGRESSION"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("1 of 12 cells"), std::string::npos) << r.err;
}

TEST(CliCheck, BaselineMissingACellIsBadInput) {
  ScratchDir dir;
  auto rows = read_rows(kBaseline);
  rows.pop_back();
  const auto r = run_speclab("check '" + kConfig + "' --baseline '" + write_rows(dir, rows) + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("no baseline row for cell"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace speclab
