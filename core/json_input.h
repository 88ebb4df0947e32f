// Parsing JSON that comes from the user (safetensors headers, config.json, tokenizer.json,
// the shard index, prompt lines, result rows, replay traces).
//
// nlohmann::json parses iteratively, but dump(), operator==, copies and our own walks
// recurse once per nesting level: a value nested 200,000 deep ("shape": [[[[...) overflows
// the stack. No real input nests deeper than a handful of levels, so every JSON input is
// checked against kJsonMaxDepth before it is parsed; deeper input is an InputError
//   "<where>: JSON nested deeper than 256 levels (byte 1234), expected at most 256"
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace speclab {

constexpr int kJsonMaxDepth = 256;

// Throws InputError when `text` opens more than max_depth arrays/objects at once (brackets
// inside strings do not count). Says nothing about whether the text is valid JSON.
void json_input_check_depth(std::string_view text, const std::string& where,
                            int max_depth = kJsonMaxDepth);

// json_input_check_depth, then nlohmann::json::parse. Syntax errors and numbers out of range
// propagate as nlohmann::json::exception, which each caller words for its own file kind; a
// key given twice in one object is an InputError "<where>: key "id" appears twice ...".
nlohmann::json json_input_parse(std::string_view text, const std::string& where);

// Whether object `j` has `key` equal to `expected`, without throwing when the member has
// another type (j.value(key, default) throws type_error there: "version": "1").
inline bool json_member_is(const nlohmann::json& j, const char* key,
                           const nlohmann::json& expected) {
  if (!j.is_object()) return false;
  const auto it = j.find(key);
  return it != j.end() && *it == expected;
}

}  // namespace speclab
