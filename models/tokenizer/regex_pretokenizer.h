// Pre-tokenization by regular expressions (PCRE2, UTF mode with Unicode properties).
//
// Each pattern splits every piece produced by the previous one; matches and the text between
// matches both become pieces ("Isolated" in HF terms), so concatenating the pieces gives
// back the input. BPE merges never cross a piece boundary.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace speclab {

// Llama 3 (tiktoken cl100k-style): letters with one leading non-letter, digits in runs of
// at most three, punctuation runs that swallow trailing newlines.
extern const char* const kLlama3PretokenizerPattern;
// GPT-2's pattern (what HF's ByteLevel pre-tokenizer uses with use_regex=true).
extern const char* const kGpt2PretokenizerPattern;
// Every digit on its own (SmolLM / StarCoder: applied before the GPT-2 pattern).
extern const char* const kSingleDigitPattern;

class RegexPretokenizer {
 public:
  // Throws InputError "<source>: <key>: pattern ... does not compile: ..." on a bad pattern.
  RegexPretokenizer(const std::vector<std::string>& patterns, const std::string& source,
                    const std::string& key);
  ~RegexPretokenizer();
  RegexPretokenizer(const RegexPretokenizer&) = delete;
  RegexPretokenizer& operator=(const RegexPretokenizer&) = delete;

  // Views into `text`, in order, covering it exactly.
  std::vector<std::string_view> split(std::string_view text) const;

  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Compiled;
  std::vector<std::string> patterns_;
  std::vector<std::unique_ptr<Compiled>> compiled_;
};

}  // namespace speclab
