// Per-category tables (experiments/results/category_tables.h): hand-made rows with known sums, so
// every cell is checked against its ratio of sums; then a small real run on the tiny zoo,
// whose `overall` column must equal the row's own alpha_empirical, tau and speedup.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/results/category_tables.h"
#include "experiments/results/result_tables.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

nlohmann::json sample(const std::string& id, const std::string& category, double bs, int bt,
                      double ss, int st, int rounds, int tested, int accepted, int emitted) {
  nlohmann::json s = {{"prompt_id", id},       {"repeat", 0},           {"baseline_s", bs},
                      {"baseline_tokens", bt}, {"spec_s", ss},          {"spec_tokens", st},
                      {"rounds", rounds},      {"drafted", 4 * rounds}, {"tested", tested},
                      {"accepted", accepted},  {"emitted", emitted}};
  if (!category.empty()) s["category"] = category;
  return s;
}

// Two categories: "code" (prompts a, b) and "chat" (c); a's second repeat joins its cluster.
nlohmann::json known_row() {
  return {{"cell_id", "cell-1"},
          {"drafter", "lookup"},
          {"temperature", 0.0},
          {"gamma", 4},
          {"gamma_policy", "fixed"},
          {"samples",
           {sample("a", "code", 1.0, 10, 0.5, 10, 4, 8, 6, 10),
            sample("c", "chat", 2.0, 10, 2.0, 10, 8, 10, 2, 10),
            sample("b", "code", 1.0, 10, 0.25, 10, 2, 8, 8, 10),
            sample("a", "code", 1.0, 10, 0.5, 10, 4, 8, 6, 10)}}};
}

const Table& named(const std::vector<Table>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t;
  ADD_FAILURE() << "no table " << name;
  static const Table none{};
  return none;
}

// The rows the tables read: declared result rows (experiments/results/result_row.h) of JSON rows.
struct AsRows {
  std::vector<ResultRow> rows;
  std::vector<const ResultRow*> pointers;
  operator const std::vector<const ResultRow*>&() const { return pointers; }
};
AsRows as_rows(const nlohmann::json& row) {
  AsRows r;
  r.rows.push_back(ResultRow::from_json(row, "test row"));
  r.pointers.push_back(&r.rows[0]);
  return r;
}

TEST(CategoryTables, EachColumnIsItsCategorysRatioOfSums) {
  const nlohmann::json row = known_row();
  const std::vector<Table> ts = category_tables_build(as_rows(row), /*machine=*/true);
  ASSERT_EQ(ts.size(), 3u);
  const Table& acc = named(ts, "category_acceptance");
  // Categories in order of first appearance, then overall; each with interval and count.
  const std::vector<std::string> want{
      "draft",      "T",          "gamma",   "policy",        "code",
      "code_ci_lo", "code_ci_hi", "code_n",  "chat",          "chat_ci_lo",
      "chat_ci_hi", "chat_n",     "overall", "overall_ci_lo", "overall_ci_hi",
      "overall_n"};
  EXPECT_EQ(acc.headers, want);
  ASSERT_EQ(acc.rows.size(), 1u);
  // Machine cells have 10 significant digits: compared to 1e-9.
  auto cell = [](const Table& t, const std::string& h) {
    for (size_t i = 0; i < t.headers.size(); i++)
      if (t.headers[i] == h) return std::stod(t.rows[0][i]);
    ADD_FAILURE() << h;
    return 0.0;
  };
  // code: a (2 repeats: 12 of 16) + b (8 of 8) = 20 / 24; chat: 2 / 10; all: 22 / 34.
  EXPECT_NEAR(cell(acc, "code"), 20.0 / 24, 1e-9);
  EXPECT_NEAR(cell(acc, "chat"), 2.0 / 10, 1e-9);
  EXPECT_NEAR(cell(acc, "overall"), 22.0 / 34, 1e-9);
  EXPECT_EQ(cell(acc, "code_n"), 2);  // prompts, not samples
  EXPECT_EQ(cell(acc, "chat_n"), 1);
  EXPECT_EQ(cell(acc, "overall_n"), 3);
  // Two clusters (a: 12/16, b: 8/8): every resample's ratio lies between the two.
  EXPECT_GE(cell(acc, "code_ci_lo"), 12.0 / 16 - 1e-12);
  EXPECT_LE(cell(acc, "code_ci_hi"), 1.0 + 1e-12);
  EXPECT_LE(cell(acc, "code_ci_lo"), cell(acc, "code"));
  EXPECT_GE(cell(acc, "code_ci_hi"), cell(acc, "code"));
  // One cluster: no spread.
  EXPECT_NEAR(cell(acc, "chat_ci_lo"), 0.2, 1e-9);
  EXPECT_NEAR(cell(acc, "chat_ci_hi"), 0.2, 1e-9);

  const Table& tau = named(ts, "category_tokens_per_round");
  EXPECT_NEAR(cell(tau, "code"), 30.0 / 10, 1e-9);  // 30 tokens in 4 + 4 + 2 rounds
  EXPECT_NEAR(cell(tau, "chat"), 10.0 / 8, 1e-9);
  EXPECT_NEAR(cell(tau, "overall"), 40.0 / 18, 1e-9);

  const Table& sp = named(ts, "category_speedup");
  // code: baseline 3 s / 30 tokens, speculative 1.25 s / 30 tokens: 2.4; chat: 1.0.
  EXPECT_NEAR(cell(sp, "code"), (3.0 / 30) / (1.25 / 30), 1e-9);
  EXPECT_NEAR(cell(sp, "chat"), 1.0, 1e-9);
  EXPECT_NEAR(cell(sp, "overall"), (5.0 / 40) / (3.25 / 40), 1e-9);
}

TEST(CategoryTables, ReadableCellsAndRowsWithoutCategories) {
  const nlohmann::json row = known_row();
  const std::vector<Table> ts = category_tables_build(as_rows(row), /*machine=*/false);
  const Table& acc = named(ts, "category_acceptance");
  EXPECT_EQ(acc.headers,
            (std::vector<std::string>{"draft", "T", "gamma", "policy", "code", "chat", "overall"}));
  EXPECT_EQ(acc.rows[0][0], "lookup");
  EXPECT_EQ(acc.rows[0][5], "0.200 [0.200, 0.200] n=1");
  EXPECT_EQ(acc.rows[0][4].substr(0, 6), "0.833 ");
  // Rows written before categories existed: no category tables at all.
  nlohmann::json old = known_row();
  for (auto& s : old["samples"]) s.erase("category");
  EXPECT_TRUE(category_tables_build(as_rows(old), false).empty());
  // A run without a baseline has no speedup table.
  nlohmann::json no_base = known_row();
  for (auto& s : no_base["samples"]) s["baseline_s"] = 0;
  const auto tb = category_tables_build(as_rows(no_base), false);
  ASSERT_EQ(tb.size(), 2u);
  EXPECT_EQ(tb[1].name, "category_tokens_per_round");
}

TEST(CategoryTables, CategoriesNamedLikeColumnsStayUnique) {
  nlohmann::json row = known_row();
  row["samples"][0]["category"] = "gamma";
  row["samples"][3]["category"] = "gamma";
  row["samples"][1]["category"] = "overall";
  for (bool machine : {false, true})
    for (const Table& t : category_tables_build(as_rows(row), machine))
      EXPECT_TRUE(table_headers_unique(t)) << t.name;
}

// A small real run: two prompt files of two categories on the tiny zoo; `speclab table`
// shows the category columns, and the overall column is the row's own figures.
TEST(CategoryTables, TinyRunTablesHaveTheCategoryColumns) {
  ScratchDir d;
  const std::string src = SPECLAB_SOURCE_DIR;
  const std::string qa = d.write(
      "qa.jsonl",
      "{\"id\": \"q1\", \"category\": \"qa\", \"text\": \"And he said unto them, Go ye into "
      "all the world\"}\n"
      "{\"id\": \"q2\", \"category\": \"qa\", \"text\": \"Call me Ishmael. Some years ago\"}\n");
  const std::string cfg =
      d.write("cat.yaml", "name: cat\nquestion: \"q\"\ntarget: " + src +
                              "/models/zoo/tiny-target-5m\n"
                              "drafters:\n  d: " +
                              src +
                              "/models/zoo/tiny-draft-0.5m\n"
                              "  lookup: \"lookup:n=2\"\n"
                              "prompts:\n  file: [" +
                              src + "/configs/prompts/tiny-in-domain.jsonl, " + qa +
                              "]\n  limit: 2\n"
                              "generation:\n  max_new_tokens: 16\n"
                              "  warmup: 0\n  threads: 1\n  ctx: 128\n"
                              "  ignore_eos: true\n"
                              "measure:\n  bootstrap_resamples: 20\n"
                              "sweep:\n  drafter: [d, lookup]\n"
                              "  gamma: [3]\n  temperature: [0]\n");
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(d.file("out/results.jsonl"));
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& s : rows[0]["samples"])
    EXPECT_EQ(s["category"], s["prompt_id"].get<std::string>()[0] == 'q' ? "qa" : "continuation");

  const CliResult t = run_speclab("table '" + d.file("out/results.jsonl") + "' --format json");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // `speclab run` left the same JSON beside tables.md, for the plots.
  std::ifstream tj(d.file("out/tables.json"));
  const std::string run_json((std::istreambuf_iterator<char>(tj)),
                             std::istreambuf_iterator<char>());
  EXPECT_EQ(run_json, t.out);
  const nlohmann::json tables = nlohmann::json::parse(t.out)["tables"];
  int found = 0;
  for (const auto& tab : tables) {
    const std::string name = tab["name"];
    if (name.rfind("category_", 0) != 0) continue;
    found++;
    const std::vector<std::string> cols = tab["columns"];
    EXPECT_EQ(std::vector<std::string>(cols.begin() + 4, cols.begin() + 8),
              (std::vector<std::string>{"continuation", "continuation_ci_lo", "continuation_ci_hi",
                                        "continuation_n"}));
    EXPECT_EQ(cols[8], "qa");
    EXPECT_EQ(cols[12], "overall");
    ASSERT_EQ(tab["rows"].size(), 2u);
    const char* own = name == "category_acceptance"         ? "alpha_empirical"
                      : name == "category_tokens_per_round" ? "tau"
                                                            : "speedup";
    for (size_t i = 0; i < 2; i++) {
      const auto& tr = tab["rows"][i];
      EXPECT_EQ(tr["draft"], rows[i]["drafter"]);
      EXPECT_NEAR(tr["overall"].get<double>(), rows[i][own].get<double>(), 1e-9) << name;
      EXPECT_EQ(tr["qa_n"], 2);
      EXPECT_EQ(tr["continuation_n"], 2);
    }
  }
  EXPECT_EQ(found, 3);
  const CliResult md = run_speclab("table '" + d.file("out/results.jsonl") + "'");
  EXPECT_NE(md.out.find("| draft | T | gamma | policy | continuation | qa | overall |"),
            std::string::npos)
      << md.out;
}

}  // namespace
}  // namespace speclab
