#include "core/json_input.h"

#include <set>
#include <string>
#include <vector>

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

namespace {

// The first key given twice in one object of `text` (which parses), or "". Slow (a set of
// keys per open object): run only once a duplicate is known to be there.
std::string first_repeated_key(std::string_view text) {
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      keys.emplace_back();
    } else if (event == Event::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == Event::key && !keys.empty() && repeated.empty() &&
               !keys.back().insert(parsed.get<std::string>()).second) {
      repeated = parsed.get<std::string>();
    }
    return true;
  };
  const nlohmann::json again = nlohmann::json::parse(text.begin(), text.end(), callback);
  return repeated;
}

}  // namespace

nlohmann::json json_input_parse(std::string_view text, const std::string& where) {
  json_input_check_depth(text, where);
  // A key written twice in one object: nlohmann keeps the last without a word ({"id": "a",
  // ..., "id": "b"} is prompt "b"). Counting each object's keys against its size when it
  // closes finds one at almost no cost (a Llama 3 tokenizer.json has 128k keys in one
  // object); only then is the text parsed again to name the key.
  std::vector<size_t> key_counts;  // one per open object; the depth check bounds it
  bool repeated = false;
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      key_counts.push_back(0);
    } else if (event == Event::key && !key_counts.empty()) {
      ++key_counts.back();
    } else if (event == Event::object_end && !key_counts.empty()) {
      repeated = repeated || key_counts.back() != parsed.size();
      key_counts.pop_back();
    }
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), callback);
  if (repeated)
    fail_input(where, ": key \"", first_repeated_key(text),
               "\" appears twice in one object (expected each once)");
  return j;
}

}  // namespace speclab
