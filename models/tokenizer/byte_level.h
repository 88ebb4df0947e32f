// GPT-2's byte-level alphabet: every byte 0..255 is stored in a byte-level BPE vocabulary as
// one printable Unicode character, so that pieces never contain raw control bytes or spaces
// (the space 0x20 becomes "Ġ" U+0120, the newline 0x0A becomes "Ċ" U+010A).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace speclab {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();
  static const ByteLevelAlphabet& instance();

  // Raw bytes -> the byte-level string stored in the vocabulary.
  std::string encode(const std::string& bytes) const;
  // The UTF-8 string of the character standing for one byte.
  const std::string& char_of(unsigned char byte) const { return char_of_byte_[byte]; }
  // Byte-level string -> raw bytes. Characters outside the alphabet are copied unchanged
  // (they cannot come from encode(), but a hand-edited vocabulary may hold them).
  std::string decode(const std::string& pieces) const;

 private:
  std::array<std::string, 256> char_of_byte_;  // byte -> UTF-8 of its character
  std::unordered_map<uint32_t, unsigned char> byte_of_code_point_;
};

}  // namespace speclab
