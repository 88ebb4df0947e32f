#include "models/tokenizer/regex_pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "models/tokenizer/utf8.h"

namespace speclab {

const char* const kLlama3PretokenizerPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt2PretokenizerPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char* const kSingleDigitPattern = "\\p{N}";

struct RegexPretokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() {
    if (code) pcre2_code_free(code);
  }
};

RegexPretokenizer::RegexPretokenizer(const std::vector<std::string>& patterns,
                                     const std::string& source, const std::string& key)
    : patterns_(patterns) {
  for (const auto& pattern : patterns) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // UCP makes \s, \d and friends Unicode-aware, as in the Rust regex crate HF uses.
    // Matching uses NO_UTF_CHECK (PCRE2 would otherwise re-validate the whole subject on
    // every call, quadratic on long texts): split() only hands it validated UTF-8.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      fail_input(source, ": ", key, ": pre-tokenizer regex does not compile at offset ",
                 error_offset, ": ", reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is the fallback
    auto compiled = std::make_unique<Compiled>();
    compiled->code = code;
    compiled_.push_back(std::move(compiled));
  }
}

RegexPretokenizer::~RegexPretokenizer() = default;

namespace {

// Splits one piece by one pattern, appending matches and gaps to `out`.
void split_piece(const pcre2_code* code, pcre2_match_data* match, std::string_view piece,
                 std::vector<std::string_view>& out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  size_t start = 0;
  size_t gap_start = 0;
  while (start < piece.size()) {
    const int rc =
        pcre2_match(code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, match, nullptr);
    if (rc < 0) break;  // no more matches
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t match_begin = ovector[0];
    const size_t match_end = ovector[1];
    if (match_end == match_begin) {
      // An empty match carries no text; step over one character to make progress.
      ++start;
      while (start < piece.size() && (static_cast<unsigned char>(piece[start]) & 0xC0) == 0x80) {
        ++start;
      }
      continue;
    }
    if (match_begin > gap_start) out.push_back(piece.substr(gap_start, match_begin - gap_start));
    out.push_back(piece.substr(match_begin, match_end - match_begin));
    gap_start = start = match_end;
  }
  if (gap_start < piece.size()) out.push_back(piece.substr(gap_start));
}

}  // namespace

std::vector<std::string_view> RegexPretokenizer::split(std::string_view text) const {
  // Bytes that are not well-formed UTF-8 (tokenizers must accept any bytes) become pieces of
  // their own; the regexes only see the valid runs between them.
  std::vector<std::string_view> pieces;
  std::vector<bool> is_invalid_byte;
  size_t run_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (utf8_is_valid_at(text, pos)) {
      pos += utf8_sequence_length(text, pos);
      continue;
    }
    if (pos > run_start) {
      pieces.push_back(text.substr(run_start, pos - run_start));
      is_invalid_byte.push_back(false);
    }
    pieces.push_back(text.substr(pos, 1));
    is_invalid_byte.push_back(true);
    run_start = ++pos;
  }
  if (run_start < text.size()) {
    pieces.push_back(text.substr(run_start));
    is_invalid_byte.push_back(false);
  }
  for (const auto& compiled : compiled_) {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(compiled->code, nullptr);
    std::vector<std::string_view> next;
    std::vector<bool> next_invalid;
    next.reserve(pieces.size() * 2);
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (is_invalid_byte[i]) {
        next.push_back(pieces[i]);
        next_invalid.push_back(true);
        continue;
      }
      split_piece(compiled->code, match, pieces[i], next);
      next_invalid.resize(next.size(), false);
    }
    pcre2_match_data_free(match);
    pieces.swap(next);
    is_invalid_byte.swap(next_invalid);
  }
  return pieces;
}

}  // namespace speclab
