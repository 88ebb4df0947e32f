// The experiment config schema as data: every key's YAML path, type, default and meaning.
// The loader (experiment_config.cpp) takes each mapping's allowed keys from here, so a key
// cannot exist without an entry; docs/config-reference.md is generated from it
// (`speclab config-reference`), and a test fails when that file is stale or when a stated
// default differs from what the loader does without the key. The `sweep.*` keys are not
// written here: they come from the sweep axis table (experiments/config/sweep_axes.h).
#pragma once

#include <string>
#include <vector>

namespace speclab {

struct ConfigKey {
  std::string path;      // "generation.max_new_tokens"; a section is a key with children
  std::string type;      // what the value must be, in words
  std::string fallback;  // the default in words ("required", "unset", "max(sweep.gamma)+1")
  std::string literal;   // the default as a YAML value ("64", "[4]"), "" when not a literal
  std::string meaning;
};

// Every key, sections before their children, in the order of the reference.
const std::vector<ConfigKey>& config_schema();

// The allowed child keys of a section ("" = the top level; "sweep"; "generation"...).
std::vector<std::string> config_schema_children(const std::string& section);

// docs/config-reference.md: a markdown table per section.
std::string config_reference_markdown();

}  // namespace speclab
