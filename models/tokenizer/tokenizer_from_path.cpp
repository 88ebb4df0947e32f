// tokenizer_load: picks the loader for a path by what the file is, not by its name.
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/formats/gguf.h"
#include "models/formats/hf_hub_cache.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

std::unique_ptr<Tokenizer> tokenizer_load(const std::string& path_as_written) {
  namespace fs = std::filesystem;
  // "org/name" that is not a local path: the snapshot in the Hugging Face cache.
  const std::string path = hf_resolve_model_path(path_as_written);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
      const fs::path candidate = fs::path(path) / name;
      if (fs::is_regular_file(candidate, ec)) return tokenizer_load(candidate.string());
    }
    fail_input(path, ": directory has no tokenizer.json or tokenizer.model");
  }
  SPECLAB_INPUT_CHECK(fs::is_regular_file(path, ec), path,
                      ": no such file, expected a tokenizer.json, tokenizer.model, .gguf or a "
                      "model directory");
  std::ifstream in(path, std::ios::binary);
  SPECLAB_INPUT_CHECK(in.good(), path, ": cannot open file");
  char head[4] = {0, 0, 0, 0};
  in.read(head, sizeof(head));
  if (in.gcount() == 4 && std::string(head, 4) == "GGUF") {
    auto gguf = GgufFile::open(path);
    return tokenizer_from_gguf(*gguf);  // copies the vocabulary out of the mapping
  }
  // JSON starts with '{' after optional whitespace; a SentencePiece protobuf never does
  // (its first field tag is a binary byte).
  for (long i = 0; i < in.gcount(); ++i) {
    if (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t') continue;
    if (head[i] == '{') return tokenizer_load_hf_json(path);
    break;
  }
  return tokenizer_load_sentencepiece(path);
}

}  // namespace speclab
