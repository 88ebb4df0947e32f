// tokenizer_load_any: one entry point for --tokenizer arguments.
#include <sys/stat.h>

#include <fstream>

#include "core/error.h"
#include "models/formats/gguf.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

std::unique_ptr<Tokenizer> tokenizer_load_any(const std::string& path) {
  if (is_dir(path)) {
    if (is_file(path + "/tokenizer.json")) return tokenizer_load_hf_json(path + "/tokenizer.json");
    if (is_file(path + "/tokenizer.model"))
      return tokenizer_load_sentencepiece(path + "/tokenizer.model");
    fail_input(path, ": directory has neither tokenizer.json nor tokenizer.model");
  }
  SPECLAB_INPUT_CHECK(is_file(path), path,
                      ": no such file or directory (expected a tokenizer.json, ",
                      "tokenizer.model, .gguf file or a model directory)");
  if (ends_with(path, ".json")) return tokenizer_load_hf_json(path);
  if (ends_with(path, ".gguf")) return tokenizer_from_gguf(*GgufFile::open(path));
  if (ends_with(path, ".model")) return tokenizer_load_sentencepiece(path);
  // Unknown extension: sniff the GGUF magic, else try SentencePiece.
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  f.read(magic, 4);
  if (std::string(magic, 4) == "GGUF") return tokenizer_from_gguf(*GgufFile::open(path));
  return tokenizer_load_sentencepiece(path);
}

}  // namespace speclab
