#include "core/json_input.h"

#include "core/error.h"

namespace speclab {

void json_input_check_depth(std::string_view text, const std::string& where, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      SPECLAB_INPUT_CHECK(++depth <= max_depth, where, ": JSON nested deeper than ", max_depth,
                          " levels (byte ", i, "), expected at most ", max_depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json json_input_parse(std::string_view text, const std::string& where) {
  json_input_check_depth(text, where);
  return nlohmann::json::parse(text.begin(), text.end());
}

}  // namespace speclab
