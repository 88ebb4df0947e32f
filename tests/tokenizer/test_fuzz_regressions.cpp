// Inputs that crashed tests/fuzz/fuzz_tokenizer_model and fuzz_tokenizer_json, kept as regression
// tests: libsentencepiece's error text quoted a byte piece holding a newline, so the
// InputError was two lines; and a model with an empty piece made its trie builder throw a
// std::exception (darts.h "zero-length key") past our loader. Each must now be a one-line
// InputError.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "models/formats/gguf.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {
namespace {

TEST(FuzzRegressions, TokenizerModelCrashInputsAreOneLineInputErrors) {
  const std::string dir =
      std::string(SPECLAB_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_tokenizer_model";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(e.path().string());
    n++;
    try {
      tokenizer_load_sentencepiece(e.path().string());
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& err) {
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos) << err.what();
    }
  }
  EXPECT_GT(n, 0);
}

// tests/fuzz/fuzz_tokenizer_json found numbers that overflow a double (1e999): nlohmann
// throws json::out_of_range, not parse_error, and it escaped the loader.
TEST(FuzzRegressions, TokenizerJsonCrashInputsAreOneLineInputErrors) {
  const std::string dir =
      std::string(SPECLAB_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_tokenizer_json";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(e.path().string());
    n++;
    try {
      tokenizer_load_hf_json(e.path().string());
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& err) {
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos) << err.what();
    }
  }
  EXPECT_GT(n, 0);
}

// tests/fuzz/fuzz_gguf inputs: the GGUF is refused, or its vocabulary is (one of them had a
// BYTE token "<0x-1>" that sscanf read as 0xffffffff, an out-of-bounds write in
// SpmVocabTokenizer).
TEST(FuzzRegressions, GgufCrashInputsAreOneLineInputErrors) {
  const std::string dir = std::string(SPECLAB_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_gguf";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(e.path().string());
    n++;
    try {
      auto gguf = GgufFile::open(e.path().string());
      tokenizer_from_gguf(*gguf);
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& err) {
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos) << err.what();
    }
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace speclab
