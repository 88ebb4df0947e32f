// UTF-8 helpers shared by the tokenizers. Invalid bytes are never fatal: a tokenizer must
// accept any byte string, so a malformed sequence is treated as one byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace speclab {

// Length in bytes of the UTF-8 sequence starting at text[pos] (1 for an invalid or
// truncated sequence, so that every byte is consumed exactly once).
size_t utf8_sequence_length(std::string_view text, size_t pos);
// True when text[pos] starts a well-formed UTF-8 sequence (strict: no overlong forms,
// surrogates or code points above U+10FFFF).
bool utf8_is_valid_at(std::string_view text, size_t pos);

// Appends the UTF-8 encoding of one code point.
void utf8_append(std::string& out, uint32_t code_point);

}  // namespace speclab
