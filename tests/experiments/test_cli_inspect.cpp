// `speclab inspect` end to end: the real SmolLM2 GGUF (text and --json), a synthetic shape,
// and bad inputs (exit code 2, one line on stderr naming the file).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/experiments/cli_runner.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;

const char* kSmolLM2 = "/root/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf";

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

TEST(CliInspect, SmolLM2Json) {
  if (!exists(kSmolLM2)) GTEST_SKIP() << kSmolLM2 << " absent (fetched by .ci/install)";
  CliResult r = run_speclab(std::string("inspect --json '") + kSmolLM2 + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["parameters"], 134515008);
  EXPECT_EQ(j["n_layers"], 30);
  EXPECT_EQ(j["dim"], 576);
  EXPECT_EQ(j["n_heads"], 9);
  EXPECT_EQ(j["n_kv_heads"], 3);
  EXPECT_EQ(j["head_dim"], 64);
  EXPECT_EQ(j["hidden_dim"], 1536);
  EXPECT_EQ(j["context_length"], 8192);
  EXPECT_EQ(j["rope"]["pairing"], "interleaved");
  EXPECT_EQ(j["rope"]["theta"], 100000.0);
  EXPECT_EQ(j["tie_embeddings"], true);
  // 30 layers * 7 matrices in Q4_1, 61 norms in F32, the tied embedding table in Q8_0.
  EXPECT_EQ(j["dtypes"]["Q4_1"]["tensors"], 210);
  EXPECT_EQ(j["dtypes"]["F32"]["tensors"], 61);
  EXPECT_EQ(j["dtypes"]["Q8_0"]["tensors"], 1);
  EXPECT_EQ(j["dtypes"]["Q8_0"]["bytes"], 30081024);
  EXPECT_EQ(j["weight_bytes_per_token"], 30 * 2216448 + 2304 + 30081024);
  EXPECT_EQ(j["tokenizer_vocab_size"], 49152);
  EXPECT_EQ(j["bos"]["id"], 1);
  EXPECT_EQ(j["bos"]["text"], "<|im_start|>");
  ASSERT_EQ(j["eos"].size(), 1u);
  EXPECT_EQ(j["eos"][0]["text"], "<|im_end|>");
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliInspect, SmolLM2Text) {
  if (!exists(kSmolLM2)) GTEST_SKIP() << kSmolLM2 << " absent (fetched by .ci/install)";
  CliResult r = run_speclab(std::string("inspect '") + kSmolLM2 + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* needle :
       {"format:        gguf", "parameters:    134515008 (134.5M)", "layers 30", "kv heads 3",
        "head_dim 64", "pairing interleaved", "tied", "Q4_1", "weight bytes per token: 96576768",
        "vocabulary 49152", "\"<|im_start|>\"", "\"<|im_end|>\""})
    EXPECT_NE(r.out.find(needle), std::string::npos) << "missing: " << needle << "\n" << r.out;
}

TEST(CliInspect, BadGgufFileExitsTwoWithOneLine) {
  testing::TempDir dir;
  const std::string path = dir.file("broken.gguf");
  static const char kBytes[] = "GGUF\x07\x00\x00\x00 and then nonsense";  // version 7
  const std::string bytes(kBytes, sizeof(kBytes) - 1);
  testing::write_text(path, bytes);
  CliResult r = run_speclab("inspect '" + path + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("version 7"), std::string::npos) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "stderr is not one line: " << r.err;
}

// K-quant tensors the file cannot hold as declared: rows not whole 256-value super-blocks, or
// data past the end of the file. Exit 2, one line naming the file and the tensor.
TEST(CliInspect, BadKQuantTensorsExitTwoWithOneLine) {
  testing::TempDir dir;
  const std::string path = dir.file("kquant.gguf");
  struct Case {
    uint64_t ne0;
    uint32_t type;
    size_t bytes;
    const char* needle;
  };
  for (const Case& c : {Case{320, testing::kGgmlQ4_K, 144, "not a multiple of 256 as Q4_K"},
                        Case{512, testing::kGgmlQ6_K, 210, "outside the data section"}}) {
    testing::GgufWriter w;
    w.str("general.architecture", "llama");
    w.tensor("blk.0.ffn_down.weight", {c.ne0}, c.type, testing::Bytes(c.bytes));
    testing::write_bytes(path, w.build());
    CliResult r = run_speclab("inspect '" + path + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'blk.0.ffn_down.weight'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "stderr is not one line: " << r.err;
  }
}

TEST(CliInspect, MissingPathAndMissingArgument) {
  CliResult r = run_speclab("inspect /nonexistent/model.gguf");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  r = run_speclab("inspect");
  EXPECT_EQ(r.exit_code, 2);
}

// Seen: /dev/zero, a FIFO named x.gguf and a link to /dev/zero were "no such file or
// directory". Expected: what they are, one line, exit 2, no read (a FIFO would block).
TEST(CliInspect, SpecialFilesAreNamedForWhatTheyAre) {
  testing::TempDir dir;
  const std::string fifo = dir.file("x.gguf");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string link = dir.file("z.gguf");
  ASSERT_EQ(symlink("/dev/zero", link.c_str()), 0);
  for (const auto& [path, kind] :
       {std::pair<std::string, std::string>{"/dev/zero", "a character device"},
        {fifo, "a FIFO (named pipe)"},
        {link, "a character device"}}) {
    const CliResult r = run_speclab("inspect '" + path + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find(path + ": is " + kind + ", expected a regular file (model file)"),
              std::string::npos)
        << r.err;
  }
}

TEST(CliInspect, HfDirectoryWithBadConfig) {
  testing::TempDir dir;
  testing::write_text(dir.file("config.json"), R"({"model_type": "llama", "vocab_size": 10})");
  CliResult r = run_speclab("inspect '" + dir.path() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir.file("config.json") + ": key 'hidden_size' missing"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace speclab
