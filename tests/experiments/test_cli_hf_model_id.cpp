// Model paths as users write them, through the CLI: a Hugging Face model id finds its snapshot
// in a hub cache the test builds (HF_HUB_CACHE), and an id in no cache is bad input (exit 2,
// one line saying where speclab looked and that it does not download).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

namespace fs = std::filesystem;
using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

// HF_HUB_CACHE (inherited by the speclab child processes) for one test.
class HubCacheEnv {
 public:
  explicit HubCacheEnv(const std::string& hub) {
    if (const char* old = std::getenv("HF_HUB_CACHE")) old_ = old;
    setenv("HF_HUB_CACHE", hub.c_str(), 1);
  }
  ~HubCacheEnv() {
    if (old_)
      setenv("HF_HUB_CACHE", old_->c_str(), 1);
    else
      unsetenv("HF_HUB_CACHE");
  }

 private:
  std::optional<std::string> old_;
};

// <hub>/models--speclab-test--tiny-llama32 whose snapshot links the files of
// tests/data/tiny-llama32 (the hub's snapshots hold links into blobs/ too).
void add_tiny_llama32(const fs::path& hub) {
  const fs::path repo = hub / "models--speclab-test--tiny-llama32";
  const std::string hash = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << hash;
  const fs::path snapshot = repo / "snapshots" / hash;
  fs::create_directories(snapshot);
  const fs::path src = fs::path(SPECLAB_SOURCE_DIR) / "tests/data/tiny-llama32";
  for (const char* f : {"config.json", "model.safetensors"})
    fs::create_symlink(src / f, snapshot / f);
}

TEST(CliHfModelId, InspectAndGenerateFindTheSnapshotInTheHubCache) {
  ScratchDir dir;
  add_tiny_llama32(dir.path / "hub");
  HubCacheEnv env((dir.path / "hub").string());
  const CliResult inspect = run_speclab("inspect speclab-test/tiny-llama32 --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(nlohmann::json::parse(inspect.out).at("vocab_size"), 128256) << inspect.out;
  const CliResult gen = run_speclab(
      "generate --target speclab-test/tiny-llama32 --prompt-ids 1,2,3 --max-new-tokens 3 "
      "--temperature 0 --ignore-eos --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(nlohmann::json::parse(gen.out).at("tokens").size(), 3u);
}

TEST(CliHfModelId, IdInNoCacheExitsTwoWithOneLine) {
  ScratchDir dir;
  fs::create_directories(dir.path / "hub");
  HubCacheEnv env((dir.path / "hub").string());
  for (const std::string args :
       {"inspect meta-llama/Llama-3.2-3B-Instruct",
        "generate --target meta-llama/Llama-3.2-3B-Instruct --prompt-ids 1 --max-new-tokens 1",
        "tokenize --tokenizer meta-llama/Llama-3.2-3B-Instruct --text hi"}) {
    const CliResult r = run_speclab(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_TRUE(r.one_line_error()) << r.err;
    EXPECT_NE(r.err.find("models--meta-llama--Llama-3.2-3B-Instruct/refs/main"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find((dir.path / "hub").string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("speclab does not download"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace speclab
