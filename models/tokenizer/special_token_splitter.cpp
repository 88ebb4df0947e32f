#include "models/tokenizer/special_token_splitter.h"

#include <algorithm>

namespace speclab {

SpecialTokenSplitter::SpecialTokenSplitter(std::vector<Entry> entries) : by_first_byte_(256) {
  for (auto& e : entries) {
    if (e.content.empty()) continue;  // an empty token could never be split out
    by_first_byte_[static_cast<unsigned char>(e.content[0])].push_back(std::move(e));
  }
  for (auto& group : by_first_byte_) {
    std::stable_sort(group.begin(), group.end(), [](const Entry& a, const Entry& b) {
      return a.content.size() > b.content.size();
    });
  }
}

std::vector<TextFragment> SpecialTokenSplitter::split(std::string_view text,
                                                      bool parse_special) const {
  std::vector<TextFragment> fragments;
  size_t raw_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const Entry* found = nullptr;
    for (const Entry& e : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      if (e.special && !parse_special) continue;
      if (text.compare(pos, e.content.size(), e.content) == 0) {
        found = &e;
        break;
      }
    }
    if (!found) {
      ++pos;
      continue;
    }
    if (pos > raw_start) fragments.push_back({text.substr(raw_start, pos - raw_start), -1});
    fragments.push_back({text.substr(pos, found->content.size()), found->id});
    pos += found->content.size();
    raw_start = pos;
  }
  if (raw_start < text.size()) fragments.push_back({text.substr(raw_start), -1});
  return fragments;
}

}  // namespace speclab
