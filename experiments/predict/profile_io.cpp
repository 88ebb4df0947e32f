#include "experiments/predict/profile_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/output_file.h"
#include "core/token_tree.h"

namespace speclab {

namespace {

std::vector<double> number_list(const nlohmann::json& j, const char* key,
                                const std::string& where) {
  SPECLAB_INPUT_CHECK(j.contains(key) && j[key].is_array(), where, ": ", key,
                      ": expected a list of numbers");
  std::vector<double> v;
  for (size_t i = 0; i < j[key].size(); i++) {
    const auto& x = j[key][i];
    SPECLAB_INPUT_CHECK(x.is_number(), where, ": ", key, "[", i, "]: expected a number");
    v.push_back(x.get<double>());
  }
  return v;
}

double number(const nlohmann::json& j, const char* key, const std::string& where, double def,
              bool required) {
  if (!j.contains(key)) {
    SPECLAB_INPUT_CHECK(!required, where, ": ", key, ": missing");
    return def;
  }
  SPECLAB_INPUT_CHECK(j[key].is_number(), where, ": ", key, ": expected a number");
  return j[key].get<double>();
}

std::string read_text(const std::string& path, size_t limit) {
  return input_file_read(path, "profile", limit);  // regular files only, size bounded
}

constexpr size_t kMaxProfileBytes = 256u << 20;

CostProfile from_llama_bench(const nlohmann::json& runs, const std::string& where) {
  // Group runs by model file; the model with more parameters is the target.
  struct Model {
    double n_params = 0;
    std::map<int64_t, double> pp_s;  // n_prompt -> seconds of the batch
    double tg_step_s = 0;
  };
  std::map<std::string, Model> models;
  for (size_t i = 0; i < runs.size(); i++) {
    const auto& r = runs[i];
    const std::string at = where + ": [" + std::to_string(i) + "]";
    SPECLAB_INPUT_CHECK(r.is_object(), at, ": expected a llama-bench run object");
    SPECLAB_INPUT_CHECK(r.contains("model_filename") && r["model_filename"].is_string(), at,
                        ": model_filename: expected a string");
    Model& m = models[r["model_filename"].get<std::string>()];
    m.n_params = number(r, "model_n_params", at, 0, true);
    const double n_prompt = number(r, "n_prompt", at, 0, true);
    const double n_gen = number(r, "n_gen", at, 0, true);
    const double ns = number(r, "avg_ns", at, 0, true);
    SPECLAB_INPUT_CHECK(std::isfinite(ns) && ns > 0, at, ": avg_ns: expected > 0");
    if (n_prompt > 0 && n_gen == 0) m.pp_s[static_cast<int64_t>(n_prompt)] = ns * 1e-9;
    if (n_gen > 0 && n_prompt == 0) m.tg_step_s = ns * 1e-9 / n_gen;
  }
  SPECLAB_INPUT_CHECK(models.size() == 2, where,
                      ": expected runs of exactly two models (a target "
                      "and a draft), found ",
                      models.size());
  const Model* target = &models.begin()->second;
  const Model* draft = &std::next(models.begin())->second;
  if (draft->n_params > target->n_params) std::swap(target, draft);
  SPECLAB_INPUT_CHECK(draft->tg_step_s > 0, where, ": the draft model has no tg run (n_gen > 0)");
  CostProfile c;
  c.source = "llama-bench";
  if (!target->pp_s.count(1)) {
    SPECLAB_INPUT_CHECK(target->tg_step_s > 0, where,
                        ": the target has neither a pp 1 nor a tg run for T(1)");
    c.target_s.push_back(target->tg_step_s);
  }
  for (int64_t k = c.target_s.empty() ? 1 : 2;; k++) {
    auto it = target->pp_s.find(k);
    if (it == target->pp_s.end()) break;
    c.target_s.push_back(it->second);
  }
  c.host_round_s.assign(c.target_s.size(), 0.0);
  for (size_t n = 0; n < c.target_s.size(); n++) c.draft_round_s.push_back(n * draft->tg_step_s);
  c.draft_step_s = draft->tg_step_s;
  return c;
}

CostProfile from_csv(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  std::string line;
  SPECLAB_INPUT_CHECK(std::getline(in, line), where, ": empty CSV");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> cols;
  {
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
  }
  SPECLAB_INPUT_CHECK(cols.size() >= 2 && cols[0] == "k" && cols[1] == "target_s", where,
                      ":1: expected the header k,target_s[,draft_round_s][,host_s]");
  int draft_col = -1, host_col = -1;
  for (size_t i = 2; i < cols.size(); i++) {
    if (cols[i] == "draft_round_s")
      draft_col = static_cast<int>(i);
    else if (cols[i] == "host_s")
      host_col = static_cast<int>(i);
    else
      fail_input(where, ":1: unknown column '", cols[i], "' (expected draft_round_s or host_s)");
  }
  CostProfile c;
  c.source = "csv";
  c.draft_round_s.push_back(0.0);
  int line_no = 1;
  while (std::getline(in, line)) {
    line_no++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<double> v;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) {
      char* end = nullptr;
      const double x = std::strtod(cell.c_str(), &end);
      SPECLAB_INPUT_CHECK(!cell.empty() && end && *end == '\0' && std::isfinite(x), where, ":",
                          line_no, ": '", cell, "' is not a number");
      v.push_back(x);
    }
    SPECLAB_INPUT_CHECK(v.size() == cols.size(), where, ":", line_no, ": expected ", cols.size(),
                        " fields, got ", v.size());
    SPECLAB_INPUT_CHECK(v[0] == static_cast<double>(c.target_s.size() + 1), where, ":", line_no,
                        ": k = ", v[0], ", expected ", c.target_s.size() + 1,
                        " (rows k = 1.. in order)");
    c.target_s.push_back(v[1]);
    c.draft_round_s.push_back(draft_col >= 0 ? v[static_cast<size_t>(draft_col)] : 0.0);
    c.host_round_s.push_back(host_col >= 0 ? v[static_cast<size_t>(host_col)] : 0.0);
  }
  c.draft_step_s = c.draft_round_s.size() > 1 ? c.draft_round_s[1] : 0.0;
  return c;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return "";
  SPECLAB_INPUT_CHECK(j[key].is_string(), where, ": ", key, ": expected a string");
  return j[key].get<std::string>();
}

nlohmann::json timing_spread_to_json(const TimingSpread& s) {
  nlohmann::json j = {{"min", s.min}, {"median", s.median}, {"max", s.max}};
  if (!s.mean.empty()) j["mean"] = s.mean;
  return j;
}

// spread.<key>: {"min": [n], "median": [n], "max": [n]} and, in files written since it was
// kept, "mean": [n]; finite seconds >= 0, min <= median <= max and min <= mean <= max entry by
// entry.
TimingSpread timing_spread_from_json(const nlohmann::json& spread, const char* key, size_t n,
                                     const std::string& where) {
  const std::string at = where + ": spread." + key;
  SPECLAB_INPUT_CHECK(spread.contains(key) && spread[key].is_object(), at,
                      ": expected an object {\"min\", \"median\", \"max\"}");
  const nlohmann::json& j = spread[key];
  TimingSpread s;
  s.min = number_list(j, "min", at);
  s.median = number_list(j, "median", at);
  s.max = number_list(j, "max", at);
  SPECLAB_INPUT_CHECK(s.min.size() == n && s.median.size() == n && s.max.size() == n, at,
                      ": expected ", n, " entries in min, median and max, got ", s.min.size(), ", ",
                      s.median.size(), ", ", s.max.size());
  for (size_t i = 0; i < n; i++)
    SPECLAB_INPUT_CHECK(std::isfinite(s.max[i]) && 0 <= s.min[i] && s.min[i] <= s.median[i] &&
                            s.median[i] <= s.max[i],
                        at, "[", i, "]: expected finite seconds 0 <= min <= median <= max, got ",
                        s.min[i], ", ", s.median[i], ", ", s.max[i]);
  if (j.contains("mean")) {
    s.mean = number_list(j, "mean", at);
    SPECLAB_INPUT_CHECK(s.mean.size() == n, at, ": expected ", n, " entries in mean, got ",
                        s.mean.size());
    for (size_t i = 0; i < n; i++)
      SPECLAB_INPUT_CHECK(s.min[i] <= s.mean[i] && s.mean[i] <= s.max[i], at, ".mean[", i,
                          "]: expected min <= mean <= max, got ", s.min[i], ", ", s.mean[i], ", ",
                          s.max[i]);
  }
  return s;
}

nlohmann::json cost_taken_to_json(const CostProfileTaken& t) {
  return {{"utc", t.utc},
          {"load_before", t.load_before},
          {"load_after", t.load_after},
          {"git_commit", t.git_commit},
          {"git_describe", t.git_describe},
          {"machine",
           {{"cpu_model", t.cpu_model},
            {"cores", t.cores},
            {"threads", t.threads},
            {"hostname", t.hostname},
            {"gpu", t.gpu},
            {"matmul_isa", t.matmul_isa}}},
          {"target_sha256", t.target_sha256},
          {"draft_sha256", t.draft_sha256}};
}

CostProfileTaken cost_taken_from_json(const nlohmann::json& tj, const std::string& at) {
  CostProfileTaken t;
  SPECLAB_INPUT_CHECK(tj.is_object(), at, ": expected an object");
  t.utc = text(tj, "utc", at);
  t.load_before = number(tj, "load_before", at, -1, false);
  t.load_after = number(tj, "load_after", at, -1, false);
  t.git_commit = text(tj, "git_commit", at);
  t.git_describe = text(tj, "git_describe", at);
  t.target_sha256 = text(tj, "target_sha256", at);
  t.draft_sha256 = text(tj, "draft_sha256", at);
  if (tj.contains("machine")) {
    const nlohmann::json& mj = tj["machine"];
    const std::string mat = at + ".machine";
    SPECLAB_INPUT_CHECK(mj.is_object(), mat, ": expected an object");
    t.cpu_model = text(mj, "cpu_model", mat);
    t.hostname = text(mj, "hostname", mat);
    t.gpu = text(mj, "gpu", mat);
    t.matmul_isa = text(mj, "matmul_isa", mat);
    t.cores = static_cast<int64_t>(number(mj, "cores", mat, 0, false));
    t.threads = static_cast<int64_t>(number(mj, "threads", mat, 0, false));
  }
  return t;
}

}  // namespace

nlohmann::json cost_profile_to_json(const CostProfileRecord& r) {
  const CostProfile& c = r.cost;
  nlohmann::json j = {{"format", "speclab-cost-profile"},
                      {"version", 1},
                      {"source", c.source},
                      {"context_len", c.context_len},
                      {"target_s", c.target_s},
                      {"draft_round_s", c.draft_round_s},
                      {"draft_step_s", c.draft_step_s},
                      {"draft_catchup_s", c.draft_catchup_s},
                      {"draft_prefill_s", c.draft_prefill_s},
                      {"host_round_s", c.host_round_s},
                      {"c", c.c()}};
  if (c.baseline_step_s > 0) j["baseline_step_s"] = c.baseline_step_s;
  if (!c.draft_tree_s.empty()) j["draft_tree_s"] = c.draft_tree_s;
  if (!c.draft_behind_s.empty()) j["draft_behind_s"] = c.draft_behind_s;
  if (!c.verify_device_s.empty()) j["verify_device_s"] = c.verify_device_s;
  const CostProfileSpread& s = r.spread;
  if (s.reps > 0) {
    j["spread"] = {{"reps", s.reps},
                   {"target_s", timing_spread_to_json(s.target_s)},
                   {"draft_round_s", timing_spread_to_json(s.draft_round_s)},
                   {"host_round_s", timing_spread_to_json(s.host_round_s)},
                   {"draft_one_behind_s", timing_spread_to_json(s.draft_one_behind_s)},
                   {"draft_two_behind_s", timing_spread_to_json(s.draft_two_behind_s)},
                   {"draft_first_call_s", timing_spread_to_json(s.draft_first_call_s)}};
    if (!s.baseline_step_s.min.empty())
      j["spread"]["baseline_step_s"] = timing_spread_to_json(s.baseline_step_s);
    for (const auto& [shape, t] : s.draft_tree_s)
      j["spread"]["draft_tree_s"][shape] = timing_spread_to_json(t);
    if (!s.verify_device_s.min.empty())
      j["spread"]["verify_device_s"] = timing_spread_to_json(s.verify_device_s);
  }
  if (!r.taken.utc.empty()) j["taken"] = cost_taken_to_json(r.taken);
  if (!r.parts.empty()) {
    j["parts"] = {{"host_standardize_s", r.parts.host_standardize_s},
                  {"draft_forward_s", r.parts.draft_forward_s}};
    if (!r.parts.target_head_s.empty()) {
      j["parts"]["target_head_s"] = r.parts.target_head_s;
      j["parts"]["baseline_step_head_s"] = r.parts.baseline_step_head_s;
    }
  }
  return j;
}

namespace {

// parts: each list one entry per entry of the figure it splits, finite seconds >= 0 and no more
// than that figure (a part of it).
CostProfileParts cost_parts_from_json(const nlohmann::json& pj, const CostProfile& c,
                                      const std::string& at) {
  SPECLAB_INPUT_CHECK(pj.is_object(), at, ": expected an object");
  CostProfileParts parts;
  auto part_list = [&](const char* key, const std::vector<double>& whole) {
    std::vector<double> v = number_list(pj, key, at);
    SPECLAB_INPUT_CHECK(v.size() == whole.size(), at, ".", key, ": expected ", whole.size(),
                        " entries (one per entry of the figure it splits), got ", v.size());
    for (size_t i = 0; i < v.size(); i++)
      SPECLAB_INPUT_CHECK(std::isfinite(v[i]) && v[i] >= 0 && v[i] <= whole[i], at, ".", key, "[",
                          i,
                          "]: expected finite seconds >= 0 and at most the figure it is a "
                          "part of (",
                          whole[i], "), got ", v[i]);
    return v;
  };
  parts.host_standardize_s = part_list("host_standardize_s", c.host_round_s);
  parts.draft_forward_s = part_list("draft_forward_s", c.draft_round_s);
  if (pj.contains("target_head_s")) {
    parts.target_head_s = part_list("target_head_s", c.target_s);
    parts.baseline_step_head_s = number(pj, "baseline_step_head_s", at, 0, true);
    SPECLAB_INPUT_CHECK(
        parts.baseline_step_head_s >= 0 && parts.baseline_step_head_s <= c.plain_step_s(), at,
        ".baseline_step_head_s: expected seconds >= 0 and at most the plain "
        "step (",
        c.plain_step_s(), "), got ", parts.baseline_step_head_s);
  }
  return parts;
}

}  // namespace

CostProfileRecord cost_profile_record_from_json(const nlohmann::json& j, const std::string& where) {
  SPECLAB_INPUT_CHECK(j.is_object() && json_member_is(j, "format", "speclab-cost-profile"), where,
                      ": expected a speclab cost profile (\"format\": \"speclab-cost-profile\")");
  SPECLAB_INPUT_CHECK(json_member_is(j, "version", 1), where, ": version: expected 1");
  // The keys cost_profile_to_json writes: any other is a hand edit or another tool's file,
  // whose meaning this reader would drop without a word.
  static const std::set<std::string> known = {"format",
                                              "version",
                                              "source",
                                              "context_len",
                                              "target_s",
                                              "draft_round_s",
                                              "draft_step_s",
                                              "draft_catchup_s",
                                              "draft_prefill_s",
                                              "host_round_s",
                                              "c",
                                              "baseline_step_s",
                                              "draft_tree_s",
                                              "draft_behind_s",
                                              "verify_device_s",
                                              "spread",
                                              "taken",
                                              "parts"};
  for (const auto& [key, value] : j.items())
    SPECLAB_INPUT_CHECK(known.count(key), where, ": unknown key '", key,
                        "' (a speclab cost profile has no such figure)");
  SPECLAB_INPUT_CHECK(!j.contains("source") || j["source"].is_string(), where,
                      ": source: expected a string");
  CostProfileRecord r;
  CostProfile& c = r.cost;
  // Figures read back from a file are reused, whatever the file says produced them (its
  // "source" and "taken" say that).
  c.source = "reused";
  const double context_len = number(j, "context_len", where, 0, false);
  SPECLAB_INPUT_CHECK(
      context_len >= 0 && context_len <= 1e9 && context_len == std::floor(context_len), where,
      ": context_len: expected a whole number of tokens >= 0, got ", context_len);
  c.context_len = static_cast<int64_t>(context_len);
  c.target_s = number_list(j, "target_s", where);
  c.draft_round_s = number_list(j, "draft_round_s", where);
  c.host_round_s = number_list(j, "host_round_s", where);
  c.draft_step_s = number(j, "draft_step_s", where, 0, true);
  c.draft_catchup_s = number(j, "draft_catchup_s", where, 0, false);
  c.draft_prefill_s = number(j, "draft_prefill_s", where, 0, false);
  // Files written before the plain step was timed apart have none: T(1) stands in.
  c.baseline_step_s = number(j, "baseline_step_s", where, 0, false);
  // Files written before the proposal n behind was timed have none: a tree round is charged
  // the chain's catch-up.
  if (j.contains("draft_behind_s")) c.draft_behind_s = number_list(j, "draft_behind_s", where);
  // Only a target that verifies on its device has it (a GPU runner; files before it, none).
  if (j.contains("verify_device_s")) c.verify_device_s = number_list(j, "verify_device_s", where);
  // Files written before tree drafting was timed have none: a tree is priced as a chain.
  if (j.contains("draft_tree_s")) {
    const std::string at = where + ": draft_tree_s";
    SPECLAB_INPUT_CHECK(j["draft_tree_s"].is_object(), at,
                        ": expected an object (tree shape -> seconds per depth)");
    for (const auto& [shape, list] : j["draft_tree_s"].items()) {
      const TreeShape parsed = tree_shape_parse(shape, at + ": key '" + shape + "'");
      std::vector<double> v = number_list(j["draft_tree_s"], shape.c_str(), at);
      SPECLAB_INPUT_CHECK(static_cast<int>(v.size()) == parsed.depth() + 1 && v[0] == 0, at, ".",
                          shape, ": expected ", parsed.depth() + 1, " seconds (depth 0..",
                          parsed.depth(), ", the first 0), got ", v.size(), " entries");
      for (size_t g = 0; g < v.size(); g++)
        SPECLAB_INPUT_CHECK(std::isfinite(v[g]) && v[g] >= 0, at, ".", shape, "[", g,
                            "]: expected finite seconds >= 0, got ", v[g]);
      c.draft_tree_s[parsed.to_string()] = std::move(v);
    }
  }
  cost_profile_validate(c, where);
  // c is written beside the figures it is made of (for a reader of the file): it must be what
  // they give, or the file was edited by hand.
  if (j.contains("c")) {
    SPECLAB_INPUT_CHECK(j["c"].is_number(), where, ": c: expected a number");
    const double written = j["c"].get<double>(), made = c.c();
    SPECLAB_INPUT_CHECK(std::fabs(written - made) <= 1e-9 * std::max(1.0, std::fabs(made)), where,
                        ": c: ", written, " is not what the figures give (", made,
                        "; c is derived, not read)");
  }
  c.origin = where;
  // Files written before the spread and the circumstances were recorded have neither.
  if (j.contains("spread")) {
    const nlohmann::json& sj = j["spread"];
    const std::string at = where + ": spread";
    SPECLAB_INPUT_CHECK(sj.is_object(), at, ": expected an object");
    CostProfileSpread& s = r.spread;
    const double reps = number(sj, "reps", at, 0, true);
    SPECLAB_INPUT_CHECK(reps >= 1 && reps <= 1e6 && reps == std::floor(reps), at,
                        ": reps: expected a whole number >= 1");
    s.reps = static_cast<int>(reps);
    s.target_s = timing_spread_from_json(sj, "target_s", c.target_s.size(), where);
    s.draft_round_s = timing_spread_from_json(sj, "draft_round_s", c.draft_round_s.size(), where);
    s.host_round_s = timing_spread_from_json(sj, "host_round_s", c.host_round_s.size(), where);
    s.draft_one_behind_s = timing_spread_from_json(sj, "draft_one_behind_s", 1, where);
    s.draft_two_behind_s = timing_spread_from_json(sj, "draft_two_behind_s", 1, where);
    s.draft_first_call_s = timing_spread_from_json(sj, "draft_first_call_s", 1, where);
    if (sj.contains("baseline_step_s"))
      s.baseline_step_s = timing_spread_from_json(sj, "baseline_step_s", 1, where);
    if (sj.contains("verify_device_s"))
      s.verify_device_s =
          timing_spread_from_json(sj, "verify_device_s", c.verify_device_s.size(), where);
    if (sj.contains("draft_tree_s")) {
      SPECLAB_INPUT_CHECK(sj["draft_tree_s"].is_object(), at, ".draft_tree_s: expected an object");
      for (const auto& [shape, list] : sj["draft_tree_s"].items()) {
        const auto figure = c.draft_tree_s.find(shape);
        SPECLAB_INPUT_CHECK(figure != c.draft_tree_s.end(), at, ".draft_tree_s: '", shape,
                            "' has a spread but no figure in draft_tree_s");
        s.draft_tree_s[shape] = timing_spread_from_json(sj["draft_tree_s"], shape.c_str(),
                                                        figure->second.size(), where);
      }
    }
  }
  if (j.contains("taken")) r.taken = cost_taken_from_json(j["taken"], where + ": taken");
  // Files written before the parts were recorded have none.
  if (j.contains("parts")) r.parts = cost_parts_from_json(j["parts"], c, where + ": parts");
  return r;
}

nlohmann::json batched_cost_profile_to_json(const BatchedCostProfileRecord& r) {
  const BatchedCostProfile& c = r.cost;
  nlohmann::json j = {{"format", "speclab-batched-cost-profile"},
                      {"version", 1},
                      {"source", c.source},
                      {"context_len", c.context_len},
                      {"slots", c.slots},
                      {"target_s", c.target_s},
                      {"draft_round_s", c.draft_round_s},
                      {"draft_catchup_s", c.draft_catchup_s},
                      {"target_prefill_s_per_token", c.target_prefill_s_per_token},
                      {"draft_prefill_s_per_token", c.draft_prefill_s_per_token}};
  if (!c.baseline_step_s.empty()) j["baseline_step_s"] = c.baseline_step_s;
  const BatchedCostSpread& s = r.spread;
  if (s.reps > 0) {
    j["spread"] = {{"reps", s.reps},
                   {"target_s", timing_spread_to_json(s.target_s)},
                   {"draft_round_s", timing_spread_to_json(s.draft_round_s)},
                   {"draft_two_behind_s", timing_spread_to_json(s.draft_two_behind_s)},
                   {"target_prefill_s", timing_spread_to_json(s.target_prefill_s)},
                   {"draft_first_call_s", timing_spread_to_json(s.draft_first_call_s)}};
    if (!s.baseline_step_s.min.empty())
      j["spread"]["baseline_step_s"] = timing_spread_to_json(s.baseline_step_s);
  }
  if (!r.taken.utc.empty()) j["taken"] = cost_taken_to_json(r.taken);
  return j;
}

BatchedCostProfileRecord batched_cost_profile_record_from_json(const nlohmann::json& j,
                                                               const std::string& where) {
  SPECLAB_INPUT_CHECK(
      j.is_object() && json_member_is(j, "format", "speclab-batched-cost-profile"), where,
      ": expected a speclab batched cost profile (\"format\": \"speclab-batched-cost-profile\")");
  SPECLAB_INPUT_CHECK(json_member_is(j, "version", 1), where, ": version: expected 1");
  BatchedCostProfileRecord r;
  BatchedCostProfile& c = r.cost;
  c.source = "reused";
  c.context_len = static_cast<int64_t>(number(j, "context_len", where, 0, false));
  for (double b : number_list(j, "slots", where)) {
    SPECLAB_INPUT_CHECK(b >= 1 && b <= 1e6 && b == std::floor(b), where,
                        ": slots: expected whole numbers >= 1, got ", b);
    c.slots.push_back(static_cast<int>(b));
  }
  auto rows_of = [&](const char* key) {
    SPECLAB_INPUT_CHECK(j.contains(key) && j[key].is_array(), where, ": ", key,
                        ": expected a list of lists of seconds, one per slot count");
    std::vector<std::vector<double>> out;
    for (size_t i = 0; i < j[key].size(); i++) {
      const std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
      SPECLAB_INPUT_CHECK(j[key][i].is_array(), at, ": expected a list of seconds");
      nlohmann::json wrap = {{"v", j[key][i]}};
      out.push_back(number_list(wrap, "v", at));
    }
    return out;
  };
  c.target_s = rows_of("target_s");
  c.draft_round_s = rows_of("draft_round_s");
  c.draft_catchup_s = number_list(j, "draft_catchup_s", where);
  c.target_prefill_s_per_token = number(j, "target_prefill_s_per_token", where, 0, true);
  c.draft_prefill_s_per_token = number(j, "draft_prefill_s_per_token", where, 0, true);
  // Files written before the plain step was timed apart have none: T(b, 1) stands in.
  if (j.contains("baseline_step_s")) c.baseline_step_s = number_list(j, "baseline_step_s", where);
  batched_cost_profile_validate(c, where);
  c.origin = where;
  if (j.contains("spread")) {
    const nlohmann::json& sj = j["spread"];
    const std::string at = where + ": spread";
    SPECLAB_INPUT_CHECK(sj.is_object(), at, ": expected an object");
    BatchedCostSpread& s = r.spread;
    const double reps = number(sj, "reps", at, 0, true);
    SPECLAB_INPUT_CHECK(reps >= 1 && reps <= 1e6 && reps == std::floor(reps), at,
                        ": reps: expected a whole number >= 1");
    s.reps = static_cast<int>(reps);
    const size_t B = c.slots.size();
    s.target_s = timing_spread_from_json(sj, "target_s", B * c.target_s[0].size(), where);
    s.draft_round_s =
        timing_spread_from_json(sj, "draft_round_s", B * c.draft_round_s[0].size(), where);
    s.draft_two_behind_s = timing_spread_from_json(sj, "draft_two_behind_s", B, where);
    s.target_prefill_s = timing_spread_from_json(sj, "target_prefill_s", 1, where);
    s.draft_first_call_s = timing_spread_from_json(sj, "draft_first_call_s", 1, where);
    if (sj.contains("baseline_step_s"))
      s.baseline_step_s = timing_spread_from_json(sj, "baseline_step_s", B, where);
  }
  if (j.contains("taken")) r.taken = cost_taken_from_json(j["taken"], where + ": taken");
  return r;
}

CostProfile cost_profile_from_json(const nlohmann::json& j, const std::string& where) {
  return cost_profile_record_from_json(j, where).cost;
}

nlohmann::json acceptance_profile_to_json(const AcceptanceProfile& a) {
  nlohmann::json prompts = nlohmann::json::array();
  for (const auto& p : a.prompts) {
    nlohmann::json acc = nlohmann::json::array(), top = nlohmann::json::array(),
                   ent = nlohmann::json::array(), beta = nlohmann::json::array(),
                   tv = nlohmann::json::array(), top_mass = nlohmann::json::array(),
                   sample_mass = nlohmann::json::array(), sample_distinct = nlohmann::json::array();
    bool any_tv = false, any_top_mass = false, any_sample = false;
    for (const auto& r : p.positions) {
      acc.push_back(r.accept);
      top.push_back(r.top_prob);
      ent.push_back(r.entropy);
      beta.push_back(r.beta);
      tv.push_back(r.lenient_tv);
      top_mass.push_back(r.top_mass);
      any_tv = any_tv || r.lenient_tv != 0;
      any_top_mass = any_top_mass || !r.top_mass.empty();
      sample_mass.push_back(r.sample_mass);
      sample_distinct.push_back(r.sample_distinct);
      any_sample = any_sample || !r.sample_mass.empty();
    }
    prompts.push_back({{"id", p.prompt_id},
                       {"accept", acc},
                       {"top_prob", top},
                       {"entropy", ent},
                       {"beta", beta}});
    // Left out when absent (exact rules; no top-b or sampled tree cell), as in files written
    // before.
    if (any_tv) prompts.back()["lenient_tv"] = tv;
    if (any_top_mass) prompts.back()["top_mass"] = top_mass;
    if (any_sample) {
      prompts.back()["sample_mass"] = sample_mass;
      prompts.back()["sample_distinct"] = sample_distinct;
    }
    if (a.stride > 1) {
      prompts.back()["n_tokens"] = acceptance_prompt_tokens(p);
      prompts.back()["offset"] = p.offset;
    }
  }
  nlohmann::json j = {{"format", "speclab-acceptance-profile"},
                      {"version", 1},
                      {"max_depth", a.max_depth},
                      {"prompts", prompts}};
  // Left out at 1 (every position), so full profiles read and write as before.
  if (a.stride > 1) j["stride"] = a.stride;
  return j;
}

AcceptanceProfile acceptance_profile_from_json(const nlohmann::json& j, const std::string& where) {
  SPECLAB_INPUT_CHECK(j.is_object() && json_member_is(j, "format", "speclab-acceptance-profile"),
                      where, ": expected a speclab acceptance profile");
  SPECLAB_INPUT_CHECK(json_member_is(j, "version", 1), where, ": version: expected 1");
  AcceptanceProfile a;
  const double max_depth = number(j, "max_depth", where, 0, true);
  SPECLAB_INPUT_CHECK(max_depth >= 0 && max_depth <= 1024 && max_depth == std::floor(max_depth),
                      where, ": max_depth: expected a whole number in 0..1024, got ", max_depth);
  a.max_depth = static_cast<int>(max_depth);
  SPECLAB_INPUT_CHECK(j.contains("prompts") && j["prompts"].is_array(), where,
                      ": prompts: expected a list");
  // Files written before measure.acceptance_stride have a rollout at every position.
  if (j.contains("stride")) {
    const double st = number(j, "stride", where, 0, true);
    SPECLAB_INPUT_CHECK(st >= 1 && st <= 1e6 && st == std::floor(st), where,
                        ": stride: expected a whole number >= 1, got ", st);
    a.stride = static_cast<int>(st);
  }
  for (size_t i = 0; i < j["prompts"].size(); i++) {
    const auto& pj = j["prompts"][i];
    const std::string at = where + ": prompts[" + std::to_string(i) + "]";
    SPECLAB_INPUT_CHECK(pj.is_object() && pj.contains("id") && pj["id"].is_string(), at,
                        ": expected an object with a string id");
    AcceptancePrompt p;
    p.prompt_id = pj["id"].get<std::string>();
    // One entry per prompt: a second would weigh that prompt twice in every summary.
    for (size_t k = 0; k < i; ++k)
      SPECLAB_INPUT_CHECK(j["prompts"][k]["id"] != pj["id"], at, ": id '", p.prompt_id,
                          "' repeats prompts[", k, "]");
    for (const char* key : {"accept", "top_prob", "entropy", "beta"})
      SPECLAB_INPUT_CHECK(
          pj.contains(key) && pj[key].is_array() && pj[key].size() == pj["accept"].size(), at, ": ",
          key, ": expected a list of one entry per position");
    for (size_t t = 0; t < pj["accept"].size(); t++) {
      AcceptanceRollout r;
      const std::string pos = at + ": position " + std::to_string(t);
      auto floats = [&](const char* key, std::vector<float>* out) {
        const auto& v = pj[key][t];
        SPECLAB_INPUT_CHECK(v.is_array(), pos, ": ", key, ": expected a list");
        for (const auto& x : v) {
          SPECLAB_INPUT_CHECK(x.is_number() && x.get<double>() >= 0 && x.get<double>() <= 1, pos,
                              ": ", key, ": expected numbers in [0, 1]");
          out->push_back(x.get<float>());
        }
      };
      floats("accept", &r.accept);
      floats("top_prob", &r.top_prob);
      floats("entropy", &r.entropy);
      SPECLAB_INPUT_CHECK(
          r.accept.size() == r.top_prob.size() && r.accept.size() == r.entropy.size() &&
              static_cast<int>(r.accept.size()) <= a.max_depth,
          pos, ": accept, top_prob and entropy must have one entry per depth (<= max_depth)");
      SPECLAB_INPUT_CHECK(pj["beta"][t].is_number(), pos, ": beta: expected a number");
      r.beta = pj["beta"][t].get<float>();
      if (pj.contains("lenient_tv")) {
        SPECLAB_INPUT_CHECK(pj["lenient_tv"].is_array() &&
                                pj["lenient_tv"].size() == pj["accept"].size() &&
                                pj["lenient_tv"][t].is_number(),
                            pos, ": lenient_tv: expected one number per position");
        r.lenient_tv = pj["lenient_tv"][t].get<float>();
      }
      SPECLAB_INPUT_CHECK(r.beta == -1.0f || (r.beta >= 0 && r.beta <= 1), pos,
                          ": beta: expected a number in [0, 1] or -1");
      if (pj.contains("top_mass")) {
        SPECLAB_INPUT_CHECK(
            pj["top_mass"].is_array() && pj["top_mass"].size() == pj["accept"].size(), at,
            ": top_mass: expected a list of one entry per position");
        floats("top_mass", &r.top_mass);
        for (size_t b = 1; b < r.top_mass.size(); b++)
          SPECLAB_INPUT_CHECK(r.top_mass[b] >= r.top_mass[b - 1], pos,
                              ": top_mass: expected a non-decreasing list (more siblings pass "
                              "at least as often)");
      }
      SPECLAB_INPUT_CHECK(pj.contains("sample_mass") == pj.contains("sample_distinct"), at,
                          ": sample_mass and sample_distinct: expected both or neither");
      if (pj.contains("sample_mass")) {
        for (const char* key : {"sample_mass", "sample_distinct"})
          SPECLAB_INPUT_CHECK(
              pj[key].is_array() && pj[key].size() == pj["accept"].size() && pj[key][t].is_array(),
              at, ": ", key, ": expected a list of one list per position");
        floats("sample_mass", &r.sample_mass);
        for (size_t b = 1; b < r.sample_mass.size(); b++)
          SPECLAB_INPUT_CHECK(r.sample_mass[b] >= r.sample_mass[b - 1], pos,
                              ": sample_mass: expected a non-decreasing list (more siblings pass "
                              "at least as often)");
        const nlohmann::json& dj = pj["sample_distinct"][t];
        SPECLAB_INPUT_CHECK(dj.size() == r.sample_mass.size(), pos,
                            ": sample_distinct: expected as many entries as sample_mass (",
                            r.sample_mass.size(), ")");
        for (size_t b = 0; b < dj.size(); b++) {
          // b + 1 draws show at least one token (up to rounding) and at most b + 1.
          SPECLAB_INPUT_CHECK(dj[b].is_number() && dj[b].get<double>() >= 0.99 &&
                                  dj[b].get<double>() <= static_cast<double>(b + 1) + 1e-3,
                              pos, ": sample_distinct[", b, "]: expected a number in [1, ", b + 1,
                              "] (distinct tokens among ", b + 1, " draws)");
          r.sample_distinct.push_back(dj[b].get<float>());
        }
      }
      p.positions.push_back(std::move(r));
    }
    if (a.stride > 1) {
      // Positions t = offset + k stride < n_tokens: one rollout each.
      const double n = number(pj, "n_tokens", at, 0, true), o = number(pj, "offset", at, 0, true);
      SPECLAB_INPUT_CHECK(n >= 0 && n <= 1e9 && n == std::floor(n) && o >= 0 &&
                              o == std::floor(o) && (n == 0 || o < std::min<double>(a.stride, n)),
                          at, ": n_tokens, offset: expected whole numbers, offset < min(stride, ",
                          "n_tokens)");
      p.stride = a.stride;
      p.n_tokens = static_cast<int64_t>(n);
      p.offset = static_cast<int64_t>(o);
      const int64_t expect =
          p.n_tokens > p.offset ? (p.n_tokens - p.offset + a.stride - 1) / a.stride : 0;
      SPECLAB_INPUT_CHECK(static_cast<int64_t>(p.positions.size()) == expect, at, ": ",
                          p.positions.size(), " rollouts, expected ", expect, " (n_tokens ",
                          p.n_tokens, ", offset ", p.offset, ", stride ", a.stride, ")");
    }
    a.prompts.push_back(std::move(p));
  }
  return a;
}

nlohmann::json profile_read_json(const std::string& path) {
  const std::string text = read_text(path, kMaxProfileBytes);
  try {
    return json_input_parse(text, path);
  } catch (const nlohmann::json::parse_error& e) {
    fail_input(path, ": not valid JSON at byte ", e.byte);
  } catch (const nlohmann::json::exception&) {
    fail_input(path, ": not valid JSON");
  }
}

CostProfile cost_profile_import(const std::string& path) {
  const std::string text = read_text(path, kMaxProfileBytes);
  size_t first = text.find_first_not_of(" \t\r\n");
  CostProfile c;
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    nlohmann::json j;
    try {
      j = json_input_parse(text, path);
    } catch (const nlohmann::json::parse_error& e) {
      fail_input(path, ": not valid JSON at byte ", e.byte);
    } catch (const nlohmann::json::exception&) {
      fail_input(path, ": not valid JSON");
    }
    c = j.is_array() ? from_llama_bench(j, path) : cost_profile_from_json(j, path);
  } else {
    c = from_csv(text, path);
  }
  cost_profile_validate(c, path);
  c.origin = path;
  return c;
}

void profile_write_json(const std::string& path, const nlohmann::json& j) {
  output_file_write_atomic(path,
                           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace speclab
