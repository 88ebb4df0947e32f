#include "models/tokenizer/byte_level.h"

#include "models/tokenizer/utf8.h"

namespace speclab {

ByteLevelAlphabet::ByteLevelAlphabet() {
  // Printable Latin-1 bytes stand for themselves; the other 68 bytes are mapped, in
  // order, to code points 256, 257, ... (the table GPT-2's bytes_to_unicode() builds).
  uint32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : next_extra++;
    utf8_append(char_of_byte_[b], cp);
    byte_of_code_point_[cp] = static_cast<unsigned char>(b);
  }
}

const ByteLevelAlphabet& ByteLevelAlphabet::instance() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

std::string ByteLevelAlphabet::encode(const std::string& bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += char_of_byte_[b];
  return out;
}

std::string ByteLevelAlphabet::decode(const std::string& pieces) const {
  std::string out;
  out.reserve(pieces.size());
  size_t pos = 0;
  while (pos < pieces.size()) {
    const size_t len = utf8_sequence_length(pieces, pos);
    uint32_t cp = 0;
    if (len == 1) {
      cp = static_cast<unsigned char>(pieces[pos]);
    } else {
      cp = static_cast<unsigned char>(pieces[pos]) & (0xFF >> (len + 1));
      for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (pieces[pos + i] & 0x3F);
    }
    auto it = byte_of_code_point_.find(cp);
    if (len > 1 || cp >= 0x80) {
      if (it != byte_of_code_point_.end()) {
        out += static_cast<char>(it->second);
      } else {
        out.append(pieces, pos, len);
      }
    } else {
      // ASCII: printable characters map to themselves; others are not in the alphabet.
      out += static_cast<char>(cp);
    }
    pos += len;
  }
  return out;
}

}  // namespace speclab
