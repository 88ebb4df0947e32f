// speclab ngram (build a bigram table, use it as a drafter) and speclab table (render the
// committed gate baseline in every format); their bad inputs exit 2 with one line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::run_speclab;

const std::string kSrc = SPECLAB_SOURCE_DIR;

TEST(CliNgram, BuildsATableThatDraftsWithGreedyParity) {
  testing_util::ScratchDir dir;
  const std::string corpus = dir.write("c.txt",
                                       "In the beginning God created the heaven and "
                                       "the earth. And the earth was without form.");
  const std::string table = dir.file("t.bigram");
  const auto b =
      run_speclab("ngram --tokenizer '" + kSrc + "/models/zoo/tokenizer.model' --corpus '" +
                  corpus + "' --out '" + table + "'");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("order 2, vocab 4096"), std::string::npos) << b.out;
  const std::string gen =
      "generate --target '" + kSrc +
      "/models/zoo/tiny-target-5m' --prompt "
      "'In the beginning' --temperature 0 --max-new-tokens 16 --ignore-eos --json";
  const auto base = nlohmann::json::parse(run_speclab(gen).out);
  const auto r = run_speclab(gen + " --gamma 3 --draft 'ngram:" + table + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"], base["tokens"]);
}

TEST(CliNgram, MissingCorpusIsBadInput) {
  testing_util::ScratchDir dir;
  const auto r =
      run_speclab("ngram --tokenizer '" + kSrc + "/models/zoo/tokenizer.model' --corpus '" +
                  dir.file("none.txt") + "' --out '" + dir.file("t") + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("none.txt: no such corpus file"), std::string::npos) << r.err;
}

// Seen: a FIFO or device as --corpus was called "no such corpus file", and /proc files
// (stat size 0) gave 0 tokens with exit 0. Expected: the file kind named; /proc read whole.
TEST(CliNgram, SpecialCorpusFilesAreNamedAndProcFilesRead) {
  testing_util::ScratchDir dir;
  const std::string fifo = dir.file("c.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string ngram = "ngram --tokenizer '" + kSrc + "/models/zoo/tokenizer.model' --out '" +
                            dir.file("t") + "' --corpus ";
  for (const auto& [path, kind] : {std::pair<std::string, std::string>{fifo, "a FIFO (named pipe)"},
                                   {"/dev/zero", "a character device"}}) {
    const auto r = run_speclab(ngram + "'" + path + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(r.one_line_error()) << r.err;
    EXPECT_NE(r.err.find(path + ": is " + kind + ", expected a regular file (corpus file)"),
              std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("t")));
  const auto proc = run_speclab(ngram + "/proc/self/status");
  ASSERT_EQ(proc.exit_code, 0) << proc.err;
  EXPECT_EQ(proc.out.find(" 0 tokens"), std::string::npos) << proc.out;
  EXPECT_NE(proc.out.find("tokens from 1 files"), std::string::npos) << proc.out;
}

// --out naming a corpus file would replace the text with the table: refused, the text stays.
TEST(CliNgram, OutputThatIsACorpusFileIsBadInputAndTheCorpusStays) {
  testing_util::ScratchDir dir;
  const std::string corpus = dir.write("c.txt", "the quick brown fox\n");
  const auto r =
      run_speclab("ngram --tokenizer '" + kSrc + "/models/zoo/tokenizer.model' --corpus '" +
                  dir.path.string() + "' --out '" + corpus + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find(corpus + ": is also a corpus file"), std::string::npos) << r.err;
  std::ifstream f(corpus);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), "the quick brown fox\n");
}

TEST(CliTable, RendersTheGateBaselineInEveryFormat) {
  const std::string base = kSrc + "/results/baselines/gate.jsonl";
  for (const std::string f : {"md", "csv --table acceptance", "latex", "json"}) {
    const auto r = run_speclab("table '" + base + "' --format " + f);
    ASSERT_EQ(r.exit_code, 0) << f << ": " << r.err;
    EXPECT_NE(r.out.find("draft-0.5m"), std::string::npos) << f;
  }
  EXPECT_NE(run_speclab("table '" + base + "' --format latex").out.find("\\begin{tabular}"),
            std::string::npos);
}

TEST(CliTable, BadInputExitsTwo) {
  const auto missing = run_speclab("table /nonexistent/results.jsonl");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(missing.one_line_error()) << missing.err;
  const auto format = run_speclab("table '" + kSrc + "/results/baselines/gate.jsonl' --format xls");
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("--format: 'xls'"), std::string::npos) << format.err;
}

}  // namespace
}  // namespace speclab
