// The result row declared once (experiments/results/result_row.h): rows written before the
// declaration read back and write out unchanged; a field of the wrong type is one clear error; the
// generated field docs and the analysis scripts' field list are current; and no C++ file
// outside the declaration reads or writes a row field by its name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/error.h"
#include "experiments/results/result_row.h"
#include "experiments/results/results_store.h"

namespace speclab {
namespace {

const std::string kSrc = SPECLAB_SOURCE_DIR;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// Rows committed before the row was a struct (a gate baseline, a device run with predictions,
// a device end-to-end run): each reads into the struct and writes out as the same JSON,
// fields the declaration does not know included.
TEST(ResultRow, RowsFromBeforeTheDeclarationRoundTrip) {
  const auto rows = json_lines(kSrc + "/tests/data/result_rows/rows-before-declaration.jsonl");
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); i++) {
    const ResultRow r = ResultRow::from_json(rows[i], str_cat("row ", i));
    EXPECT_EQ(r.to_json(), rows[i]) << "row " << i;
    EXPECT_FALSE(r.cell.cell_id.empty());
    EXPECT_EQ(r.kind(), "measured");
  }
  // The gate baseline's row: figures read as members.
  const ResultRow gate = ResultRow::from_json(rows[0], "gate row");
  EXPECT_EQ(gate.cell.drafter, "draft-2m");
  EXPECT_EQ(gate.cell.gamma, 2);
  ASSERT_TRUE(gate.alpha_empirical.has_value());
  EXPECT_DOUBLE_EQ(*gate.alpha_empirical, rows[0]["alpha_empirical"].get<double>());
  ASSERT_TRUE(gate.samples.has_value());
  EXPECT_EQ(gate.samples->size(), rows[0]["samples"].size());
  // Fields the declaration retired stay in `extra`, so merge and resume keep them.
  EXPECT_TRUE(gate.extra.contains("round_overhead_s"));
  // The device row carries the out-of-sample prediction.
  const ResultRow device = ResultRow::from_json(rows[1], "device row");
  ASSERT_TRUE(device.predicted_speedup.has_value());
  EXPECT_DOUBLE_EQ(*device.predicted_speedup, rows[1]["predicted_speedup"].get<double>());
}

// Every committed results file still loads through the store's reader.
TEST(ResultRow, CommittedResultFilesLoad) {
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kSrc + "/results")) {
    if (e.path().filename() != "results.jsonl") continue;
    files++;
    const auto raw = json_lines(e.path().string());
    const auto rows = results_read(e.path().string());
    ASSERT_EQ(rows.size(), raw.size()) << e.path();
    for (size_t i = 0; i < rows.size(); i++) EXPECT_EQ(rows[i].to_json(), raw[i]) << e.path();
  }
  EXPECT_GE(files, 2);
}

TEST(ResultRow, KindIsWrittenOrInferred) {
  ResultRow r = ResultRow::from_json({{"cell_id", "a"}}, "x");
  EXPECT_EQ(r.kind(), "measured");
  r = ResultRow::from_json({{"cell_id", "a"}, {"predicted_grid", nlohmann::json::array()}}, "x");
  EXPECT_EQ(r.kind(), "cost_only");
  r = ResultRow::from_json({{"cell_id", "a"}, {"row_type", "cell"}}, "x");
  EXPECT_EQ(r.kind(), "predicted");
  r = ResultRow::from_json({{"cell_id", "a"}, {"row_kind", "cost_only"}}, "x");
  EXPECT_EQ(r.kind(), "cost_only");
}

TEST(ResultRow, RenamedFieldIsReadUnderItsNewName) {
  const ResultRow r =
      ResultRow::from_json({{"cell_id", "a"}, {"predicted_speedup_thm38", 1.25}}, "x");
  ASSERT_TRUE(r.thm38_speedup.has_value());
  EXPECT_DOUBLE_EQ(*r.thm38_speedup, 1.25);
  EXPECT_FALSE(r.to_json().contains("predicted_speedup_thm38"));
}

TEST(ResultRow, NanIsWrittenAsNullAndReadBack) {
  ResultRow r;
  r.cell.cell_id = "a";
  r.acceptance_by_position = std::vector<double>{0.5, NAN};
  r.speedup = NAN;
  const nlohmann::json j = nlohmann::json::parse(r.to_json().dump());
  EXPECT_TRUE(j["speedup"].is_null());
  const ResultRow back = ResultRow::from_json(j, "x");
  EXPECT_FALSE(back.speedup.has_value());  // null at the top level: absent
  ASSERT_TRUE(back.acceptance_by_position.has_value());
  EXPECT_TRUE(std::isnan((*back.acceptance_by_position)[1]));
}

// Bad input: one line naming where and the field.
TEST(ResultRow, WrongTypeNamesTheField) {
  const std::pair<nlohmann::json, std::string> cases[] = {
      {{{"cell_id", "a"}, {"speedup", "fast"}}, "r.jsonl:3: field speedup: expected a number"},
      {{{"cell_id", "a"}, {"rounds", 2.5}}, "r.jsonl:3: field rounds: expected an integer"},
      {{{"cell_id", "a"}, {"flags", "x"}}, "r.jsonl:3: field flags: expected a list"},
      {{{"cell_id", "a"}, {"samples", {{{"spec_s", "x"}}}}},
       "r.jsonl:3: field samples[0].spec_s: expected a number"},
      {{{"cell_id", "a"}, {"target_dtypes", {{"bf16", "many"}}}},
       "r.jsonl:3: field target_dtypes.bf16: expected an integer"},
      {{{"cell_id", "a"}, {"greedy_outputs_match", 1}},
       "r.jsonl:3: field greedy_outputs_match: expected true or false"},
  };
  for (const auto& [row, message] : cases) {
    try {
      ResultRow::from_json(row, "r.jsonl:3");
      ADD_FAILURE() << row.dump();
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
  }
}

// docs/result-fields.md and analysis/result_fields.json are generated from the declaration
// (`speclab result-fields [--json]`): a stale copy fails here.
TEST(ResultRow, FieldDocsAreCurrent) {
  EXPECT_EQ(read_text(kSrc + "/docs/result-fields.md"), result_fields_markdown())
      << "regenerate: build/bin/speclab result-fields > docs/result-fields.md";
  EXPECT_EQ(read_text(kSrc + "/analysis/result_fields.json"), result_fields_json().dump(1) + "\n")
      << "regenerate: build/bin/speclab result-fields --json > analysis/result_fields.json";
}

TEST(ResultRow, EveryFieldHasAMeaningAndAUniqueName) {
  std::set<std::string> names;
  for (const auto& f : result_row_fields()) {
    EXPECT_FALSE(f.meaning.empty()) << f.name;
    if (f.record == "row") {
      EXPECT_TRUE(names.insert(f.name).second) << "twice: " << f.name;
    }
  }
  EXPECT_GT(names.size(), 100u);
}

// A row field's name appears in C++ only in its declaration: nothing under experiments/ writes
// or reads `"<field>"` as a row key. Strings that equal a field name but are no row key are
// listed with what they are: files that write another format, and single words elsewhere.
TEST(ResultRow, NoFieldIsReadOrWrittenByName) {
  const std::set<std::string> other_formats = {
      "round_trace.cpp",  // --trace files: one line per round
      "round_trace.h",
      "experiment_config.cpp",  // the config file's own keys (generation.seed, ...)
      "cmd_simulate.cpp",       // the simulator's tables and CSV
      "cmd_generate.cpp",       // `generate --json`: one request's own stats
      "profile_io.cpp",         // profile files: a cost profile's "taken" names its commit and
      "profile_io.h",           // the sha256 of the weights it timed (docs/prediction.md)
  };
  const std::set<std::pair<std::string, std::string>> not_row_keys = {
      // Table names and the keys of table_json (result_tables.h).
      {"result_tables.cpp", "speedup"},
      {"result_tables.cpp", "tested"},
      {"result_tables.cpp", "tau"},
      {"result_tables.cpp", "flags"},
      {"table.cpp", "config_hash"},
      {"table.cpp", "experiment"},
      {"table.h", "config_hash"},
      {"table.h", "experiment"},
      // The gate's bands file and verdict (acceptance_gate.h).
      {"acceptance_gate.h", "config_hash"},
      {"acceptance_gate.cpp", "config_hash"},
      {"acceptance_gate.h", "tau"},
      {"acceptance_gate.cpp", "tau"},

      // A profile group's settings leave the config's generation.repeats out (cell_prediction.cpp).
      {"cell_prediction.cpp", "repeats"},
      {"cmd_check.cpp", "config_hash"},
      {"cmd_check.cpp", "tau"},
      {"cmd_check.cpp", "seed"},
      // The header comment naming the rows' flags field.
      {"run_flags.h", "flags"},
      // predictions.jsonl group rows (cell_prediction.h PredictionGroupRow::to_json).
      {"cell_prediction.cpp", "row_type"},
  };
  std::set<std::string> fields;
  for (const auto& f : result_row_fields())
    if (f.record == "row") fields.insert(f.name);
  std::vector<std::string> hits;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kSrc + "/experiments")) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.rfind("result_row", 0) == 0 || other_formats.count(name))
      continue;
    if (e.path().extension() != ".cpp" && e.path().extension() != ".h") continue;
    const std::string text = read_text(e.path().string());
    static const std::regex quoted("\"([a-z0-9_]+)\"");
    for (std::sregex_iterator it(text.begin(), text.end(), quoted), end; it != end; ++it) {
      const std::string word = (*it)[1];
      if (fields.count(word) && !not_row_keys.count({name, word}))
        hits.push_back(name + ": \"" + word + "\"");
    }
  }
  EXPECT_TRUE(hits.empty()) << "row fields used by name outside experiments/result_row.*:\n"
                            << [&] {
                                 std::string s;
                                 for (const auto& h : hits) s += "  " + h + "\n";
                                 return s;
                               }();
}

}  // namespace
}  // namespace speclab
