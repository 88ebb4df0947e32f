#include "experiments/results/result_row.h"

#include <cmath>
#include <set>
#include <sstream>

#include "core/error.h"
#include "experiments/config/sweep_axes.h"

namespace speclab {

namespace {

// Fields renamed since rows were first written: old name -> the declared name. A row holding
// only the old name is read as if it held the new one (and written back under the new one).
const std::pair<const char*, const char*> kRenamedFields[] = {
    {"predicted_speedup_thm38", "thm38_speedup"},
};

// ---- The type of a field, in words (the generated docs) ----
template <typename T>
struct TypeName;
template <>
struct TypeName<std::string> {
  static std::string get() { return "string"; }
};
template <>
struct TypeName<double> {
  static std::string get() { return "number"; }
};
template <>
struct TypeName<int64_t> {
  static std::string get() { return "integer"; }
};
template <>
struct TypeName<bool> {
  static std::string get() { return "boolean"; }
};
template <typename T>
struct TypeName<std::vector<T>> {
  static std::string get() { return "list of " + TypeName<T>::get(); }
};
template <>
struct TypeName<DtypeCounts> {
  static std::string get() { return "mapping dtype -> integer"; }
};
template <>
struct TypeName<ResultSample> {
  static std::string get() { return "record (samples[] below)"; }
};
template <>
struct TypeName<GridPoint> {
  static std::string get() { return "record (predicted_grid[] below)"; }
};

// ---- Writing: a value as JSON (NaN becomes null, as nlohmann writes it) ----
nlohmann::json value_json(const std::string& v) { return v; }
nlohmann::json value_json(double v) { return v; }
nlohmann::json value_json(int64_t v) { return v; }
nlohmann::json value_json(bool v) { return v; }
nlohmann::json value_json(const DtypeCounts& v) { return v; }
nlohmann::json value_json(const ResultSample& s);
nlohmann::json value_json(const GridPoint& g);
template <typename T>
nlohmann::json value_json(const std::vector<T>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : v) a.push_back(value_json(x));
  return a;
}

template <typename T>
void put(nlohmann::json& j, const char* name, const std::optional<T>& v) {
  if (v) j[name] = value_json(*v);
}

nlohmann::json value_json(const ResultSample& s) {
  nlohmann::json j = nlohmann::json::object();
#define SPECLAB_X(type, name, unit, meaning) put(j, #name, s.name);
  SPECLAB_RESULT_SAMPLE_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  return j;
}
nlohmann::json value_json(const GridPoint& g) {
  nlohmann::json j = nlohmann::json::object();
#define SPECLAB_X(type, name, unit, meaning) put(j, #name, g.name);
  SPECLAB_GRID_POINT_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  return j;
}

// ---- Reading: a JSON value as the declared type, or an InputError naming the field ----
[[noreturn]] void wrong_type(const std::string& where, const std::string& field,
                             const std::string& expected, const nlohmann::json& got) {
  fail_input(where, ": field ", field, ": expected ", expected, ", got ", got.type_name());
}

void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                std::string* out) {
  if (!j.is_string()) wrong_type(where, f, "a string", j);
  *out = j.get<std::string>();
}
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                double* out) {
  if (j.is_null()) {  // NaN is written as null
    *out = NAN;
    return;
  }
  if (!j.is_number()) wrong_type(where, f, "a number", j);
  *out = j.get<double>();
}
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                int64_t* out) {
  if (!j.is_number()) wrong_type(where, f, "an integer", j);
  const double v = j.get<double>();
  if (j.is_number_float() && (v != std::floor(v) || std::fabs(v) > 9.0e15))
    wrong_type(where, f, "an integer", j);
  *out = j.is_number_float() ? static_cast<int64_t>(v) : j.get<int64_t>();
}
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                bool* out) {
  if (!j.is_boolean()) wrong_type(where, f, "true or false", j);
  *out = j.get<bool>();
}
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                DtypeCounts* out) {
  if (!j.is_object()) wrong_type(where, f, "a mapping of dtype to count", j);
  for (auto it = j.begin(); it != j.end(); ++it)
    read_value(it.value(), where, f + "." + it.key(), &(*out)[it.key()]);
}
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                ResultSample* out);
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                GridPoint* out);
template <typename T>
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                std::vector<T>* out) {
  if (!j.is_array()) wrong_type(where, f, "a list", j);
  out->resize(j.size());
  for (size_t i = 0; i < j.size(); i++)
    read_value(j[i], where, str_cat(f, "[", i, "]"), &(*out)[i]);
}

// Reads field `name` of `j` into `out` when present (null means absent, except for numbers
// inside lists, where it is NaN).
template <typename T>
void get(const nlohmann::json& j, const char* name, const std::string& where,
         const std::string& prefix, std::optional<T>* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return;
  T v{};
  read_value(*it, where, prefix + name, &v);
  *out = std::move(v);
}

void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                ResultSample* out) {
  if (!j.is_object()) wrong_type(where, f, "a record", j);
#define SPECLAB_X(type, name, unit, meaning) get(j, #name, where, f + ".", &out->name);
  SPECLAB_RESULT_SAMPLE_FIELDS(SPECLAB_X)
#undef SPECLAB_X
}
void read_value(const nlohmann::json& j, const std::string& where, const std::string& f,
                GridPoint* out) {
  if (!j.is_object()) wrong_type(where, f, "a record", j);
#define SPECLAB_X(type, name, unit, meaning) get(j, #name, where, f + ".", &out->name);
  SPECLAB_GRID_POINT_FIELDS(SPECLAB_X)
#undef SPECLAB_X
}

const std::set<std::string>& declared_names() {
  static const std::set<std::string> names = {
#define SPECLAB_X(group, type, name, unit, meaning) #name,
      SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  };
  return names;
}

// Every integer a row holds is a count, an index, a size or a seed: none is below 0.
void non_negative_integer(const std::optional<int64_t>& v, const char* name,
                          const std::string& where) {
  if (v && *v < 0) fail_input(where, ": field ", name, ": expected an integer >= 0, got ", *v);
}
void non_negative_integer(const std::optional<std::vector<int64_t>>& v, const char* name,
                          const std::string& where) {
  if (!v) return;
  for (size_t i = 0; i < v->size(); ++i)
    if ((*v)[i] < 0)
      fail_input(where, ": field ", name, "[", i, "]: expected an integer >= 0, got ", (*v)[i]);
}
template <typename T>
void non_negative_integer(const std::optional<T>&, const char*, const std::string&) {}

// A per-position list of probabilities: each in [0, 1] (NaN where no draft reached it).
void probabilities(const std::optional<std::vector<double>>& v, const char* name,
                   const std::string& where) {
  if (!v) return;
  for (size_t i = 0; i < v->size(); ++i)
    if (!std::isnan((*v)[i]) && !((*v)[i] >= 0 && (*v)[i] <= 1))
      fail_input(where, ": field ", name, "[", i, "]: expected a probability in [0, 1], got ",
                 (*v)[i]);
}

// Counts and fractions a reader would otherwise pool or print as they are: a count below 0,
// more accepted than tested, an acceptance rate outside [0, 1], a negative standard error.
void result_row_check_ranges(const ResultRow& r, const std::string& where) {
  // (Both are integers >= 0 by then: non_negative_integer below runs first.)
  auto counts = [&](const std::optional<int64_t>& tested, const std::optional<int64_t>& accepted,
                    const std::string& at) {
    if (accepted && tested && *accepted > *tested)
      fail_input(where, ": field ", at, "accepted: expected 0 <= accepted <= tested, got ",
                 *accepted, " of ", *tested);
  };
#define SPECLAB_X(group, type, name, unit, meaning) non_negative_integer(r.name, #name, where);
  SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  counts(r.tested, r.accepted, "");
  // Per position: no more accepted than tested.
  if (r.accepted_by_position && r.tested_by_position &&
      r.accepted_by_position->size() == r.tested_by_position->size())
    for (size_t i = 0; i < r.tested_by_position->size(); ++i)
      if ((*r.accepted_by_position)[i] > (*r.tested_by_position)[i])
        fail_input(where, ": field accepted_by_position[", i, "]: ", (*r.accepted_by_position)[i],
                   " is more than tested_by_position[", i, "] = ", (*r.tested_by_position)[i]);
  for (const auto& [list, name] :
       {std::pair{&r.acceptance_by_position, "acceptance_by_position"},
        std::pair{&r.survival_by_position, "survival_by_position"},
        std::pair{&r.acceptance_profile_by_position, "acceptance_profile_by_position"},
        std::pair{&r.survival_profile_by_position, "survival_profile_by_position"}})
    probabilities(*list, name, where);
  if (r.samples)
    for (size_t i = 0; i < r.samples->size(); ++i) {
      const ResultSample& sample = (*r.samples)[i];
      const std::string at = str_cat(where, ": samples[", i, "]");
#define SPECLAB_X(type, name, unit, meaning) non_negative_integer(sample.name, #name, at);
      SPECLAB_RESULT_SAMPLE_FIELDS(SPECLAB_X)
#undef SPECLAB_X
      counts(sample.tested, sample.accepted, str_cat("samples[", i, "]."));
    }
  auto fraction = [&](const std::optional<double>& v, const char* name) {
    if (v && !std::isnan(*v) && !(*v >= 0 && *v <= 1))
      fail_input(where, ": field ", name, ": expected a fraction in [0, 1], got ", *v);
  };
  fraction(r.alpha_empirical, "alpha_empirical");
  fraction(r.alpha_beta, "alpha_beta");
  auto non_negative = [&](const std::optional<double>& v, const char* name) {
    if (v && !std::isnan(*v) && !(*v >= 0))
      fail_input(where, ": field ", name, ": expected a number >= 0, got ", *v);
  };
  non_negative(r.alpha_se, "alpha_se");
  non_negative(r.tau, "tau");
  non_negative(r.tau_se, "tau_se");
}

}  // namespace

std::string ResultRow::kind() const {
  if (row_kind) return *row_kind;
  // Rows written before row_kind: a cost-only cell carries its predicted grid, a row of
  // `speclab predict` its row_type; everything else was a measured cell.
  if (predicted_grid) return "cost_only";
  if (row_type) return "predicted";
  return "measured";
}

nlohmann::json ResultRow::to_json() const {
  nlohmann::json j = extra.is_object() ? extra : nlohmann::json::object();
  j.update(cell.to_json());
#define SPECLAB_X(group, type, name, unit, meaning) put(j, #name, name);
  SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  return j;
}

ResultRow ResultRow::from_json(const nlohmann::json& j_in, const std::string& where) {
  SPECLAB_INPUT_CHECK(j_in.is_object(), where, ": expected a JSON object (a result row), got ",
                      j_in.type_name());
  nlohmann::json j = j_in;
  for (const auto& [old_name, new_name] : kRenamedFields) {
    if (j.contains(old_name) && !j.contains(new_name)) j[new_name] = j[old_name];
    j.erase(old_name);
  }
  ResultRow r;
  r.cell = Cell::from_json(j);
#define SPECLAB_X(group, type, name, unit, meaning) get(j, #name, where, "", &r.name);
  SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
  result_row_check_ranges(r, where);
  // What is neither declared nor the cell's stays as it was.
  const nlohmann::json cell_keys = r.cell.to_json();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!declared_names().count(it.key()) && !cell_keys.contains(it.key()))
      r.extra[it.key()] = it.value();
  return r;
}

const std::vector<ResultFieldInfo>& result_row_fields() {
  static const std::vector<ResultFieldInfo> fields = [] {
    std::vector<ResultFieldInfo> f;
#define SPECLAB_X(group, type, name, unit, meaning) \
  f.push_back({"row", #group, #name, TypeName<type>::get(), unit, meaning});
    SPECLAB_RESULT_ROW_FIELDS(SPECLAB_X)
#undef SPECLAB_X
#define SPECLAB_X(type, name, unit, meaning) \
  f.push_back({"samples[]", "measured", #name, TypeName<type>::get(), unit, meaning});
    SPECLAB_RESULT_SAMPLE_FIELDS(SPECLAB_X)
#undef SPECLAB_X
#define SPECLAB_X(type, name, unit, meaning) \
  f.push_back({"predicted_grid[]", "cost_only", #name, TypeName<type>::get(), unit, meaning});
    SPECLAB_GRID_POINT_FIELDS(SPECLAB_X)
#undef SPECLAB_X
    return f;
  }();
  return fields;
}

nlohmann::json result_row_group(const ResultRow& row, const std::string& group) {
  const nlohmann::json all = row.to_json();
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : result_row_fields())
    if (f.record == "row" && f.group == group && all.contains(f.name)) out[f.name] = all[f.name];
  return out;
}

std::string result_fields_markdown() {
  std::ostringstream md;
  md << "# Result fields\n\n"
     << "<!-- Generated by `speclab result-fields` from experiments/results/result_row.h; do not "
        "edit. "
        "A test (ResultRow.FieldDocsAreCurrent) fails when this file is stale. -->\n\n"
     << "Every field of a result row (`results/<name>/results.jsonl`, one JSON object per "
        "cell; `predictions.jsonl` of `speclab predict` uses the same fields). Every field is "
        "optional: a row carries what its kind of cell measured. Besides these, a row holds "
        "the cell's own parameters, one per sweep axis, written by the sweep axis table "
        "([config-reference.md](config-reference.md), `sweep.*`): `cell_index`, `cell_id`, "
        "`drafter`, `drafter_spec`, `draft_temperature_same` and each axis's value. "
        "`analysis/result_fields.json` is the same list for the plotting scripts.\n";
  std::string record = "-", group = "-";
  for (const auto& f : result_row_fields()) {
    if (f.record != record) {
      record = f.record;
      group = "-";
      md << "\n## " << (record == "row" ? "The row" : "`" + record + "`") << "\n";
    }
    if (record == "row" && f.group != group) {
      group = f.group;
      md << "\n### " << group
         << "\n\n| field | type | unit | meaning |\n| --- | --- | --- | --- |\n";
    } else if (record != "row" && group == "-") {
      group = f.group;
      md << "\n| field | type | unit | meaning |\n| --- | --- | --- | --- |\n";
    }
    md << "| `" << f.name << "` | " << f.type << " | " << (f.unit.empty() ? "" : f.unit) << " | "
       << f.meaning << " |\n";
  }
  return md.str();
}

nlohmann::json result_fields_json() {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& f : result_row_fields())
    fields.push_back({{"record", f.record},
                      {"group", f.group},
                      {"name", f.name},
                      {"type", f.type},
                      {"unit", f.unit},
                      {"meaning", f.meaning}});
  nlohmann::json renamed = nlohmann::json::object();
  for (const auto& [old_name, new_name] : kRenamedFields) renamed[old_name] = new_name;
  // The cell's own keys: its id and index, then one per sweep axis
  // (experiments/config/sweep_axes.h), with the drafter's spec beside its name and whether the
  // draft temperature followed T.
  nlohmann::json axes = nlohmann::json::array();
  for (const SweepAxis& a : sweep_axes()) axes.push_back({{"key", a.key}, {"label", a.label}});
  return {{"generated_by", "speclab result-fields --json"},
          {"fields", fields},
          {"renamed", renamed},
          {"cell_keys", {"cell_index", "cell_id", "drafter_spec", "draft_temperature_same"}},
          {"axes", axes}};
}

}  // namespace speclab
