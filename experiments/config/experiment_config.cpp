#include "experiments/config/experiment_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string_view>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/safe_name.h"
#include "experiments/config/config_schema.h"
#include "experiments/config/sweep_axes.h"
#include "experiments/config/yaml_scalar_tag.h"
#include "models/drafters/drafter.h"
#include "models/formats/hf_hub_cache.h"
#include "models/tokenizer/utf8.h"

namespace fs = std::filesystem;

namespace speclab {

namespace {

const char* const kSimulateTables[] = {"paper-table1"};

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// What the user wrote, for "got ..." in messages.
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar: {
      const std::string tag = yaml_scalar_tag_written(node);
      return "'" + node.Scalar() + "'" + (tag.empty() ? "" : " (tagged " + tag + ")");
    }
    default:
      return "nothing";
  }
}

// Where values came from while reading one file; every read records its location.
class Reader {
 public:
  Reader(std::string file, std::vector<std::string> override_keys,
         std::map<std::string, std::string>* locations)
      : file_(std::move(file)), override_keys_(std::move(override_keys)), locations_(locations) {}

  // "file:line" or "--set key" for the node at yaml_path.
  std::string location(const YAML::Node& node, const std::string& yaml_path) const {
    for (const auto& key : override_keys_) {
      if (yaml_path == key || starts_with(yaml_path, key + ".") ||
          starts_with(yaml_path, key + "["))
        return "--set " + key;
    }
    if (!node.IsDefined() || node.Mark().is_null()) {
      // A node that --set created on the way to its key (no place in the file).
      for (const auto& key : override_keys_)
        if (starts_with(key, yaml_path + ".")) return "--set " + key;
      return file_;
    }
    return str_cat(file_, ":", node.Mark().line + 1);
  }

  void record(const YAML::Node& node, const std::string& yaml_path) {
    (*locations_)[yaml_path] = location(node, yaml_path);
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& yaml_path,
                         const std::string& message) const {
    fail_input(location(node, yaml_path), ": ", yaml_path.empty() ? "(top level)" : yaml_path, ": ",
               message);
  }

  std::string scalar_string(const YAML::Node& node, const std::string& path) {
    record(node, path);
    if (!node.IsScalar()) fail(node, path, "expected a string, got " + describe(node));
    return node.Scalar();
  }

  int64_t scalar_int(const YAML::Node& node, const std::string& path) {
    record(node, path);
    // A quoted scalar (tag "!") or one tagged !!str is a string, even when it looks like a
    // number (yaml_scalar_tag.h).
    if (node.IsScalar() && yaml_scalar_may_be(node, {"int"})) {
      const std::string& s = node.Scalar();
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return v;
    }
    fail(node, path, "expected an integer, got " + describe(node));
  }

  int scalar_int32(const YAML::Node& node, const std::string& path) {
    const int64_t v = scalar_int(node, path);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      fail(node, path, str_cat("expected an integer, got ", v, " (too large)"));
    return static_cast<int>(v);
  }

  double scalar_double(const YAML::Node& node, const std::string& path) {
    record(node, path);
    if (node.IsScalar() && yaml_scalar_may_be(node, {"int", "float"})) {
      const std::string& s = node.Scalar();
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v)) return v;
    }
    fail(node, path, "expected a finite number, got " + describe(node));
  }

  bool scalar_bool(const YAML::Node& node, const std::string& path) {
    record(node, path);
    if (node.IsScalar() && yaml_scalar_may_be(node, {"bool"})) {
      const std::string& s = node.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
    }
    fail(node, path, "expected true or false, got " + describe(node));
  }

  // A list, or a scalar standing for a one-element list.
  template <typename T, typename ReadOne>
  std::vector<T> list(const YAML::Node& node, const std::string& path, ReadOne read_one) {
    record(node, path);
    std::vector<T> out;
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i)
        out.push_back(read_one(node[i], str_cat(path, "[", i, "]")));
    } else if (node.IsScalar()) {
      record(node, path + "[0]");
      out.push_back(read_one(node, path));
    } else {
      fail(node, path, "expected a list or a single value, got " + describe(node));
    }
    return out;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<std::string> override_keys_;
  std::map<std::string, std::string>* locations_;
};

// A mapping whose keys are checked against the allowed set; children are looked up by key.
class MapReader {
 public:
  MapReader(Reader& reader, const YAML::Node& node, std::string path,
            std::vector<std::string> allowed)
      : reader_(reader), node_(node), path_(std::move(path)), allowed_(std::move(allowed)) {
    reader_.record(node_, path_);
    if (!node_.IsMap()) reader_.fail(node_, path_, "expected a mapping, got " + describe(node_));
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const YAML::Node key_node = it->first;
      const std::string key = key_node.IsScalar() ? key_node.Scalar() : describe(key_node);
      const std::string child = child_path(key);
      if (std::find(allowed_.begin(), allowed_.end(), key) == allowed_.end() ||
          !key_node.IsScalar())
        reader_.fail(key_node, child, "unknown key (expected one of: " + join(allowed_) + ")");
      if (children_.count(key)) reader_.fail(key_node, child, "duplicate key");
      children_.emplace(key, it->second);
      keys_in_order_.push_back(key);
    }
  }

  std::string child_path(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  bool has(const std::string& key) const { return children_.count(key) > 0; }
  YAML::Node get(const std::string& key) const { return children_.at(key); }
  YAML::Node require(const std::string& key) const {
    if (!has(key)) reader_.fail(node_, child_path(key), "required key is missing");
    return get(key);
  }
  const std::vector<std::string>& keys_in_order() const { return keys_in_order_; }

 private:
  Reader& reader_;
  YAML::Node node_;
  std::string path_;
  std::vector<std::string> allowed_;
  std::map<std::string, YAML::Node> children_;
  std::vector<std::string> keys_in_order_;
};

// The loader's reads, lent to the sweep axes' parsers (sweep_axes.h).
class AxisReader : public SweepYamlReader {
 public:
  explicit AxisReader(Reader& r) : r_(r) {}
  int integer(const YAML::Node& n, const std::string& p) override { return r_.scalar_int32(n, p); }
  double number(const YAML::Node& n, const std::string& p) override {
    return r_.scalar_double(n, p);
  }
  std::string string(const YAML::Node& n, const std::string& p) override {
    return r_.scalar_string(n, p);
  }
  void record(const YAML::Node& n, const std::string& p) override { r_.record(n, p); }
  std::string describe(const YAML::Node& n) override { return speclab::describe(n); }

 protected:
  void raise(const YAML::Node& n, const std::string& p, const std::string& message) override {
    r_.fail(n, p, message);
  }

 private:
  Reader& r_;
};

// sweep.exclude: a list of mappings, each from axis keys to a value or a list of values, read
// by the axes' own parsers (so 1 and 1.0 are the same temperature). Whether each value is on its
// axis is experiment_config_validate's; whether an entry removes a cell, sweep_expand's.
std::vector<std::map<std::string, std::vector<nlohmann::json>>> read_exclusions(
    Reader& r, const YAML::Node& node, SweepYamlReader& axis_reader) {
  const std::string path = "sweep.exclude";
  r.record(node, path);
  if (!node.IsSequence())
    r.fail(node, path,
           "expected a list of mappings from axis to value(s) (e.g. [{drafter: lookup, "
           "temperature: 1}]), got " +
               describe(node));
  std::vector<std::string> axis_keys;
  for (const SweepAxis& axis : sweep_axes()) axis_keys.push_back(axis.key);
  std::vector<std::map<std::string, std::vector<nlohmann::json>>> out;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string entry_path = str_cat(path, "[", i, "]");
    MapReader e(r, node[i], entry_path, axis_keys);
    if (e.keys_in_order().empty())
      r.fail(node[i], entry_path,
             "expected at least one axis (an empty entry excludes every cell)");
    std::map<std::string, std::vector<nlohmann::json>> entry;
    for (const std::string& key : e.keys_in_order()) {
      const SweepAxis& axis = *sweep_axis(key);
      entry[key] = r.list<nlohmann::json>(e.get(key), e.child_path(key),
                                          [&](const YAML::Node& n, const std::string& item_path) {
                                            return axis.parse(n, item_path, axis_reader);
                                          });
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// The nearest ancestor of `dir` holding CMakeLists.txt and configs/; `dir` if none does.
fs::path find_repo_root(const fs::path& dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / "CMakeLists.txt", ec) && fs::is_directory(p / "configs", ec)) return p;
    if (p == p.parent_path()) break;
  }
  return dir;
}

std::string resolve_path(const std::string& p, const fs::path& repo_root) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  std::error_code ec;
  const fs::path in_cwd = fs::absolute(p, ec);
  if (!ec && fs::exists(in_cwd, ec)) return in_cwd.lexically_normal().string();
  return (repo_root / p).lexically_normal().string();
}

// A Hugging Face model id ("org/name") that is not a local path (neither in the current
// directory nor under the repository root) is kept as written: the loader looks it up in the
// Hugging Face cache (models/formats/hf_hub_cache.h).
bool is_hf_model_id(const std::string& spec, const fs::path& repo_root) {
  std::error_code ec;
  return hf_model_id_like(spec) && !fs::exists(spec, ec) && !fs::exists(repo_root / spec, ec);
}

// Model strings: synthetic:<shape> is not a path.
std::string resolve_model(const std::string& spec, const fs::path& repo_root) {
  if (starts_with(spec, "synthetic:") || is_hf_model_id(spec, repo_root)) return spec;
  return resolve_path(spec, repo_root);
}

// Drafter specs (models/drafters/drafter_factory.cpp): only model paths and ngram:PATH hold
// paths.
std::string resolve_drafter(const std::string& spec, const fs::path& repo_root) {
  if (spec == "lookup" || starts_with(spec, "lookup:") || starts_with(spec, "self:")) return spec;
  if (starts_with(spec, "ngram:")) return "ngram:" + resolve_path(spec.substr(6), repo_root);
  return resolve_model(spec, repo_root);
}

// Applies one --set "a.b.c=value" to the document root.
std::string apply_override(YAML::Node& root, const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    fail_input("--set ", text, ": expected key.path=value (e.g. --set sweep.gamma=[2,4])");
  const std::string key = text.substr(0, eq);
  std::vector<std::string> segments;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    segments.push_back(
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (segments.back().empty())
      fail_input("--set ", key, ": empty key segment (expected key.path=value)");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    fail_input("--set ", key, ": the value is not valid YAML: ", e.msg);
  }
  if (!root.IsMap()) fail_input("--set ", key, ": the config's top level is not a mapping");
  YAML::Node cur = root;
  std::string walked;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    walked += (i ? "." : "") + segments[i];
    // Node::operator= would assign through to the tree; reset() rebinds `cur` instead.
    if (!cur[segments[i]]) cur[segments[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[segments[i]];
    if (!next.IsMap()) fail_input("--set ", key, ": '", walked, "' is not a mapping");
    cur.reset(next);
  }
  cur[segments.back()] = value;
  return key;
}

}  // namespace

std::string experiment_hash_hex(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string experiment_expand_string(const std::string& value, const std::string& what) {
  std::string out;
  size_t i = 0;
  if (value == "~" || starts_with(value, "~/")) {
    const char* home = std::getenv("HOME");
    SPECLAB_INPUT_CHECK(home && *home, what, ": cannot expand '~': HOME is not set");
    out = home;
    i = 1;
  }
  while (i < value.size()) {
    if (value[i] == '$' && i + 1 < value.size() && value[i + 1] == '{') {
      const size_t close = value.find('}', i + 2);
      SPECLAB_INPUT_CHECK(close != std::string::npos, what, ": unterminated '${' in '", value, "'");
      std::string body = value.substr(i + 2, close - i - 2);
      std::string hint;
      const size_t q = body.find(":?");
      if (q != std::string::npos) {
        hint = body.substr(q + 2);
        body = body.substr(0, q);
      }
      SPECLAB_INPUT_CHECK(!body.empty(), what, ": empty variable name in '", value, "'");
      const char* env = std::getenv(body.c_str());
      if (!env || !*env)
        fail_input(what, ": environment variable ", body, " is not set",
                   hint.empty() ? "" : " (" + hint + ")");
      out += env;
      i = close + 1;
    } else {
      out += value[i++];
    }
  }
  return out;
}

bool ExperimentConfig::set_on_command_line(const std::string& yaml_path) const {
  return where(yaml_path).rfind("--set ", 0) == 0;
}

std::string ExperimentConfig::where(const std::string& yaml_path) const {
  std::string p = yaml_path;
  while (true) {
    auto it = locations.find(p);
    if (it != locations.end())
      return it->second + ": " + (yaml_path.empty() ? "(top level)" : yaml_path);
    if (p.empty()) break;
    const size_t cut = p.find_last_of(".[");
    p = cut == std::string::npos ? "" : p.substr(0, cut);
  }
  return file + ": " + yaml_path;
}

const DrafterEntry* ExperimentConfig::find_drafter(const std::string& name) const {
  for (const auto& d : drafters)
    if (d.name == name) return &d;
  return nullptr;
}

nlohmann::json ExperimentConfig::prompts_json() const {
  if (!prompts) return nullptr;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : prompts->files) files.push_back(f.spec);
  nlohmann::json j = {
      {"file", files}, {"limit", prompts->limit}, {"chat_template", prompts->chat_template}};
  // Only when set, so configs without them keep their hash and cell ids.
  if (prompts->skip != 0) j["skip"] = prompts->skip;
  if (!prompts->tokenizer.spec.empty()) j["tokenizer"] = prompts->tokenizer.spec;
  return j;
}

nlohmann::json ExperimentConfig::generation_json() const {
  nlohmann::json j = {{"max_new_tokens", generation.max_new_tokens},
                      {"seed", generation.seed},
                      {"repeats", generation.repeats},
                      {"warmup", generation.warmup},
                      {"threads", generation.threads},
                      {"ctx", generation.ctx},
                      {"ignore_eos", generation.ignore_eos},
                      {"backend", generation.backend}};
  // Only when set, so configs without it keep their hash and cell ids.
  if (!generation.matmul_isa.empty()) j["matmul_isa"] = generation.matmul_isa;
  return j;
}

nlohmann::json ExperimentConfig::to_json() const {
  nlohmann::json j;
  j["name"] = name;
  j["question"] = question;
  if (target) j["target"] = target->spec;
  nlohmann::json ds = nlohmann::json::object();
  for (const auto& d : drafters) ds[d.name] = d.ref.spec;
  j["drafters"] = ds;
  if (prompts) j["prompts"] = prompts_json();
  j["generation"] = generation_json();
  j["measure"] = {{"baseline", measure.baseline},
                  {"cost_curve_max_k", measure.cost_curve_max_k},
                  {"bootstrap_resamples", measure.bootstrap_resamples},
                  {"confidence", measure.confidence},
                  {"cost_only", measure.cost_only}};
  // Left out at its default, so configs that do not set it keep their hash.
  if (measure.acceptance_stride != MeasureConfig{}.acceptance_stride)
    j["measure"]["acceptance_stride"] = measure.acceptance_stride;
  if (measure.cost_profile_seconds != MeasureConfig{}.cost_profile_seconds)
    j["measure"]["cost_profile_seconds"] = measure.cost_profile_seconds;
  if (measure.cost_profile_recheck != MeasureConfig{}.cost_profile_recheck)
    j["measure"]["cost_profile_recheck"] = measure.cost_profile_recheck;
  if (sweep) {
    // Axes at their default list that say so are left out, so configs that do not use
    // them keep their hash (sweep_axes.h).
    nlohmann::json sw = nlohmann::json::object();
    for (const SweepAxis& axis : sweep_axes()) {
      const std::vector<nlohmann::json>& values = sweep->values(axis.key);
      if (axis.omit_at_default && values == axis.defaults) continue;
      sw[axis.key] = values;
    }
    // Left out when empty, so configs without exclusions keep their hash.
    if (!sweep->exclude.empty()) sw["exclude"] = sweep->exclude;
    j["sweep"] = sw;
  }
  if (simulate) j["simulate"] = {{"table", simulate->table}};
  j["gate"] = {{"sigmas", gate.sigmas}};
  // Left out at its default, so configs that do not set it keep their hash.
  if (gate.deterministic_band != GateConfig{}.deterministic_band)
    j["gate"]["deterministic_band"] = gate.deterministic_band;
  return j;
}

const std::vector<nlohmann::json>& SweepConfig::values(const std::string& key) const {
  static const std::vector<nlohmann::json> kNone;
  const auto it = axes.find(key);
  if (it != axes.end()) return it->second;
  // An axis without a list (a config made before the axis was registered) is at its default.
  const SweepAxis* axis = sweep_axis(key);
  return axis ? axis->defaults : kNone;
}

int SweepConfig::max_gamma() const {
  int max_gamma = 0;
  for (int g : gamma()) max_gamma = std::max(max_gamma, g);
  return max_gamma;
}

std::string ExperimentConfig::config_hash() const { return experiment_hash_hex(to_json().dump()); }

namespace {
// InputError "<what>:<line>: invalid UTF-8 byte 0xNN" at the first byte that does not start a
// valid UTF-8 sequence.
void config_check_utf8(const std::string& text, const std::string& what) {
  int line = 1;
  for (size_t pos = 0; pos < text.size();) {
    if (text[pos] == '\n') line++;
    // yaml-cpp keeps a NUL inside a scalar, which then cuts C strings (paths) short.
    SPECLAB_INPUT_CHECK(text[pos] != '\0', what, ":", line, ": NUL byte (the config must be text)");
    if (!utf8_is_valid_at(text, pos))
      fail_input(what, ":", line, ": invalid UTF-8 byte 0x", std::hex,
                 static_cast<int>(static_cast<unsigned char>(text[pos])),
                 " (the config must be UTF-8 text)");
    pos += utf8_sequence_length(text, pos);
  }
}

// A config is a page of nested mappings: 64 levels is far beyond any. yaml-cpp parses nesting
// recursively and gives up deep down with "bad file"; this names the line instead. Counts
// flow brackets outside quotes and comments, and block levels by indentation.
constexpr int kMaxConfigDepth = 64;
void config_check_depth(const std::string& text, const std::string& what) {
  int line = 1, flow = 0;
  std::vector<size_t> indents;  // the indentation of each open block level
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view l(text.data() + pos, end - pos);
    const size_t indent = l.find_first_not_of(' ');
    if (flow == 0 && indent != std::string_view::npos && l[indent] != '#') {
      while (!indents.empty() && indents.back() >= indent) indents.pop_back();
      indents.push_back(indent);
      SPECLAB_INPUT_CHECK(static_cast<int>(indents.size()) <= kMaxConfigDepth, what, ":", line,
                          ": nested deeper than ", kMaxConfigDepth,
                          " levels (indentation); expected a config of a few levels");
    }
    char quote = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      const char ch = l[i];
      if (quote) {
        if (ch == quote) quote = 0;
        continue;
      }
      if (ch == '"' || ch == '\'') {
        quote = ch;
      } else if (ch == '#' && (i == 0 || l[i - 1] == ' ')) {
        break;
      } else if (ch == '[' || ch == '{') {
        SPECLAB_INPUT_CHECK(++flow <= kMaxConfigDepth, what, ":", line, ": nested deeper than ",
                            kMaxConfigDepth,
                            " levels ([ and {); expected a config of a few levels");
      } else if ((ch == ']' || ch == '}') && flow > 0) {
        --flow;
      }
    }
    pos = end + 1;
    ++line;
  }
}
}  // namespace

ExperimentConfig experiment_config_load(const std::string& path,
                                        const std::vector<std::string>& overrides) {
  ExperimentConfig c;
  c.file = path;
  YAML::Node root;
  // A special file (/dev/zero, a FIFO) is refused before it is read; a config is a page of
  // text, so 16 MiB bounds a wrong path's cost.
  constexpr uint64_t kMaxConfigBytes = 16ull << 20;
  const std::string text = input_file_read(path, "config file", kMaxConfigBytes);
  // Every string of the config ends up in JSON (config hash, result rows), which needs
  // valid UTF-8: refuse other bytes here, naming the line (found by fuzzing).
  config_check_utf8(text, path);
  for (const auto& o : overrides) config_check_utf8(o, "--set " + o.substr(0, o.find('=')));
  config_check_depth(text, path);
  try {
    // Every document, so that a second one (after ---, or text after ...) is not ignored.
    const std::vector<YAML::Node> docs = YAML::LoadAll(text);
    SPECLAB_INPUT_CHECK(docs.size() <= 1, path, ": holds ", docs.size(),
                        " YAML documents, expected one (a second after --- or ... would be "
                        "ignored)");
    if (!docs.empty()) root = docs[0];
  } catch (const YAML::ParserException& e) {
    fail_input(path, ":", e.mark.line + 1, ": YAML syntax error: ", e.msg);
  } catch (const YAML::BadFile&) {
    fail_input(path, ": cannot read config file");
  }
  if (root.IsNull()) fail_input(path, ": the config file is empty (expected a mapping)");

  std::vector<std::string> override_keys;
  for (const auto& o : overrides) {
    override_keys.push_back(apply_override(root, o));
    // A key set twice: the last would win without a word.
    for (size_t i = 0; i + 1 < override_keys.size(); ++i)
      SPECLAB_INPUT_CHECK(override_keys[i] != override_keys.back(), "--set ", override_keys.back(),
                          ": given twice (once is enough; the last would "
                          "win)");
  }

  Reader r(path, override_keys, &c.locations);
  const fs::path repo_root = find_repo_root(fs::absolute(path).parent_path());
  // ${VAR} and ~ expansion, with "file:line: key.path" in errors.
  auto expanded = [&](const YAML::Node& node, const std::string& p) {
    return experiment_expand_string(r.scalar_string(node, p), r.location(node, p) + ": " + p);
  };

  // Allowed keys come from the schema table (config_schema.cpp), the docs' source too.
  MapReader top(r, root, "", config_schema_children(""));
  c.name = r.scalar_string(top.require("name"), "name");
  c.question = r.scalar_string(top.require("question"), "question");
  if (top.has("target")) {
    const std::string spec = expanded(top.get("target"), "target");
    c.target = ModelRef{spec, resolve_model(spec, repo_root)};
  }
  if (top.has("drafters")) {
    const YAML::Node node = top.get("drafters");
    r.record(node, "drafters");
    if (!node.IsMap())
      r.fail(node, "drafters", "expected a mapping name -> drafter spec, got " + describe(node));
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string name = r.scalar_string(it->first, "drafters");
      const std::string p = "drafters." + name;
      if (c.find_drafter(name)) r.fail(it->first, p, "duplicate drafter name");
      // A drafter's name labels stderr lines, table rows and file names: one safe word.
      if (!safe_name(name, 64, "+"))
        r.fail(it->first, "drafters",
               "expected a drafter name of 1-64 letters, digits, '.', '_', '-' or '+' (not . "
               "or ..), got '" +
                   name + "'");
      const std::string spec = expanded(it->second, p);
      c.drafters.push_back(DrafterEntry{name, ModelRef{spec, resolve_drafter(spec, repo_root)}});
    }
  }
  if (top.has("prompts")) {
    MapReader m(r, top.get("prompts"), "prompts", config_schema_children("prompts"));
    PromptsConfig p;
    for (const auto& spec : r.list<std::string>(m.require("file"), "prompts.file", expanded))
      p.files.push_back(ModelRef{spec, resolve_path(spec, repo_root)});
    if (m.has("skip")) p.skip = r.scalar_int32(m.get("skip"), "prompts.skip");
    if (m.has("limit")) p.limit = r.scalar_int32(m.get("limit"), "prompts.limit");
    if (m.has("chat_template"))
      p.chat_template = r.scalar_bool(m.get("chat_template"), "prompts.chat_template");
    if (m.has("tokenizer")) {
      const std::string spec = expanded(m.get("tokenizer"), "prompts.tokenizer");
      if (spec.empty())
        r.fail(m.get("tokenizer"), "prompts.tokenizer",
               "expected a tokenizer path, got an empty string (leave the key out for the "
               "target's own)");
      p.tokenizer = ModelRef{spec, resolve_model(spec, repo_root)};
    }
    c.prompts = p;
  }
  if (top.has("generation")) {
    MapReader m(r, top.get("generation"), "generation", config_schema_children("generation"));
    GenerationConfig& g = c.generation;
    auto int_key = [&](const char* key, int* out) {
      if (m.has(key)) *out = r.scalar_int32(m.get(key), m.child_path(key));
    };
    int_key("max_new_tokens", &g.max_new_tokens);
    if (m.has("seed")) g.seed = r.scalar_int(m.get("seed"), "generation.seed");
    int_key("repeats", &g.repeats);
    int_key("warmup", &g.warmup);
    int_key("threads", &g.threads);
    int_key("ctx", &g.ctx);
    if (m.has("ignore_eos"))
      g.ignore_eos = r.scalar_bool(m.get("ignore_eos"), "generation.ignore_eos");
    if (m.has("backend")) g.backend = r.scalar_string(m.get("backend"), "generation.backend");
    if (m.has("matmul_isa"))
      g.matmul_isa = r.scalar_string(m.get("matmul_isa"), "generation.matmul_isa");
  }
  bool cost_curve_given = false;
  if (top.has("measure")) {
    MapReader m(r, top.get("measure"), "measure", config_schema_children("measure"));
    MeasureConfig& ms = c.measure;
    if (m.has("baseline")) ms.baseline = r.scalar_bool(m.get("baseline"), "measure.baseline");
    if (m.has("cost_curve_max_k")) {
      ms.cost_curve_max_k = r.scalar_int32(m.get("cost_curve_max_k"), "measure.cost_curve_max_k");
      cost_curve_given = true;
    }
    if (m.has("bootstrap_resamples"))
      ms.bootstrap_resamples =
          r.scalar_int32(m.get("bootstrap_resamples"), "measure.bootstrap_resamples");
    if (m.has("confidence"))
      ms.confidence = r.scalar_double(m.get("confidence"), "measure.confidence");
    if (m.has("cost_only")) ms.cost_only = r.scalar_bool(m.get("cost_only"), "measure.cost_only");
    if (m.has("acceptance_stride"))
      ms.acceptance_stride =
          r.scalar_int32(m.get("acceptance_stride"), "measure.acceptance_stride");
    if (m.has("cost_profile_seconds"))
      ms.cost_profile_seconds =
          r.scalar_double(m.get("cost_profile_seconds"), "measure.cost_profile_seconds");
    if (m.has("cost_profile_recheck"))
      ms.cost_profile_recheck =
          r.scalar_double(m.get("cost_profile_recheck"), "measure.cost_profile_recheck");
  }
  if (top.has("sweep")) {
    MapReader m(r, top.get("sweep"), "sweep", config_schema_children("sweep"));
    SweepConfig s;
    AxisReader axis_reader(r);
    for (const SweepAxis& axis : sweep_axes()) {
      const std::string p = m.child_path(axis.key);
      if (!axis.defaults.empty() && !m.has(axis.key)) {
        s.axes[axis.key] = axis.defaults;
        continue;
      }
      s.axes[axis.key] = r.list<nlohmann::json>(
          m.require(axis.key), p, [&](const YAML::Node& n, const std::string& item_path) {
            return axis.parse(n, item_path, axis_reader);
          });
    }
    if (m.has("exclude")) s.exclude = read_exclusions(r, m.get("exclude"), axis_reader);
    c.sweep = s;
  }
  if (top.has("simulate")) {
    MapReader m(r, top.get("simulate"), "simulate", config_schema_children("simulate"));
    c.simulate = SimulateConfig{r.scalar_string(m.require("table"), "simulate.table")};
  }
  if (top.has("gate")) {
    MapReader m(r, top.get("gate"), "gate", config_schema_children("gate"));
    if (m.has("sigmas")) c.gate.sigmas = r.scalar_double(m.get("sigmas"), "gate.sigmas");
    if (m.has("deterministic_band"))
      c.gate.deterministic_band =
          r.scalar_double(m.get("deterministic_band"), "gate.deterministic_band");
  }
  if (!cost_curve_given) {
    const int max_gamma = c.sweep ? c.sweep->max_gamma() : 0;
    c.measure.cost_curve_max_k = std::max(1, max_gamma + 1);
  }
  experiment_config_validate(c);
  return c;
}

void experiment_config_validate(const ExperimentConfig& c) {
  // check(condition, yaml path, what was expected): one line per rule.
  auto check = [&c](bool ok, const std::string& path, const std::string& expected) {
    if (!ok) fail_input(c.where(path), ": ", expected);
  };
  check(safe_name(c.name, 128), "name",
        "expected 1-128 letters, digits, '.', '_' or '-', not . or .. (it names "
        "results/<name>/), got '" +
            c.name + "'");
  check(!c.question.empty() && c.question.find('\n') == std::string::npos, "question",
        "expected a one-line question");
  check(c.target || c.simulate, "target",
        "required key is missing (only simulator-only configs, with `simulate`, have no target)");
  if (c.target)
    check(!c.target->spec.empty(), "target", "expected a model path, got an empty string");
  if (c.target)
    check(!c.drafters.empty(), "drafters",
          "expected at least one drafter (a config with a target needs `drafters`)");
  if (c.target)
    check(c.sweep.has_value(), "sweep",
          "required key is missing (a config with a target needs a sweep)");
  if (c.target)
    check(c.prompts || c.measure.cost_only, "prompts",
          "required key is missing (only measure.cost_only configs run without prompts)");
  for (const auto& d : c.drafters) {
    check(!d.ref.spec.empty(), "drafters." + d.name,
          "expected a drafter spec (model path, lookup:n=N, self:skip=A-B, ngram:PATH), got an "
          "empty string");
    // Every drafter's syntax, used by this sweep or only by a --set of it.
    try {
      drafter_spec_check(d.ref.spec);
    } catch (const InputError& e) {
      fail_input(c.where("drafters." + d.name), ": ", e.what());
    }
  }
  if (c.prompts)
    check(!c.prompts->files.empty(), "prompts.file",
          "expected a JSONL file path or a non-empty list of them");
  if (c.prompts)
    for (size_t i = 0; i < c.prompts->files.size(); ++i)
      check(!c.prompts->files[i].spec.empty(), str_cat("prompts.file[", i, "]"),
            "expected a JSONL file path, got an empty string");
  if (c.prompts)
    check(c.prompts->skip >= 0, "prompts.skip",
          str_cat("expected an integer >= 0, got ", c.prompts->skip));
  if (c.prompts)
    check(c.prompts->limit >= 0, "prompts.limit",
          str_cat("expected an integer >= 0 (0 = all), got ", c.prompts->limit));

  // Stated limits (experiment_config.h): sizes that allocate or loop are bounded here, before
  // any memory or time is spent on them.
  const GenerationConfig& g = c.generation;
  check(g.max_new_tokens >= 1 && g.max_new_tokens <= kMaxContextTokens, "generation.max_new_tokens",
        str_cat("expected an integer in 1..", kMaxContextTokens, ", got ", g.max_new_tokens));
  check(g.seed >= 0, "generation.seed", str_cat("expected an integer >= 0, got ", g.seed));
  check(g.repeats >= 1 && g.repeats <= kMaxRepeats, "generation.repeats",
        str_cat("expected an integer in 1..", kMaxRepeats, ", got ", g.repeats));
  check(g.warmup >= 0 && g.warmup <= kMaxRepeats, "generation.warmup",
        str_cat("expected an integer in 0..", kMaxRepeats, ", got ", g.warmup));
  check(g.ctx <= kMaxContextTokens, "generation.ctx",
        str_cat("expected an integer <= ", kMaxContextTokens, ", got ", g.ctx));
  check(g.backend == "cpu" || g.backend == "cuda", "generation.backend",
        str_cat("expected cpu or cuda, got '", g.backend, "'"));
  check(g.matmul_isa.empty() || matmul_isa_name_known(g.matmul_isa), "generation.matmul_isa",
        str_cat("expected ", matmul_isa_names(), ", got '", g.matmul_isa, "'"));
  check(g.threads >= 0 && g.threads <= kMaxThreads, "generation.threads",
        str_cat("expected an integer in 0..", kMaxThreads, " (0 = all cores), got ", g.threads));
  check(g.ctx > g.max_new_tokens, "generation.ctx",
        str_cat("expected an integer > generation.max_new_tokens (", g.max_new_tokens, "), got ",
                g.ctx));

  if (c.sweep) {
    // Every axis of the table (sweep_axes.h), in its order.
    const SweepConfig& s = *c.sweep;
    for (const SweepAxis& axis : sweep_axes())
      check(!s.values(axis.key).empty(), "sweep." + axis.key, axis.empty_message);
    // The number of cells, before sweep_expand allocates them (and before the duplicate
    // checks below, quadratic in an axis' length, run).
    uint64_t n_cells = 1;
    for (const SweepAxis& axis : sweep_axes())
      n_cells = std::min<uint64_t>(n_cells * std::max<size_t>(s.values(axis.key).size(), 1),
                                   kMaxSweepCells + 1);
    check(n_cells <= kMaxSweepCells, "sweep",
          str_cat("the axes' lengths multiply to more than ", kMaxSweepCells,
                  " cells (the limit); split the sweep into several configs"));
    for (const SweepAxis& axis : sweep_axes()) {
      const std::vector<nlohmann::json>& v = s.values(axis.key);
      auto at = [&](size_t i) { return str_cat("sweep.", axis.key, "[", i, "]"); };
      for (size_t i = 0; i < v.size(); ++i) {
        const SweepAxisProblem problem = axis.check(v[i], c);
        check(problem.message.empty(), at(i) + problem.suffix, problem.message);
      }
      if (axis.check_list) {
        const std::string message = axis.check_list(v, c);
        check(message.empty(), "sweep." + axis.key, message);
      }
      // A repeated value would make two identical cells (same cell_id).
      for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          check(v[i] != v[j], at(i),
                str_cat("duplicate value (same as sweep.", axis.key, "[", j, "])"));
    }
    // An exclusion names values the sweep has (a typo would exclude nothing, silently), unless
    // --set narrowed that axis (`--set sweep.drafter=[lookup]` on a config that excludes a
    // drafter the narrowed sweep no longer has).
    for (size_t i = 0; i < s.exclude.size(); ++i)
      for (const auto& [key, values] : s.exclude[i]) {
        const std::vector<nlohmann::json>& on_axis = s.values(key);
        const bool narrowed = c.set_on_command_line("sweep." + key);
        for (size_t j = 0; j < values.size(); ++j)
          check(narrowed || std::find(on_axis.begin(), on_axis.end(), values[j]) != on_axis.end(),
                str_cat("sweep.exclude[", i, "].", key, "[", j, "]"),
                str_cat("expected one of sweep.", key, "'s values, got ", values[j].dump()));
      }
  }
  const MeasureConfig& m = c.measure;
  check(m.cost_curve_max_k >= 1 && m.cost_curve_max_k <= 65, "measure.cost_curve_max_k",
        str_cat("expected an integer in 1..65, got ", m.cost_curve_max_k));
  check(m.bootstrap_resamples >= 1 && m.bootstrap_resamples <= kMaxBootstrapResamples,
        "measure.bootstrap_resamples",
        str_cat("expected an integer in 1..", kMaxBootstrapResamples, ", got ",
                m.bootstrap_resamples));
  check(m.confidence > 0 && m.confidence < 1, "measure.confidence",
        str_cat("expected a number in (0, 1), got ", m.confidence));
  check(m.acceptance_stride >= 1 && m.acceptance_stride <= kMaxAcceptanceStride,
        "measure.acceptance_stride",
        str_cat("expected an integer in 1..", kMaxAcceptanceStride, ", got ", m.acceptance_stride));
  check(m.cost_profile_seconds >= 0 && m.cost_profile_seconds <= kMaxCostProfileSeconds,
        "measure.cost_profile_seconds",
        str_cat("expected seconds in [0, ", kMaxCostProfileSeconds, "], got ",
                m.cost_profile_seconds));
  check(m.cost_profile_recheck >= 0 && m.cost_profile_recheck <= 1, "measure.cost_profile_recheck",
        str_cat("expected a fraction in [0, 1], got ", m.cost_profile_recheck));

  const int max_gamma = c.sweep ? c.sweep->max_gamma() : 0;
  check(m.cost_curve_max_k >= max_gamma + 1, "measure.cost_curve_max_k",
        str_cat("expected at least max(sweep.gamma) + 1 = ", max_gamma + 1,
                " (the speedup prediction needs T(gamma + 1)), got ", m.cost_curve_max_k));
  if (c.simulate) {
    const std::vector<std::string> tables(std::begin(kSimulateTables), std::end(kSimulateTables));
    check(std::count(tables.begin(), tables.end(), c.simulate->table) > 0, "simulate.table",
          "expected one of " + join(tables, " | ") + ", got '" + c.simulate->table + "'");
    // The section is what a config without a target runs (speclab simulate); beside a target
    // nothing would read it, and a user who wrote it expects it to run.
    check(!c.target, "simulate",
          "a simulator-only section (speclab simulate --table), but this config has a target "
          "and runs its sweep: remove `simulate`, or the target and its sweep");
  }
  check(c.gate.sigmas > 0, "gate.sigmas", str_cat("expected a number > 0, got ", c.gate.sigmas));
  check(c.gate.deterministic_band >= 0 && c.gate.deterministic_band < 1, "gate.deterministic_band",
        str_cat("expected a number in [0, 1), got ", c.gate.deterministic_band));
}

}  // namespace speclab
