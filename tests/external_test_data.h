// Test data that the repository does not ship because its licence does not let us (Meta's
// Llama 2 / Llama 3 vocabularies). A test that needs such a file asks for it here and skips,
// with the reason, when it is absent; nothing fails for a missing file.
//
// Where it is looked for: $SPECLAB_TEST_DATA/<relative>, e.g. with
//   SPECLAB_TEST_DATA=/data  ->  /data/llama3-tokenizer/tokenizer.json
// The layout below SPECLAB_TEST_DATA (docs/models-and-tokenizers.md):
//   llama3-tokenizer/tokenizer.json, vectors.inp, vectors.out   (Llama 3.1 tokenizer, llama.cpp
//                                                                vectors for it)
//   llama2-spm-vocab/ggml-vocab-llama-spm.gguf(.inp, .out)     (llama.cpp's Llama 2 vocab GGUF)
// Data we may ship lives in tests/data/ (licence beside each file) and needs none of this.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace speclab::testing {

// tests/data/<relative> in the source tree.
inline std::string shipped_data(const std::string& relative) {
  return std::string(SPECLAB_SOURCE_DIR) + "/tests/data/" + relative;
}

// $SPECLAB_TEST_DATA/<relative> when that file exists, else "" (see external_data_skip_reason).
inline std::string external_data(const std::string& relative) {
  const char* root = std::getenv("SPECLAB_TEST_DATA");
  if (root == nullptr || *root == '\0') return "";
  const std::string path = std::string(root) + "/" + relative;
  std::error_code ec;
  return std::filesystem::exists(path, ec) ? path : "";
}

// The GTEST_SKIP message for an absent external file.
inline std::string external_data_skip_reason(const std::string& relative) {
  const char* root = std::getenv("SPECLAB_TEST_DATA");
  return "needs " + relative +
         ", which the repository does not ship (Meta's licence); set SPECLAB_TEST_DATA to a "
         "folder holding it" +
         (root && *root ? std::string(" (SPECLAB_TEST_DATA=") + root + " lacks it)" : "");
}

}  // namespace speclab::testing
