// Helpers shared by the tokenizer tests: llama.cpp's vocabulary test-vector files, corpus
// files, and temporary files for malformed-input cases.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/external_test_data.h"

namespace speclab::testing {

inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A scratch directory unique to the running test.
inline std::string temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() /
             (std::string("speclab_tok_") + info->test_suite_name() + "_" + info->name());
  std::filesystem::create_directories(dir);
  return dir.string();
}

struct VocabVector {
  std::string text;
  std::vector<int32_t> ids;
};

// llama.cpp's test-tokenizer-0 format: inputs joined as "text\n__ggml_vocab_test__\n", so the
// separator is the whole line with the newline before it (an input's own final newline is
// the text's). Outputs: one line per input, ids separated by spaces.
inline std::vector<VocabVector> read_vocab_vectors(const std::string& inp_path,
                                                   const std::string& out_path) {
  const std::string inp = read_file_bytes(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabVector> vectors;
  size_t start = 0;
  for (size_t end; (end = inp.find(sep, start)) != std::string::npos; start = end + sep.size()) {
    vectors.push_back({inp.substr(start, end - start), {}});
  }
  std::istringstream out(read_file_bytes(out_path));
  std::string line;
  for (auto& v : vectors) {
    if (!std::getline(out, line)) break;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) v.ids.push_back(id);
  }
  return vectors;
}

// The shipped corpus files of one subfolder ("moby-dick", "sotu"), sorted by name
// (tests/data/corpus, public domain, see its README).
inline std::vector<std::string> corpus_files(const std::string& subfolder) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(shipped_data("corpus/" + subfolder))) {
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace speclab::testing
