// The GGUF tokenizer of SmolLM2 reproduces the prompt ids transformers fed the model in the
// golden files (tests/golden/smollm2.json), chat template and special tokens included.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/llama/llama_model.h"

namespace speclab {
namespace {

TEST(GoldenTokenizer, SmolLM2GgufTokenizerMatchesTransformersIds) {
  const char* cache = std::getenv("SPECLAB_CACHE");
  const char* home = std::getenv("HOME");
  const std::string path =
      (cache ? std::string(cache) : std::string(home ? home : "/root") + "/.cache/speclab") +
      "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::ifstream(path).good()) GTEST_SKIP() << path << " absent: run `bash .ci/install`";
  auto model = llama_load(path);
  ASSERT_NE(model->tokenizer, nullptr);
  std::ifstream f(std::string(SPECLAB_SOURCE_DIR) + "/tests/golden/smollm2.json");
  const auto golden = nlohmann::json::parse(f);
  for (const auto& p : golden["prompts"]) {
    EXPECT_EQ(model->tokenizer->encode(p["text"].get<std::string>(), /*add_bos=*/true),
              p["ids"].get<std::vector<int32_t>>())
        << p["name"];
  }
}

}  // namespace
}  // namespace speclab
