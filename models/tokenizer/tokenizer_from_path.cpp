// tokenizer_load: picks the loader for a path by what the file is, not by its name.
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/input_file.h"
#include "models/formats/gguf.h"
#include "models/formats/hf_hub_cache.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {

constexpr const char* kExpected =
    " (expected a tokenizer.json, a SentencePiece tokenizer.model or a .gguf file)";

enum class TokenizerFileKind {
  kEmpty,
  kGguf,
  kJsonObject,
  kUtf16Or32,
  kWhitespace,
  kOtherText,
  kSafetensors,
  kSentencePiece,
  kUnknownBinary
};

// What a tokenizer file is, from its first bytes (up to 512). JSON may start with a UTF-8
// byte-order mark and any amount of whitespace. A SentencePiece ModelProto is binary from
// its first record on (field tags, length varints, fixed32 scores), so text with no control
// bytes but tab, newline and carriage return is never one: such a file gets a message about
// what it is rather than the protobuf parser's.
TokenizerFileKind tokenizer_file_kind(const unsigned char* head, size_t n) {
  if (n == 0) return TokenizerFileKind::kEmpty;
  if (n >= 4 && std::memcmp(head, "GGUF", 4) == 0) return TokenizerFileKind::kGguf;
  if (n >= 2 && ((head[0] == 0xFF && head[1] == 0xFE) || (head[0] == 0xFE && head[1] == 0xFF)))
    return TokenizerFileKind::kUtf16Or32;
  if (n >= 4 && head[0] == 0 && head[1] == 0 && head[2] == 0xFE && head[3] == 0xFF)
    return TokenizerFileKind::kUtf16Or32;
  // UTF-16 without a byte-order mark: every other byte 0 around ASCII ("\0{" or "{\0").
  if (n >= 4 && ((head[0] == 0 && head[1] != 0 && head[2] == 0 && head[3] != 0) ||
                 (head[0] != 0 && head[1] == 0 && head[2] != 0 && head[3] == 0)))
    return TokenizerFileKind::kUtf16Or32;
  // safetensors: an 8-byte little-endian header length, then the JSON header.
  if (n >= 10 && head[8] == '{' && head[9] == '"') return TokenizerFileKind::kSafetensors;
  size_t i = 0;
  if (n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) i = 3;
  const size_t text_start = i;
  while (i < n && std::isspace(head[i])) ++i;
  if (i < n && head[i] == '{') return TokenizerFileKind::kJsonObject;
  for (size_t j = text_start; j < n; ++j) {
    const unsigned char b = head[j];
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) {
      // A SentencePiece ModelProto opens with one of its fields 1-5, each length-delimited:
      // the tag byte 0x0A, 0x12, 0x1A, 0x22 or 0x2A. Any other first byte is some other file.
      const bool proto_tag = head[0] == 0x0A || head[0] == 0x12 || head[0] == 0x1A ||
                             head[0] == 0x22 || head[0] == 0x2A;
      return proto_tag ? TokenizerFileKind::kSentencePiece : TokenizerFileKind::kUnknownBinary;
    }
  }
  if (i == n)
    return n == 512 ? TokenizerFileKind::kJsonObject  // the JSON parser decides
                    : TokenizerFileKind::kWhitespace;
  return TokenizerFileKind::kOtherText;
}

// The byte offset of the first character after a UTF-8 byte-order mark and whitespace.
size_t first_text_byte(const unsigned char* head, size_t n) {
  size_t i = n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF ? 3 : 0;
  while (i < n && std::isspace(head[i])) ++i;
  return i;
}

}  // namespace

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
  unsigned char head[512];
  ssize_t got = 0;
  while (got < static_cast<ssize_t>(sizeof(head))) {
    const ssize_t n = ::read(fd, head + got, sizeof(head) - static_cast<size_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += n;
  }
  ::close(fd);
  switch (tokenizer_file_kind(head, static_cast<size_t>(got))) {
    case TokenizerFileKind::kGguf: {
      auto gguf = GgufFile::open(path);
      return tokenizer_from_gguf(*gguf);  // copies the vocabulary out of the mapping
    }
    case TokenizerFileKind::kJsonObject:
      return tokenizer_load_hf_json(path);
    case TokenizerFileKind::kSentencePiece:
      break;
    case TokenizerFileKind::kEmpty:
      fail_input(path, ": tokenizer file is empty", kExpected);
    case TokenizerFileKind::kUtf16Or32:
      fail_input(path,
                 ": is UTF-16 or UTF-32 text (a byte-order mark, or a 0 byte beside every "
                 "character); a "
                 "tokenizer.json must be UTF-8");
    case TokenizerFileKind::kSafetensors:
      fail_input(path, ": is a safetensors weights file, not a tokenizer", kExpected);
    case TokenizerFileKind::kUnknownBinary: {
      char first[8];
      std::snprintf(first, sizeof(first), "0x%02X", head[0]);
      fail_input(path, ": is a binary file that no tokenizer format starts with (first byte ",
                 first, ")", kExpected);
    }
    case TokenizerFileKind::kWhitespace:
      fail_input(path, ": tokenizer file holds only whitespace", kExpected);
    case TokenizerFileKind::kOtherText: {
      const size_t i = first_text_byte(head, static_cast<size_t>(got));
      char shown[8];
      if (head[i] >= 0x20 && head[i] < 0x7F)
        std::snprintf(shown, sizeof(shown), "'%c'", head[i]);
      else
        std::snprintf(shown, sizeof(shown), "0x%02X", head[i]);
      fail_input(path, ": is text that does not start with '{' (", shown, " at byte ", i,
                 "), expected a tokenizer.json (a JSON object), a SentencePiece tokenizer.model "
                 "or a .gguf file");
    }
  }
  return tokenizer_load_sentencepiece(path);
}

}  // namespace speclab
