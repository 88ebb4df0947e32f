// `speclab simulate` through the built binary (SPECLAB_BIN): Table 1 as printed in the paper,
// the analytic, curve, Monte Carlo and replay modes, and one test per bad argument (exit 2, one
// line on stderr naming the flag).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/speedup_theory.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "speclab_sim_" + std::to_string(::getpid()) + "_" + name;
}

// The simulate verb's result, with `rc` naming the exit code as these tests always did.
struct CliRun {
  int rc = -1;
  std::string out, err;
};

CliRun speclab_simulate(const std::string& args) {
  const auto r = testing_util::run_speclab("simulate " + args);
  return CliRun{r.exit_code, r.out, r.err};
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

TEST(CliSimulate, PaperTable1AsPublished) {
  // Transcribed from the paper's Table 1 (alpha, gamma, OPERATIONS, SPEED).
  const std::vector<std::string> expected = {"alpha\tgamma\tOPERATIONS\tSPEED",
                                             "0.6\t2\t1.53X\t1.96X",
                                             "0.7\t3\t1.58X\t2.53X",
                                             "0.8\t2\t1.23X\t2.44X",
                                             "0.8\t5\t1.63X\t3.69X",
                                             "0.9\t2\t1.11X\t2.71X",
                                             "0.9\t10\t1.60X\t6.86X"};
  const CliRun r = speclab_simulate("--table paper-table1");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> got = lines(r.out);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].rfind("# ", 0), 0u);  // a caption comment first
  got.erase(got.begin());
  EXPECT_EQ(got, expected);
}

TEST(CliSimulate, AnalyticJson) {
  const CliRun r = speclab_simulate("--alpha 0.8 --c 0.05 --gamma-max 10 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 10u);
  for (const auto& row : j["rows"]) {
    const int g = row["gamma"];
    EXPECT_NEAR(row["expected_tokens"].get<double>(), theory_expected_tokens(0.8, g), 1e-12);
    EXPECT_NEAR(row["speedup"].get<double>(), theory_walltime_speedup(0.8, 0.05, g), 1e-12);
    EXPECT_NEAR(row["operations"].get<double>(), theory_operations_factor(0.8, 0.0, g), 1e-12);
  }
  EXPECT_EQ(j["optimal_gamma"]["gamma"], 8);  // speedups 3.0823, 3.0921, 3.0780 at 7, 8, 9
  EXPECT_NEAR(j["corollary_3_9"]["gamma1_speedup"].get<double>(), 1.8 / 1.05, 1e-12);
  EXPECT_NEAR(j["oracle"]["speedup"].get<double>(), 1 / (0.2 + 0.04), 1e-12);
  // Text mode prints the same optimum.
  const CliRun t = speclab_simulate("--alpha 0.8 --c 0.05");
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_NE(t.out.find("optimal gamma (Theorem 3.8, gamma <= 10): 8, speedup 3.0921"),
            std::string::npos)
      << t.out;
}

TEST(CliSimulate, FigureCsv) {
  CliRun r = speclab_simulate("--figure 4");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<std::string> rows = lines(r.out);
  ASSERT_EQ(rows.size(), 1u + 100u * 6u);  // alpha 0..0.99 step 0.01, gamma 1,2,3,5,7,10
  EXPECT_EQ(rows[0], "alpha,c,c_hat,gamma,speedup,operations");
  // alpha 0.8, gamma 5 (Table 1): speed 3.68928, operations 6 / 3.68928.
  EXPECT_NE(r.out.find("\n0.8,0,0,5,3.68928,1.626333594\n"), std::string::npos);

  r = speclab_simulate("--figure 3");
  ASSERT_EQ(r.rc, 0) << r.err;
  rows = lines(r.out);
  ASSERT_EQ(rows.size(), 1u + 99u * 5u);  // alpha 0.01..0.99, c 0.01,0.02,0.05,0.1,0.2
  EXPECT_EQ(rows[0], "alpha,c,optimal_gamma,speedup,capped,oracle_speedup");
  EXPECT_NE(r.out.find("\n0.8,0.05,8,3.09207954"), std::string::npos);

  r = speclab_simulate("--curve speedup --alpha-grid 0.5:0.95:0.05 --c 0.05 --gamma-max 10");
  ASSERT_EQ(r.rc, 0) << r.err;
  rows = lines(r.out);
  ASSERT_EQ(rows.size(), 1u + 10u * 10u);
  EXPECT_EQ(rows[0], "alpha,c,c_hat,gamma,speedup");
  char last[64];  // alpha 0.95, gamma 10: (1 - 0.95^11) / (0.05 * 1.5)
  std::snprintf(last, sizeof last, "0.95,0.05,0,10,%.10g", theory_walltime_speedup(0.95, 0.05, 10));
  EXPECT_EQ(rows.back(), last);

  r = speclab_simulate("--figure 2 --format json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 600u);
  EXPECT_NEAR(j[0]["expected_tokens"].get<double>(), 1.0, 0.0);  // alpha 0
}

TEST(CliSimulate, MonteCarloMatchesClosedForms) {
  CliRun r = speclab_simulate(
      "--monte-carlo iid --alpha 0.7 --c 0.05 --gamma 4 --rounds 50000 "
      "--seed 3 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["closed_form"]["expected_tokens"].get<double>(), theory_expected_tokens(0.7, 4),
              1e-12);
  EXPECT_NEAR(j["simulated"]["tokens_per_round"].get<double>(),
              j["closed_form"]["expected_tokens"].get<double>(),
              3 * j["simulated"]["tokens_per_round_se"].get<double>());
  EXPECT_NEAR(j["simulated"]["speedup"].get<double>(), theory_walltime_speedup(0.7, 0.05, 4),
              3 * j["simulated"]["speedup_se"].get<double>());

  r = speclab_simulate(
      "--monte-carlo markov --markov 0.98,0.2,0.01,0.03 --gamma 6 "
      "--rounds 50000 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["closed_form"]["name"], "exact markov");
  EXPECT_NEAR(j["simulated"]["tokens_per_round"].get<double>(),
              j["closed_form"]["expected_tokens"].get<double>(),
              3 * j["simulated"]["tokens_per_round_se"].get<double>());
  EXPECT_NEAR(j["model"]["stationary_alpha"].get<double>(), 0.75 * 0.98 + 0.25 * 0.2, 1e-12);

  r = speclab_simulate("--monte-carlo iid --alpha 0.6 --c 0.02 --policy oracle --rounds 50000");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("section 3.5"), std::string::npos);
}

TEST(CliSimulate, ReplayTrace) {
  const std::string trace = write_file(
      "trace.jsonl",
      "{\"n_draft\":4,\"n_accepted\":4,\"beta\":[0.9,0.8,0.7,0.6]}\n{\"n_draft\":4,"
      "\"n_accepted\":1}\n{\"n_draft\":4,\"n_accepted\":0}\n\n{\"n_draft\":4,\"n_accepted\":4}\n"
      "{\"n_draft\":4,\"n_accepted\":2}\n");
  CliRun r = speclab_simulate("--replay " + trace + " --gamma 2 --c 0.1 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["replay"]["tokens"], 12);  // min(L, 2) + 1 = 3, 2, 1, 3, 3
  EXPECT_NEAR(j["replay"]["speedup"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(j["replay"]["imputed_rounds"], 0);
  EXPECT_NEAR(j["recorded"]["tokens_per_round"].get<double>(), 16.0 / 5, 1e-12);
  EXPECT_NEAR(j["recorded"]["alpha_mle"].get<double>(), 11.0 / 14, 1e-12);
  EXPECT_NEAR(j["recorded"]["alpha_beta"].get<double>(), 0.75, 1e-12);

  r = speclab_simulate("--replay " + trace + " --policy oracle --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["replay"]["imputed_rounds"], 2);
  r = speclab_simulate("--replay " + trace + " --policy heuristic --gamma 2 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["replay"]["drafted"], 15);
  std::remove(trace.c_str());
}

TEST(CliSimulate, BadArgumentsExit2WithOneLine) {
  const std::string good = write_file("good.jsonl", "{\"n_draft\":2,\"n_accepted\":1}\n");
  const std::string bad = write_file(
      "bad.jsonl", "{\"n_draft\":2,\"n_accepted\":1}\n{\"n_draft\":2,\"n_accepted\":1}\n{oops\n");
  const std::string bad_range = write_file("bad_range.jsonl", "{\"n_draft\":2,\"n_accepted\":3}\n");
  const std::string bad_accept =
      write_file("bad_accept.jsonl", "{\"n_draft\":2,\"n_accepted\":1,\"accept\":[true,true]}\n");
  const std::string bad_round =
      write_file("bad_round.jsonl", "{\"n_draft\":2,\"n_accepted\":1,\"round\":\"x\"}\n");
  struct Case {
    std::string args, needle;
  };
  const std::vector<Case> cases = {
      {"--alpha 1", "--alpha: expected a number in [0, 1)"},
      {"--alpha -0.1", "--alpha: expected a number in [0, 1)"},
      {"--alpha 0.5 --c -0.1", "--c: expected a number >= 0"},
      {"--alpha 0.5 --c-hat -1", "--c-hat: expected a number >= 0"},
      {"--alpha 0.5 --gamma 0", "--gamma: expected an integer in 1..100000"},
      {"--alpha 0.5 --gamma-max 0", "--gamma-max: expected an integer in 1..100000"},
      // Seen: 2147483647 accepted (7.8 s of search); '' meant c = 0; a trailing comma dropped.
      {"--alpha 0.5 --gamma 2147483647", "--gamma: expected an integer in 1..100000"},
      // Seen: options of another mode ignored, even with a bad value; a seed of -1 wrapped.
      {"--alpha 0.5 --rounds 10",
       "--rounds: only for --monte-carlo; with --alpha (the analytic "
       "table) it would be ignored"},
      {"--alpha 0.5 --policy bogus", "--policy: only for --monte-carlo and --replay"},
      {"--table paper-table1 --alpha 0.5", "--alpha: only for the analytic table and"},
      {"--alpha 0.5 --format json", "--format: only for --figure and --curve"},
      {"--monte-carlo iid --alpha 0.5 --seed 9007199254740992",
       "--seed: '9007199254740992' is not a whole number in [0, 9007199254740991]"},
      {"--monte-carlo iid --alpha 0.5 --seed -1", "--seed: '-1' is not a whole number"},
      {"--replay " + bad_accept + " --gamma 2",
       bad_accept + ":1: 'accept' must be 2 booleans, the first n_accepted = 1 true"},
      {"--replay " + bad_round + " --gamma 2", bad_round + ":1: 'round' must be an integer >= 0"},
      {"--alpha 0.5 --gamma-max 100001", "--gamma-max: expected an integer in 1..100000"},
      {"--curve speedup --alpha-grid 0:0.5:0.1 --c-list ''", "--c-list: an empty value"},
      {"--curve speedup --alpha-grid 0:0.5:0.1 --c-list 0.1,", "--c-list: expected a comma list"},
      {"--curve speedup, --alpha-grid 0:0.5:0.1", "--curve: expected"},
      {"--curve speedup --alpha-grid 0:0.5:0.1 --gamma-list 2,,3", "--gamma-list: expected"},
      {"--curve speedup --alpha-grid 0:0.5:", "--alpha-grid: expected LO:HI:STEP"},
      {"--alpha abc", "--alpha"},
      {"--table paper-table9", "--table: unknown table 'paper-table9'"},
      {"", "simulate: give --alpha"},
      {"--table paper-table1 --monte-carlo iid", "simulate: give one of"},
      {"--figure 5", "--figure: expected 2, 3 or 4"},
      {"--curve speed --alpha-grid 0:0.5:0.1", "--curve: expected"},
      {"--curve speedup", "--curve: needs --alpha-grid"},
      {"--curve speedup --alpha-grid 0:1:0.1", "--alpha-grid: expected LO:HI:STEP"},
      {"--curve speedup --alpha-grid 0:0.5", "--alpha-grid: expected LO:HI:STEP"},
      {"--curve speedup --alpha-grid 0:0.9:1e-9",
       "--alpha-grid: '0:0.9:1e-9' has 9e+08 points, expected at most 1e6 (a larger STEP)"},
      {"--figure 3 --c-list 0.1,x", "--c-list: expected"},
      {"--figure 2 --gamma-list 0,2", "--gamma-list: expected integers >= 1"},
      {"--figure 2 --format xml", "--format: expected csv or json"},
      {"--monte-carlo gauss --alpha 0.5", "--monte-carlo: expected iid or markov"},
      {"--monte-carlo iid", "--monte-carlo iid: needs --alpha"},
      {"--monte-carlo iid --alpha 0.5 --rounds 0", "--rounds: expected an integer in [1"},
      {"--monte-carlo iid --alpha 0.5 --policy greedy", "--policy: expected fixed, heuristic"},
      {"--monte-carlo markov", "--monte-carlo markov: needs exactly one of --markov"},
      {"--monte-carlo markov --markov 0.9,0.3,0.1", "--markov: expected a_easy,a_hard"},
      {"--monte-carlo markov --markov 0.9,1.3,0.1,0.1", "--markov: markov model: a_hard"},
      {"--replay " + good, "--replay: needs --gamma G or --policy"},
      {"--replay /nonexistent/trace.jsonl --gamma 2", "/nonexistent/trace.jsonl: cannot open"},
      {"--replay " + bad + " --gamma 2", bad + ":3: not valid JSON"},
      {"--replay " + bad_range + " --gamma 2", bad_range + ":1: 'n_accepted' must lie in"},
      {"--replay " + good + " --policy fixed --gamma -1", "--gamma: expected an integer in 1.."},
  };
  for (const Case& c : cases) {
    const CliRun r = speclab_simulate(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\nstderr: " << r.err;
    EXPECT_EQ(lines(r.err).size(), 1u) << c.args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\nstdout: " << r.out;
  }
  for (const std::string& p : {good, bad, bad_range, bad_accept, bad_round}) std::remove(p.c_str());
}

}  // namespace
}  // namespace speclab
