// speclab table's machine formats and its per-config separation: CSV is one tidy table per
// file (unique header, every row the header's field count), JSON carries the same tables, and
// rows of different configs are never pooled; speclab merge refuses mixed configs unless asked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::run_speclab;
using testing_util::ScratchDir;

const std::string kSrc = SPECLAB_SOURCE_DIR;
// The gate's baseline as committed on 2026-11-23 (12 cells: 3 drafters x gamma 2, 4 x T 0, 1),
// frozen here so that these format tests do not move with each refresh of the gate.
const std::string kBaseline = kSrc + "/tests/data/result_rows/gate-12-cells.jsonl";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// RFC 4180 records: fields split at commas outside double quotes, "" inside quotes is ".
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        i++;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rec.push_back(field);
      field.clear();
    } else if (c == '\n') {
      rec.push_back(field);
      records.push_back(rec);
      rec.clear();
      field.clear();
      any = false;
    } else {
      field += c;
    }
  }
  if (any) {  // a last line without its newline
    rec.push_back(field);
    records.push_back(rec);
  }
  return records;
}

// Every table of the gate baseline as one CSV file each: a unique header and rows of the
// header's width; pandas, when installed, loads each with its defaults to the same shape.
TEST(CliTableFormats, CsvIsOneTidyTablePerFile) {
  ScratchDir dir;
  const auto r =
      run_speclab("table '" + kBaseline + "' --format csv --out '" + dir.file("t") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("t")))
    files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 3u) << r.out;  // acceptance, gamma, speedup
  for (const auto& f : files) {
    EXPECT_EQ(std::filesystem::path(f).extension(), ".csv");
    const std::string text = slurp(f);
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_NE(text[0], '#') << f;                          // no title line
    EXPECT_EQ(text.find("\n\n"), std::string::npos) << f;  // no blank line
    const auto records = parse_csv(text);
    ASSERT_GE(records.size(), 2u) << f;
    const auto& header = records[0];
    EXPECT_EQ(std::set<std::string>(header.begin(), header.end()).size(), header.size())
        << f << ": duplicate column names";
    for (size_t i = 1; i < records.size(); i++)
      EXPECT_EQ(records[i].size(), header.size()) << f << " record " << i;
    for (const auto& row :
         std::vector<std::vector<std::string>>(records.begin() + 1, records.end()))
      for (const auto& cell : row) EXPECT_NE(cell, "-") << f;  // no value is an empty field
  }
  const std::string speedup = slurp(dir.file("t/speedup.csv"));
  EXPECT_EQ(parse_csv(speedup).size(), 13u);  // header + 12 cells
  EXPECT_NE(speedup.find("speedup_ci_lo,speedup_ci_hi"), std::string::npos) << speedup;

  // pandas, if this machine has it (the test does not depend on it).
  if (std::system("python3 -c 'import pandas' >/dev/null 2>&1") == 0) {
    for (const auto& f : files) {
      const auto records = parse_csv(slurp(f));
      const std::string cmd =
          "python3 -c \"import pandas, sys; d = pandas.read_csv(sys.argv[1]); "
          "sys.exit(0 if d.shape == (" +
          std::to_string(records.size() - 1) + ", " + std::to_string(records[0].size()) +
          ") and d.columns.is_unique and not any(str(c).startswith('Unnamed') for c in d.columns) "
          "else 1)\" '" +
          f + "'";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << f;
    }
  }
}

TEST(CliTableFormats, CsvToStdoutNeedsOneTable) {
  const auto many = run_speclab("table '" + kBaseline + "' --format csv");
  EXPECT_EQ(many.exit_code, 2) << many.out;
  EXPECT_TRUE(many.one_line_error()) << many.err;
  EXPECT_NE(many.err.find("3 tables; CSV holds one table per file"), std::string::npos) << many.err;
  const auto one = run_speclab("table '" + kBaseline + "' --format csv --table acceptance");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto records = parse_csv(one.out);
  ASSERT_EQ(records.size(), 7u);  // header + 3 drafters x 2 temperatures
  EXPECT_EQ(records[0], (std::vector<std::string>{"target", "draft", "T", "alpha_profile",
                                                  "alpha_profile_ci_lo", "alpha_profile_ci_hi",
                                                  "accepted/tested", "tested"}));
  const auto bad = run_speclab("table '" + kBaseline + "' --format csv --table nope");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(bad.one_line_error()) << bad.err;
  EXPECT_NE(bad.err.find("--table: 'nope'"), std::string::npos) << bad.err;
}

// JSON: the same tables, numbers as numbers, no value as null; the acceptance table's alpha
// is accepted / tested of the rows.
TEST(CliTableFormats, JsonHoldsTheTables) {
  const auto r = run_speclab("table '" + kBaseline + "' --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tables"].size(), 3u);
  std::set<std::string> names;
  for (const auto& t : j["tables"]) {
    names.insert(t["name"].get<std::string>());
    EXPECT_EQ(t["config_hash"], "fdd93c1303bb44fe");
    for (const auto& row : t["rows"]) EXPECT_EQ(row.size(), t["columns"].size());
  }
  EXPECT_EQ(names, (std::set<std::string>{"acceptance", "speedup", "gamma"}));
  const auto& acc = j["tables"][0];
  ASSERT_EQ(acc["name"], "acceptance");
  double accepted = 0, tested = 0;
  for (const auto& row : [] {
         std::vector<nlohmann::json> v;
         std::ifstream f(kBaseline);
         std::string line;
         while (std::getline(f, line)) v.push_back(nlohmann::json::parse(line));
         return v;
       }())
    if (row["drafter"] == "lookup" && row["temperature"] == 0.0) {
      accepted += row["accepted"].get<double>();
      tested += row["tested"].get<double>();
    }
  bool found = false;
  for (const auto& row : acc["rows"])
    if (row["draft"] == "lookup" && row["T"] == 0) {
      found = true;
      EXPECT_NEAR(row["accepted/tested"].get<double>(), accepted / tested, 1e-9);
      EXPECT_EQ(row["tested"].get<double>(), tested);
    }
  EXPECT_TRUE(found) << acc.dump();
  const auto& speedup = j["tables"][1];
  EXPECT_TRUE(speedup["rows"][0]["speedup"].is_null()) << speedup["rows"][0];  // no timing
}

// Two configs in one file (merged with --allow-mixed-configs): merge without the flag is bad
// input naming both hashes and files; the tables keep the configs apart (each acceptance
// table counts its own config's drafts only).
TEST(CliTableFormats, MixedConfigsAreRefusedByMergeAndNeverPooledByTable) {
  ScratchDir dir;
  std::string other;
  {
    std::ifstream f(kBaseline);
    std::string line;
    while (std::getline(f, line)) {
      auto row = nlohmann::json::parse(line);
      row["config_hash"] = "0123456789abcdef";
      row["experiment"] = "other";
      other += row.dump() + "\n";
    }
  }
  const std::string b = dir.write("other.jsonl", other);
  const std::string out = dir.file("all.jsonl");
  const auto refused = run_speclab("merge '" + out + "' '" + kBaseline + "' '" + b + "'");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_TRUE(refused.one_line_error()) << refused.err;
  for (const std::string& s : {std::string("0123456789abcdef"), std::string("fdd93c1303bb44fe"),
                               b + ":1", kBaseline + ":1", std::string("--allow-mixed-configs")})
    EXPECT_NE(refused.err.find(s), std::string::npos) << s << " in " << refused.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  const auto kept =
      run_speclab("merge '" + out + "' '" + kBaseline + "' '" + b + "' --allow-mixed-configs");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_NE(kept.out.find("24 rows"), std::string::npos) << kept.out;

  const auto md = run_speclab("table '" + out + "'");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("config fdd93c1303bb44fe (gate): Acceptance"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("config 0123456789abcdef (other): Acceptance"), std::string::npos);
  // draft-2m at T 0 tested 993 drafts in each config; a pooled table would say 1986.
  EXPECT_EQ(md.out.find("1986"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| draft-2m | 0.0 | - | - | - | 0.581 | 993 |"), std::string::npos)
      << md.out;

  const auto csv = run_speclab("table '" + out + "' --format csv --out '" + dir.file("t") + "'");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("t/acceptance-fdd93c1303bb44fe.csv")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("t/acceptance-0123456789abcdef.csv")));
  const auto one = run_speclab("table '" + out + "' --format csv --table acceptance");
  EXPECT_EQ(one.exit_code, 2) << one.out;  // two acceptance tables: needs --out
  EXPECT_NE(one.err.find("several configs"), std::string::npos) << one.err;
}

}  // namespace
}  // namespace speclab
