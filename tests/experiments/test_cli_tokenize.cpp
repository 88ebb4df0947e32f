// `speclab tokenize` end to end with the Llama 3 tokenizer.json, the tiny SentencePiece
// model, and bad paths (exit code 2, one line on stderr naming the file).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/experiments/cli_runner.h"
#include "tests/external_test_data.h"

namespace speclab {
namespace {

using TokenizeRun = testing_util::CliResult;

TokenizeRun run_tokenize(const std::string& args) {
  return testing_util::run_speclab("tokenize " + args);
}

TEST(CliTokenize, Llama3TokenizerJson) {
  const std::string kLlama3Json = testing::external_data("llama3-tokenizer/tokenizer.json");
  if (kLlama3Json.empty())
    GTEST_SKIP() << testing::external_data_skip_reason("llama3-tokenizer/tokenizer.json");
  const auto r = run_tokenize("--tokenizer '" + kLlama3Json + "' --text 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "128000 9906 1917\n");

  const auto no_bos =
      run_tokenize("--tokenizer '" + kLlama3Json + "' --text 'Hello world' --no-bos");
  EXPECT_EQ(no_bos.out, "9906 1917\n");

  // A model directory works too (it holds tokenizer.json).
  const auto dir =
      run_tokenize("--tokenizer '" + std::filesystem::path(kLlama3Json).parent_path().string() +
                   "' --text 'Hello world' --json");
  ASSERT_EQ(dir.exit_code, 0) << dir.err;
  const auto json = nlohmann::json::parse(dir.out);
  EXPECT_EQ(json.at("ids"), nlohmann::json::parse("[128000, 9906, 1917]"));
  EXPECT_EQ(json.at("pieces"),
            nlohmann::json::parse(R"(["<|begin_of_text|>", "Hello", "Ġworld"])"));
}

TEST(CliTokenize, SentencePieceModel) {
  const std::string model = std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny_spm_bpe.model";
  const auto r = run_tokenize("--tokenizer '" + model + "' --text 'Call me Ishmael.'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 331 373 334 290 273 332 287 337 339 344 334 332 341 354\n");
}

TEST(CliTokenize, MissingFileIsExitTwoWithOneLine) {
  const auto r = run_tokenize("--tokenizer /nonexistent/tokenizer.json --text hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/tokenizer.json"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// Seen: bytes that are no UTF-8 (and lone surrogates) became U+FFFD without a word.
TEST(CliTokenize, TextThatIsNotUtf8IsRefusedNamingTheByte) {
  const std::string model = std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny_spm_bpe.model";
  for (const auto& [bytes, needle] :
       {std::pair<std::string, std::string>{"a\\377\\376b", "invalid UTF-8 byte 0xFF at byte 1"},
        {"x\\355\\240\\200", "invalid UTF-8 byte 0xED at byte 1"}}) {
    const auto r = run_tokenize("--tokenizer '" + model + "' --text \"$(printf '" + bytes + "')\"");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--text: " + needle + " (expected UTF-8 text)"), std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(CliTokenize, NotATokenizerIsExitTwo) {
  testing_util::ScratchDir dir;
  const std::string bad = dir.write("tokenizer.json", "{\"model\": ");
  const auto r = run_tokenize("--tokenizer '" + bad + "' --text hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace speclab
