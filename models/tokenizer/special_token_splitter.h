// Splits text around special/added tokens written in it ("<|im_start|>user"), before any
// pre-tokenization, so that such tokens become single ids and never take part in merges.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace speclab {

struct TextFragment {
  std::string_view text;  // raw text when token_id < 0
  int32_t token_id = -1;  // an added token's id, or -1 for raw text
};

class SpecialTokenSplitter {
 public:
  struct Entry {
    std::string content;
    int32_t id = -1;
    bool special = false;  // special tokens are split out only when parse_special is true
  };
  explicit SpecialTokenSplitter(std::vector<Entry> entries);

  // Leftmost match wins; at one position the longest token wins (as HF's added-token trie).
  std::vector<TextFragment> split(std::string_view text, bool parse_special) const;

 private:
  // entries grouped by first byte, longest first within a group
  std::vector<std::vector<Entry>> by_first_byte_;
};

}  // namespace speclab
