#include "experiments/config/sweep_axes.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/token_tree.h"
#include "core/tree_verify.h"
#include "experiments/config/experiment_config.h"
#include "experiments/config/sweep.h"
#include "experiments/config/yaml_scalar_tag.h"

namespace speclab {

namespace {

using json = nlohmann::json;

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// A plain (untagged) YAML scalar that is a finite number, as the loader's numbers are read.
bool plain_number(const YAML::Node& n, double* out) {
  if (!n.IsScalar() || !yaml_scalar_may_be(n, {"int", "float"})) return false;
  char* end = nullptr;
  const double v = std::strtod(n.Scalar().c_str(), &end);
  if (n.Scalar().empty() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// An axis of one typed Cell field read as one YAML scalar: `bad(value)` gives "" or what was
// expected; `digits` < 0 formats the value as written (integers, words).
template <typename T>
SweepAxis field_axis(std::string key, T Cell::*field, std::string type, T fallback,
                     std::string default_text, std::string meaning,
                     std::function<std::string(const T&)> bad, std::string label, int digits,
                     bool omit_at_default = false) {
  SweepAxis a;
  a.key = key;
  a.type = std::move(type);
  a.default_text = std::move(default_text);
  a.meaning = std::move(meaning);
  a.defaults = {json(fallback)};
  a.omit_at_default = omit_at_default;
  a.parse = [](const YAML::Node& n, const std::string& path, SweepYamlReader& r) -> json {
    if constexpr (std::is_same_v<T, int>)
      return r.integer(n, path);
    else if constexpr (std::is_same_v<T, double>)
      return r.number(n, path) + 0.0;  // -0 is 0: one cell, one cell id
    else
      return r.string(n, path);
  };
  a.check = [bad](const json& v, const ExperimentConfig&) {
    return SweepAxisProblem{"", bad(v.get<T>())};
  };
  a.check_is_a_range = true;
  a.apply = [field](const json& v, const ExperimentConfig&, Cell& c) {
    c.*field = v.get<T>();
    return true;
  };
  a.write_id = [key, field, fallback, omit_at_default](const Cell& c, json& params) {
    if (!(omit_at_default && c.*field == fallback)) params[key] = c.*field;
  };
  a.read_row = [key, field, fallback](const json& row, Cell& c) {
    c.*field = row.contains(key) ? row.at(key).get<T>() : fallback;
  };
  a.label = std::move(label);
  a.format = [field, digits](const Cell& c) -> std::string {
    if constexpr (std::is_same_v<T, std::string>)
      return c.*field;
    else
      return digits < 0 ? str_cat(c.*field) : fixed(static_cast<double>(c.*field), digits);
  };
  return a;
}

SweepAxis int_axis(std::string key, int Cell::*field, std::string type, int fallback,
                   std::string default_text, std::string meaning,
                   std::function<std::string(const int&)> bad, std::string label,
                   bool omit_at_default = false) {
  return field_axis<int>(std::move(key), field, std::move(type), fallback, std::move(default_text),
                         std::move(meaning), std::move(bad), std::move(label), -1, omit_at_default);
}

SweepAxis number_axis(std::string key, double Cell::*field, std::string type, double fallback,
                      std::string default_text, std::string meaning,
                      std::function<std::string(const double&)> bad, std::string label,
                      int digits) {
  return field_axis<double>(std::move(key), field, std::move(type), fallback,
                            std::move(default_text), std::move(meaning), std::move(bad),
                            std::move(label), digits);
}

// A number in (0, 1]: "" or the message.
// The decoder samples in float: a positive setting below this is 0 or a denormal there (and a
// temperature above 1e30 overflows its logits' scale), so such values are refused here rather
// than silently run as something else.
constexpr double kSmallestSetting = 1e-30, kLargestTemperature = 1e30;

std::string unit_open_closed(double v) {
  if (v > 0 && v < kSmallestSetting)
    return str_cat(
        "expected a number in (0, 1] of at least 1e-30 (the sampler computes in "
        "float), got ",
        v);
  return v > 0 && v <= 1 ? "" : str_cat("expected a number in (0, 1], got ", v);
}

std::string temperature_problem(double v) {
  if (v == 0 || (v >= kSmallestSetting && v <= kLargestTemperature)) return "";
  if (v > 0)
    return str_cat("expected 0 or a number in [1e-30, 1e30] (the sampler computes in float), got ",
                   v);
  return str_cat("expected a number >= 0 (0 = greedy), got ", v);
}

SweepAxis drafter_axis() {
  SweepAxis a;
  a.key = "drafter";
  a.type = "list of names from `drafters`";
  a.default_text = "required";
  a.meaning = "the drafters";
  a.empty_message = "expected a non-empty list of drafter names";
  a.parse = [](const YAML::Node& n, const std::string& path, SweepYamlReader& r) -> json {
    return r.string(n, path);
  };
  a.check = [](const json& v, const ExperimentConfig& config) {
    const std::string name = v.get<std::string>();
    if (config.find_drafter(name)) return SweepAxisProblem{};
    std::string known;
    for (const auto& d : config.drafters) known += (known.empty() ? "" : ", ") + d.name;
    return SweepAxisProblem{"", "unknown drafter '" + name + "' (known: " + known + ")"};
  };
  a.apply = [](const json& v, const ExperimentConfig& config, Cell& c) {
    c.drafter = v.get<std::string>();
    const DrafterEntry* entry = config.find_drafter(c.drafter);
    SPECLAB_ASSERT(entry != nullptr);  // experiment_config_validate checked it
    c.drafter_ref = entry->ref;
    return true;
  };
  // The identity is the spec, not the name: renaming a drafter keeps its cells' ids.
  a.write_id = [](const Cell& c, json& params) { params["drafter_spec"] = c.drafter_ref.spec; };
  a.write_row_extra = [](const Cell& c, json& row) { row["drafter"] = c.drafter; };
  a.read_row = [](const json& row, Cell& c) {
    c.drafter = row.value("drafter", std::string());
    c.drafter_ref.spec = row.value("drafter_spec", std::string());
    c.drafter_ref.path.clear();  // a row carries no machine's paths
  };
  a.label = "draft";
  a.format = [](const Cell& c) { return c.drafter; };
  return a;
}

SweepAxis draft_temperature_axis() {
  SweepAxis a;
  a.key = "draft_temperature";
  a.type = "list of \"same\" or numbers >= 0";
  a.default_text = "[same]";
  a.meaning = "the drafts' temperature; same = the cell's temperature";
  a.defaults = {json("same")};
  a.parse = [](const YAML::Node& n, const std::string& path, SweepYamlReader& r) -> json {
    if (n.IsScalar() && n.Scalar() == "same") return "same";
    r.record(n, path);
    double v = 0;
    if (plain_number(n, &v)) return v + 0.0;  // -0 is 0
    r.fail(n, path, "expected \"same\" or a number, got " + r.describe(n));
  };
  a.check = [](const json& v, const ExperimentConfig&) {
    if (v.is_string()) return SweepAxisProblem{};
    const std::string problem = temperature_problem(v.get<double>());
    if (problem.empty()) return SweepAxisProblem{};
    return SweepAxisProblem{
        "", v.get<double>() < 0
                ? str_cat("expected \"same\" or a number >= 0, got ", v.get<double>())
                : problem};
  };
  // "same" resolves to the cell's temperature (an earlier axis); a number written equal to
  // it makes the same cell, which sweep_expand drops as a duplicate id.
  a.apply = [](const json& v, const ExperimentConfig&, Cell& c) {
    c.draft_temperature_same = v.is_string();
    c.draft_temperature = v.is_string() ? c.temperature : v.get<double>();
    return true;
  };
  a.write_id = [](const Cell& c, json& params) {
    params["draft_temperature"] = c.draft_temperature;
  };
  a.write_row_extra = [](const Cell& c, json& row) {
    row["draft_temperature_same"] = c.draft_temperature_same;
  };
  a.read_row = [](const json& row, Cell& c) {
    const bool has = row.contains("draft_temperature");
    c.draft_temperature = has ? row.at("draft_temperature").get<double>() : c.temperature;
    c.draft_temperature_same = row.value("draft_temperature_same", !has);
  };
  a.label = "T_draft";
  a.format = [](const Cell& c) { return fixed(c.draft_temperature, 2); };
  return a;
}

SweepAxis synthetic_acceptance_axis() {
  SweepAxis a;
  a.key = "synthetic_acceptance";
  a.type = "list of off, numbers in (0, 1], or lists of them";
  a.default_text = "[off]";
  a.meaning =
      "timing only: accept each draft with this probability (a list: per draft position, the "
      "last repeating) instead of the exact test; the output is not the target's";
  a.defaults = {json("off")};
  a.omit_at_default = true;
  // Each value: "off", a number, or a list of numbers (one per draft position).
  a.parse = [](const YAML::Node& n, const std::string& p, SweepYamlReader& r) -> json {
    const char* expected =
        "expected off, a number in (0, 1] or a list of numbers in (0, 1] (one per draft "
        "position), got ";
    auto number = [&](const YAML::Node& x, const std::string& xp) -> double {
      r.record(x, xp);
      double v = 0;
      if (plain_number(x, &v)) return v;
      r.fail(x, xp, expected + r.describe(x));
    };
    r.record(n, p);
    if (n.IsScalar() && n.Scalar() == "off") return "off";
    if (n.IsScalar()) return json::array({number(n, p)});
    if (!n.IsSequence()) r.fail(n, p, expected + r.describe(n));
    if (n.size() == 0) r.fail(n, p, std::string(expected) + "an empty list");
    json per_position = json::array();
    for (size_t j = 0; j < n.size(); ++j)
      per_position.push_back(number(n[j], str_cat(p, "[", j, "]")));
    return per_position;
  };
  a.check = [](const json& v, const ExperimentConfig&) {
    if (v.is_string()) return SweepAxisProblem{};
    if (v.size() > 64)  // one entry per draft position, and gamma is at most 64
      return SweepAxisProblem{"", str_cat("expected at most 64 probabilities (one per draft "
                                          "position; gamma is at most 64), got ",
                                          v.size())};
    for (size_t j = 0; j < v.size(); ++j) {
      const double x = v[j].get<double>();
      if (!(x >= kSmallestSetting && x <= 1))
        return SweepAxisProblem{v.size() == 1 ? "" : str_cat("[", j, "]"),
                                str_cat("expected an acceptance probability in (0, 1], got ", x)};
    }
    return SweepAxisProblem{};
  };
  a.check_list = [](const std::vector<json>& values, const ExperimentConfig& config) {
    const bool any_on =
        std::any_of(values.begin(), values.end(), [](const json& v) { return !v.is_string(); });
    // The last probability repeats: [0.5, 0.5] is [0.5], one setting written twice.
    auto canonical = [](json v) {
      while (v.is_array() && v.size() > 1 && v[v.size() - 1] == v[v.size() - 2])
        v.erase(v.size() - 1);
      return v;
    };
    for (size_t i = 0; i < values.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (values[i] != values[j] && canonical(values[i]) == canonical(values[j]))
          return str_cat("[", i, "] ", values[i].dump(), " is the setting of [", j, "] ",
                         values[j].dump(), " (the last probability repeats): given twice");
    return any_on && config.measure.cost_only
               ? std::string(
                     "expected off with measure.cost_only (cost-only runs make no speculative "
                     "runs; their predicted grid already spans alpha)")
               : std::string();
  };
  a.apply = [](const json& v, const ExperimentConfig&, Cell& c) {
    c.synthetic_acceptance = v.is_string() ? std::vector<double>{} : v.get<std::vector<double>>();
    return true;
  };
  a.write_id = [](const Cell& c, json& params) {
    if (!c.synthetic_acceptance.empty()) params["synthetic_acceptance"] = c.synthetic_acceptance;
  };
  a.read_row = [](const json& row, Cell& c) {
    c.synthetic_acceptance = row.contains("synthetic_acceptance")
                                 ? row.at("synthetic_acceptance").get<std::vector<double>>()
                                 : std::vector<double>{};
  };
  a.label = "synthetic";
  a.format = [](const Cell& c) {
    if (c.synthetic_acceptance.empty()) return std::string("off");
    std::string out;
    for (double x : c.synthetic_acceptance) out += (out.empty() ? "" : ",") + fixed(x, 2);
    return out;
  };
  return a;
}

SweepAxis tree_axis() {
  SweepAxis a;
  a.key = "tree";
  a.type = "list of off or tree shapes (3x2x1, 2x2:sample)";
  a.default_text = "[off]";
  a.meaning = "tree speculation; tree cells take the first gamma only and the exact settings";
  a.defaults = {json("off")};
  a.omit_at_default = true;
  a.parse = [](const YAML::Node& n, const std::string& path, SweepYamlReader& r) -> json {
    return r.string(n, path);
  };
  // Two spellings of one tree ("2x2" and "2x2:topk") are one cell: a duplicate, not a cell
  // merged into another without a word.
  a.check_list = [](const std::vector<json>& values, const ExperimentConfig&) -> std::string {
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string text = values[i].get<std::string>();
      std::string shape = text;
      try {
        if (text != "off") shape = tree_shape_parse(text, "tree").to_string();
      } catch (const InputError&) {
        continue;  // the value's own check names it
      }
      const auto [it, fresh] = first.emplace(shape, i);
      if (!fresh)
        return str_cat("[", i, "] '", text, "' is the tree of [", it->second, "] '",
                       values[it->second].get<std::string>(), "' (", shape,
                       "): one cell, given twice");
    }
    return "";
  };
  a.check = [](const json& v, const ExperimentConfig& config) {
    const std::string text = v.get<std::string>();
    if (text == "off") return SweepAxisProblem{};
    try {
      tree_shape_parse(text, "tree");
    } catch (const InputError&) {
      return SweepAxisProblem{
          "", str_cat("expected off or a tree shape such as 3x2x1 or 2x2:sample (branching 1..",
                      kTreeMaxBranch, " per level, at most 256 nodes), got '", text, "'")};
    }
    if (config.measure.cost_only)
      return SweepAxisProblem{
          "", "expected off with measure.cost_only (cost-only runs make no speculative runs)"};
    return SweepAxisProblem{};
  };
  // A tree cell exists only for exact chain settings (lenience 1, fixed policy, p_min 0,
  // synthetic off) at the first gamma, and takes the tree's depth as its gamma: one tree
  // cell per combination of the other axes. "off" keeps the chain cell.
  a.apply = [](const json& v, const ExperimentConfig& config, Cell& c) {
    const std::string text = v.get<std::string>();
    if (text == "off") return true;
    const bool exact = c.lenience == 1.0 && c.gamma_policy == "fixed" && c.p_min == 0.0 &&
                       c.synthetic_acceptance.empty() &&
                       c.gamma == config.sweep->values("gamma").front().get<int>();
    if (!exact) return false;
    c.tree = tree_shape_parse(text, "sweep.tree");
    c.gamma = c.tree.depth();
    return true;
  };
  a.write_id = [](const Cell& c, json& params) {
    if (c.tree.depth() > 0) params["tree"] = c.tree.to_string();
  };
  a.read_row = [](const json& row, Cell& c) {
    c.tree = row.contains("tree") ? tree_shape_parse(row.at("tree").get<std::string>(), "tree")
                                  : TreeShape{};
  };
  a.label = "tree";
  a.format = [](const Cell& c) {
    return c.tree.depth() > 0 ? c.tree.to_string() : std::string("off");
  };
  return a;
}

// The table. Order is the expansion order (first outermost); the result files' cell order
// and `--shard` rely on it.
std::vector<SweepAxis> builtin_axes() {
  std::vector<SweepAxis> axes;
  axes.push_back(drafter_axis());
  axes.push_back(int_axis(
      "gamma", &Cell::gamma, "list of integers in 1..64", 4, "[4]",
      "tokens drafted per round (gamma_policy heuristic: the first gamma; entropy: gamma_max)",
      [](const int& v) {
        return v >= 1 && v <= 64 ? "" : str_cat("expected an integer in 1..64, got ", v);
      },
      "gamma"));
  axes.push_back(number_axis(
      "temperature", &Cell::temperature, "list of numbers >= 0", 0.0, "[0]",
      "target temperature (0 = greedy)", [](const double& v) { return temperature_problem(v); },
      "T", 1));
  axes.push_back(draft_temperature_axis());
  axes.push_back(int_axis(
      "top_k", &Cell::top_k, "list of integers >= 0", 0, "[0]", "top-k filter (0 = off)",
      [](const int& v) {
        return v >= 0 ? "" : str_cat("expected an integer >= 0 (0 = off), got ", v);
      },
      "top_k"));
  axes.push_back(number_axis("top_p", &Cell::top_p, "list of numbers in (0, 1]", 1.0, "[1.0]",
                             "top-p filter (1 = off)", unit_open_closed, "top_p", 2));
  axes.push_back(number_axis("lenience", &Cell::lenience, "list of numbers in (0, 1]", 1.0, "[1.0]",
                             "paper A.5 lenience (1 = exact speculative sampling)",
                             unit_open_closed, "lenience", 2));
  axes.push_back(field_axis<std::string>(
      "gamma_policy", &Cell::gamma_policy, "list of fixed, heuristic, entropy, predicted", "fixed",
      "[fixed]",
      "how gamma changes between rounds (core/gamma_policy.h); predicted: the gamma that the "
      "pair's profiles predict best at the number of requests in flight, up to gamma "
      "(core/batched_speedup_prediction.h)",
      [](const std::string& v) {
        return v == "fixed" || v == "heuristic" || v == "entropy" || v == "predicted"
                   ? std::string()
                   : "expected one of fixed | heuristic | entropy | predicted, got '" + v + "'";
      },
      "policy", -1));
  axes.push_back(number_axis(
      "p_min", &Cell::p_min, "list of numbers in [0, 1]", 0.0, "[0.0]",
      "stop drafting when the draft's top probability falls below this (0 = never)",
      [](const double& v) {
        return v >= 0 && v <= 1 ? "" : str_cat("expected a number in [0, 1], got ", v);
      },
      "p_min", 2));
  axes.push_back(synthetic_acceptance_axis());
  axes.push_back(tree_axis());
  axes.push_back(int_axis(
      "concurrency", &Cell::concurrency, "list of integers in 1..256", 1, "[1]",
      "requests in flight at once: a closed loop of the prompts served by continuous batching, "
      "speculative and plain (1 = one request at a time)",
      [](const int& v) {
        return v >= 1 && v <= 256 ? "" : str_cat("expected an integer in 1..256, got ", v);
      },
      "N", /*omit_at_default=*/true));
  return axes;
}

std::vector<SweepAxis>& registry() {
  static std::vector<SweepAxis> axes = builtin_axes();
  return axes;
}

int& version() {
  static int v = 0;
  return v;
}

}  // namespace

void SweepYamlReader::fail(const YAML::Node& node, const std::string& path,
                           const std::string& message) {
  raise(node, path, message);
  std::abort();  // raise() throws
}

const std::vector<SweepAxis>& sweep_axes() { return registry(); }

const SweepAxis* sweep_axis(const std::string& key) {
  for (const auto& a : registry())
    if (a.key == key) return &a;
  return nullptr;
}

int sweep_axes_version() { return version(); }

std::vector<std::pair<std::string, std::string>> sweep_axes_table_key(
    const Cell& cell, const std::vector<std::string>& except_keys) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : registry())
    if (std::find(except_keys.begin(), except_keys.end(), a.key) == except_keys.end())
      out.emplace_back(a.label, a.format(cell));
  return out;
}

ScopedSweepAxisForTests::ScopedSweepAxisForTests(SweepAxis axis) : key_(axis.key) {
  SPECLAB_ASSERT(sweep_axis(key_) == nullptr);
  registry().push_back(std::move(axis));
  ++version();
}

ScopedSweepAxisForTests::~ScopedSweepAxisForTests() {
  auto& axes = registry();
  axes.erase(
      std::remove_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.key == key_; }),
      axes.end());
  ++version();
}

}  // namespace speclab
