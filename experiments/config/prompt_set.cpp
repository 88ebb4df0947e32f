#include "experiments/config/prompt_set.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/safe_name.h"

namespace speclab {

namespace {

// A prompt set of 100k long prompts is ~500 MB; a larger file is not one.
constexpr uint64_t kMaxPromptFileBytes = 1ull << 30;

// The string at `key`; "" if absent and optional.
std::string string_field(const nlohmann::json& obj, const char* key, bool required,
                         const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    SPECLAB_INPUT_CHECK(!required, where, ": missing key \"", key, "\" (expected a string)");
    return "";
  }
  SPECLAB_INPUT_CHECK(it->is_string(), where, ": key \"", key, "\": expected a string, got ",
                      it->dump());
  const std::string value = it->get<std::string>();
  SPECLAB_INPUT_CHECK(!required || !value.empty(), where, ": key \"", key,
                      "\": expected a non-empty string");
  return value;
}

}  // namespace

bool prompt_category_valid(const std::string& name) { return safe_name(name, 40); }

std::string prompt_default_category(const std::string& task) {
  return prompt_category_valid(task) ? task : "uncategorized";
}

std::vector<Prompt> prompt_set_load(const std::string& path, int limit, int skip) {
  // A special file (/dev/zero, a FIFO) is refused before a byte is read; the size bound keeps
  // a wrong path from filling memory.
  std::istringstream in(input_file_read(path, "prompt file", kMaxPromptFileBytes));
  std::vector<Prompt> prompts;
  std::map<std::string, int> id_line;
  std::string text;
  int line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = str_cat(path, ":", line_no);
    nlohmann::json obj;
    try {
      obj = json_input_parse(text, where);
    } catch (const nlohmann::json::exception& e) {  // parse_error; out_of_range for 1e999
      // e.what() names the byte; keep only its last clause.
      std::string why = e.what();
      const size_t colon = why.rfind(": ");
      fail_input(where, ": not valid JSON (",
                 colon == std::string::npos ? why : why.substr(colon + 2), ")");
    }
    SPECLAB_INPUT_CHECK(obj.is_object(), where, ": expected a JSON object {\"id\", \"text\", ...}");
    Prompt p;
    p.file = path;
    p.line = line_no;
    p.id = string_field(obj, "id", true, where);
    // The id labels output lines and table rows: one line of printable text.
    SPECLAB_INPUT_CHECK(!p.id.empty() && std::none_of(p.id.begin(), p.id.end(),
                                                      [](char ch) {
                                                        const auto b =
                                                            static_cast<unsigned char>(ch);
                                                        return b < 0x20 || b == 0x7F;
                                                      }),
                        where,
                        ": key \"id\": expected a non-empty id without control characters "
                        "(it labels output lines), got ",
                        obj["id"].dump());
    p.text = string_field(obj, "text", true, where);
    p.task = string_field(obj, "task", false, where);
    if (obj.contains("category")) {
      p.category = string_field(obj, "category", false, where);
      SPECLAB_INPUT_CHECK(prompt_category_valid(p.category), where,
                          ": key \"category\": expected a name of 1-40 characters "
                          "[A-Za-z0-9._-], got ",
                          obj["category"].dump());
    } else {
      p.category = prompt_default_category(p.task);
    }
    p.source = string_field(obj, "source", false, where);
    p.license = string_field(obj, "license", false, where);
    for (const auto& [k, v] : obj.items())
      if (k != "id" && k != "text" && k != "task" && k != "category" && k != "source" &&
          k != "license")
        p.extra[k] = v;
    const auto [it, fresh] = id_line.emplace(p.id, line_no);
    SPECLAB_INPUT_CHECK(fresh, where, ": duplicate id \"", p.id, "\" (first at line ", it->second,
                        ")");
    prompts.push_back(std::move(p));
  }
  SPECLAB_INPUT_CHECK(!prompts.empty(), path,
                      ": no prompts (expected JSONL, one {\"id\", \"text\"} object per line)");
  SPECLAB_INPUT_CHECK(skip >= 0 && static_cast<size_t>(skip) < prompts.size(), path,
                      ": prompts.skip = ", skip, " leaves no prompts (the file has ",
                      prompts.size(), ")");
  prompts.erase(prompts.begin(), prompts.begin() + skip);
  if (limit > 0 && static_cast<size_t>(limit) < prompts.size())
    prompts.resize(static_cast<size_t>(limit));
  return prompts;
}

std::vector<Prompt> prompt_set_load_files(const std::vector<std::string>& paths, int limit_per_file,
                                          int skip_per_file) {
  std::vector<Prompt> all;
  std::map<std::string, const Prompt*> seen;
  for (const auto& path : paths) {
    for (auto& p : prompt_set_load(path, limit_per_file, skip_per_file))
      all.push_back(std::move(p));
  }
  for (const auto& p : all) {
    const auto [it, fresh] = seen.emplace(p.id, &p);
    SPECLAB_INPUT_CHECK(fresh, p.file, ":", p.line, ": duplicate id \"", p.id, "\" (also at ",
                        it->second->file, ":", it->second->line, ")");
  }
  return all;
}

}  // namespace speclab
