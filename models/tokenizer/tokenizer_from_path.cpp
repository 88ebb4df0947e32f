// tokenizer_load: picks the loader for a path by what the file is, not by its name.
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/input_file.h"
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
      if (fs::exists(candidate, ec)) return tokenizer_load(candidate.string());
    }
    // A model directory that holds its weights as one GGUF carries the vocabulary there.
    std::vector<fs::path> ggufs;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".gguf" && fs::is_regular_file(e.path(), ec))
        ggufs.push_back(e.path());
    if (ggufs.size() == 1) return tokenizer_load(ggufs[0].string());
    fail_input(path,
               ": directory has no tokenizer.json or tokenizer.model (nor exactly one .gguf "
               "file)");
  }
  SPECLAB_INPUT_CHECK(fs::exists(path, ec), path,
                      ": no such file, expected a tokenizer.json, tokenizer.model, .gguf or a "
                      "model directory");
  uint64_t size = 0;
  const int fd = input_file_open(path, "tokenizer file", &size);
  char head[4] = {0, 0, 0, 0};
  const ssize_t got = ::read(fd, head, sizeof(head));
  ::close(fd);
  if (got == 4 && std::string(head, 4) == "GGUF") {
    auto gguf = GgufFile::open(path);
    return tokenizer_from_gguf(*gguf);  // copies the vocabulary out of the mapping
  }
  // JSON starts with '{' after optional whitespace; a SentencePiece protobuf never does
  // (its first field tag is a binary byte).
  for (ssize_t i = 0; i < got; ++i) {
    if (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t') continue;
    if (head[i] == '{') return tokenizer_load_hf_json(path);
    break;
  }
  return tokenizer_load_sentencepiece(path);
}

}  // namespace speclab
