// Prompt sets: JSONL files (configs/prompts/*.jsonl), one prompt object per line:
//   {"id": "bible-001", "text": "In the beginning", "task": "continue",
//    "category": "continuation", "source": "...", "license": "..."}
// `id` and `text` are required non-empty strings; `task`, `source`, `license` are optional
// strings; `category` (the kind of task the per-category tables group by: coding,
// summarization, chat, ...) is an optional name of 1-40 characters [A-Za-z0-9._-], defaulting
// to `task` when that is such a name and to "uncategorized" otherwise; other keys are kept in
// `extra`. Blank lines are skipped. Bad JSON, a line that is
// not an object, a missing or mistyped key, or a repeated id is an InputError
// "<file>:<line>: ..."; a file with no prompts is an error too.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace speclab {

struct Prompt {
  std::string id;
  std::string text;
  std::string task;                                 // "" when absent
  std::string category;                             // never empty (see above)
  std::string source;                               // "" when absent
  std::string license;                              // "" when absent
  nlohmann::json extra = nlohmann::json::object();  // any other keys, as written
  std::string file;                                 // the file it came from
  int line = 0;                                     // 1-based line in the file
};

// The prompts of `path` in file order; the first `skip` are left out, then limit > 0 keeps the
// first `limit` of the rest (the whole file is still checked). Throws InputError, also when
// `skip` leaves no prompt.
std::vector<Prompt> prompt_set_load(const std::string& path, int limit = 0, int skip = 0);

// The category given to prompts without one ("uncategorized" when `task` is no valid name).
std::string prompt_default_category(const std::string& task);
// Whether `name` can be a category: 1-40 characters of [A-Za-z0-9._-] (it names table
// columns and plot labels).
bool prompt_category_valid(const std::string& name);

// The prompts of several files in order (prompts.file as a list), of each the first
// `limit_per_file` (0 = all) after the first `skip_per_file`; an id repeated across files is
// an InputError naming both files.
std::vector<Prompt> prompt_set_load_files(const std::vector<std::string>& paths,
                                          int limit_per_file = 0, int skip_per_file = 0);

}  // namespace speclab
