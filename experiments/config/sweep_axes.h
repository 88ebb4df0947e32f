// The sweep axes, declared once: one table entry per axis carries everything the rest of the
// code needs to know about it, and everything else iterates over the table:
//   - the loader (experiment_config.cpp): parsing `sweep.<key>` from YAML, the default when
//     the key is absent, the per-value check ("expected ..., got ..."), duplicates, the
//     cell-count limit, ExperimentConfig::to_json's `sweep` part (hence the config hash);
//   - the schema (config_schema.cpp), hence docs/config-reference.md and the allowed keys;
//   - sweep_expand (sweep.cpp): the nested loops in table order (first entry outermost, last
//     varying fastest), setting the Cell's typed field, the cell id;
//   - Cell::to_json / Cell::from_json (the cell part of a result row);
//   - result tables: a short column label and a value's text (sweep_axes_table_key).
//
// Values travel as JSON in one canonical form per axis, the form ExperimentConfig::to_json
// writes ("gamma": 4, "temperature": 0.5, "draft_temperature": "same" or 0.5,
// "synthetic_acceptance": "off" or [0.9, 0.6], "tree": "off" or "3x2x1:sample").
//
// Adding an axis (docs/config-reference.md, "How to add a sweep axis"): one entry in
// sweep_axes.cpp, at the position it takes in the expansion order, plus the typed Cell field
// the decoder reads. An axis whose default is omitted from the config JSON and the cell id
// (`omit_at_default`) leaves every existing config hash and cell id as it was. E.g.
// concurrency (integer >= 1, default 1, omitted at 1) is one int_axis(...) line.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace YAML {
class Node;
}

namespace speclab {

struct Cell;
struct ExperimentConfig;

// What the loader lends an axis' parser: typed reads of one YAML scalar that record where the
// value was written and fail with one line "file:line: sweep.key[i]: expected ..., got ...".
class SweepYamlReader {
 public:
  virtual ~SweepYamlReader() = default;
  virtual int integer(const YAML::Node& node, const std::string& path) = 0;    // 32-bit
  virtual double number(const YAML::Node& node, const std::string& path) = 0;  // finite
  virtual std::string string(const YAML::Node& node, const std::string& path) = 0;
  // Records `path` as written at `node` (for error messages of later checks).
  virtual void record(const YAML::Node& node, const std::string& path) = 0;
  // Throws InputError "file:line: path: message" (or "--set key: path: message").
  [[noreturn]] void fail(const YAML::Node& node, const std::string& path,
                         const std::string& message);
  // What the user wrote, for "got ...": "'hot'", "a list", "a mapping", "null".
  virtual std::string describe(const YAML::Node& node) = 0;

 protected:
  // Throws; fail() is its non-virtual face, so compilers know that fail() does not return.
  virtual void raise(const YAML::Node& node, const std::string& path,
                     const std::string& message) = 0;
};

// A failed check of one value: `message` follows "file:line: sweep.key[i]<suffix>: ".
struct SweepAxisProblem {
  std::string suffix;   // "" or an element of the value: "[1]"
  std::string message;  // "expected a number in [0, 1], got 2"; empty = the value is fine
};

struct SweepAxis {
  std::string key;  // "p_min": the YAML key under `sweep`, the row's key, the id's key
  // The schema's words (config_schema.h): type, default ("[0.0]", "required") and meaning.
  std::string type;
  std::string default_text;
  std::string meaning;
  // The list the loader uses when the key is absent (canonical JSON); empty = required.
  std::vector<nlohmann::json> defaults;
  // True: at the default list the axis is left out of ExperimentConfig::to_json (so the
  // config hash), and a cell at the default value leaves it out of its id and row, so
  // configs and cells that do not use the axis keep the hashes and ids they had before it
  // existed (synthetic_acceptance, tree; concurrency next).
  bool omit_at_default = false;
  // "expected a non-empty list" unless the axis says more.
  std::string empty_message = "expected a non-empty list";

  // One value (a list element, or the scalar standing for a one-element list) to its
  // canonical JSON; fails through the reader on a wrong type.
  std::function<nlohmann::json(const YAML::Node& node, const std::string& path,
                               SweepYamlReader& reader)>
      parse;
  // Range and cross-reference check of one value.
  std::function<SweepAxisProblem(const nlohmann::json& value, const ExperimentConfig& config)>
      check;
  // Whether `check` reads nothing of the config (a range): then it also checks the value a
  // result row holds (experiments/results/results_store.cpp), with any config.
  bool check_is_a_range = false;
  // Optional check of the whole list against the rest of the config, at path sweep.<key>:
  // "" = fine, else the message.
  std::function<std::string(const std::vector<nlohmann::json>& values,
                            const ExperimentConfig& config)>
      check_list;
  // Sets the cell's typed field(s) from one value; the axes before this one are already set.
  // False: this combination is no cell (a tree at a gamma other than the first).
  std::function<bool(const nlohmann::json& value, const ExperimentConfig& config, Cell& cell)>
      apply;
  // The key(s) this axis adds to the cell's identity (and its row); nothing when omitted.
  std::function<void(const Cell& cell, nlohmann::json& params)> write_id;
  // Optional: keys only the row carries ("drafter", "draft_temperature_same").
  std::function<void(const Cell& cell, nlohmann::json& row)> write_row_extra;
  // The inverse of write_id + write_row_extra on a flat result row; an absent key means the
  // axis' default (rows written before the axis existed).
  std::function<void(const nlohmann::json& row, Cell& cell)> read_row;
  // Result tables: a short column label ("T", "top_p") and the cell's value as text.
  std::string label;
  std::function<std::string(const Cell& cell)> format;
};

// The axes in expansion order: drafter, gamma, temperature, draft_temperature, top_k, top_p,
// lenience, gamma_policy, p_min, synthetic_acceptance, tree (then any test-only axis).
const std::vector<SweepAxis>& sweep_axes();

// The axis called `key`, or nullptr.
const SweepAxis* sweep_axis(const std::string& key);

// For grouping cells in result tables: (label, text) of every axis except `except_keys`, in
// table order. E.g. except {"gamma"}: {"draft", "draft-2m"}, {"T", "0.5"}, {"T_draft", "0.50"},
// {"top_k", "0"}, {"top_p", "1.00"}, {"lenience", "1.00"}, {"policy", "fixed"},
// {"p_min", "0.00"}, {"synthetic", "off"}, {"tree", "off"}.
std::vector<std::pair<std::string, std::string>> sweep_axes_table_key(
    const Cell& cell, const std::vector<std::string>& except_keys = {});

// Tests only: adds `axis` at the end of the table (varying fastest) for this object's
// lifetime, so a test can show that one entry is all an axis needs. Not thread-safe; never
// used by speclab itself.
class ScopedSweepAxisForTests {
 public:
  explicit ScopedSweepAxisForTests(SweepAxis axis);
  ~ScopedSweepAxisForTests();
  ScopedSweepAxisForTests(const ScopedSweepAxisForTests&) = delete;
  ScopedSweepAxisForTests& operator=(const ScopedSweepAxisForTests&) = delete;

 private:
  std::string key_;
};

// Bumped whenever the table changes (a test axis added or removed), so derived tables (the
// config schema) know to rebuild.
int sweep_axes_version();

}  // namespace speclab
