// Which YAML scalars the config reader takes as numbers and booleans: plain ones (yaml-cpp's
// tag "?") and those tagged with the core schema's own type (`!!int 8`, `!!float 0.5`,
// `!!bool true`). A quoted scalar (tag "!") and one tagged as another type (`!!str 8`) are
// strings, however they look: a config that says "this is text" is not read as a number.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>

namespace speclab {

// The prefix of the YAML core schema's tags (`!!int` is "tag:yaml.org,2002:int").
inline const std::string kYamlCoreTag = "tag:yaml.org,2002:";

// Whether n's tag lets it be read as one of the core types named (e.g. {"int", "float"}).
inline bool yaml_scalar_may_be(const YAML::Node& n, std::initializer_list<const char*> types) {
  const std::string& tag = n.Tag();
  if (tag == "?") return true;
  for (const char* t : types) {
    if (tag == kYamlCoreTag + t) return true;
  }
  return false;
}

// The tag as a config's author wrote it, for error lines: "!!str" for the core schema's, else
// the tag itself; "" for plain and quoted scalars.
inline std::string yaml_scalar_tag_written(const YAML::Node& n) {
  const std::string& tag = n.Tag();
  if (tag == "?" || tag == "!" || tag.empty()) return "";
  if (tag.compare(0, kYamlCoreTag.size(), kYamlCoreTag) == 0)
    return "!!" + tag.substr(kYamlCoreTag.size());
  return tag;
}

}  // namespace speclab
