#include "experiments/config/sweep.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "core/error.h"
#include "core/token_tree.h"
#include "experiments/config/sweep_axes.h"

namespace speclab {

SamplingParams Cell::target_sampling() const {
  SamplingParams p;
  p.temperature = static_cast<float>(temperature);
  p.top_k = top_k;
  p.top_p = static_cast<float>(top_p);
  return p;
}

SamplingParams Cell::draft_sampling() const {
  SamplingParams p = target_sampling();
  p.temperature = static_cast<float>(draft_temperature);
  return p;
}

namespace {

// The parameters that define what a cell measures (no index, no id, no drafter name): each
// axis' keys (sweep_axes.h).
nlohmann::json cell_params_json(const Cell& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const SweepAxis& axis : sweep_axes()) axis.write_id(c, j);
  return j;
}

}  // namespace

nlohmann::json Cell::to_json() const {
  nlohmann::json j = cell_params_json(*this);
  for (const SweepAxis& axis : sweep_axes())
    if (axis.write_row_extra) axis.write_row_extra(*this, j);
  j["cell_index"] = index;
  j["cell_id"] = cell_id;
  return j;
}

Cell Cell::from_json(const nlohmann::json& row) {
  Cell c;
  c.index = row.value("cell_index", 0);
  c.cell_id = row.value("cell_id", std::string());
  // In table order: draft_temperature's default ("same") reads the temperature before it.
  for (const SweepAxis& axis : sweep_axes()) axis.read_row(row, c);
  return c;
}

std::vector<Cell> sweep_expand(const ExperimentConfig& config) {
  SPECLAB_INPUT_CHECK(config.sweep.has_value(), config.file,
                      ": no `sweep` section (a simulator-only config has no cells to run)");
  const SweepConfig& s = *config.sweep;
  nlohmann::json identity;
  identity["target"] = config.target ? nlohmann::json(config.target->spec) : nlohmann::json();
  identity["prompts"] = config.prompts_json();
  identity["generation"] = config.generation_json();

  // Nested loops over the axes as an odometer: position[k] indexes axis k's values, the last
  // axis turning fastest.
  const std::vector<SweepAxis>& axes = sweep_axes();
  std::vector<const std::vector<nlohmann::json>*> values;
  for (const SweepAxis& axis : axes) {
    values.push_back(&s.values(axis.key));
    if (values.back()->empty()) return {};  // experiment_config_validate refuses this
  }
  // sweep.exclude: entry e removes the combination when every axis it names holds one of
  // its values; removed[e] counts what each entry removed (an entry removing nothing is a
  // mistake the user should hear of).
  auto excluded_by = [&](const std::map<std::string, std::vector<nlohmann::json>>& entry,
                         const std::vector<size_t>& at) {
    for (size_t k = 0; k < axes.size(); ++k) {
      const auto it = entry.find(axes[k].key);
      if (it == entry.end()) continue;
      const nlohmann::json& v = (*values[k])[at[k]];
      if (std::find(it->second.begin(), it->second.end(), v) == it->second.end()) return false;
    }
    return true;
  };
  std::vector<int> removed(s.exclude.size(), 0);
  std::vector<size_t> position(axes.size(), 0);
  std::vector<Cell> cells;
  std::set<std::string> seen;
  while (true) {
    Cell c;
    bool exists = true;
    for (size_t k = 0; k < axes.size() && exists; ++k)
      exists = axes[k].apply((*values[k])[position[k]], config, c);
    for (size_t e = 0; e < s.exclude.size() && exists; ++e)
      if (excluded_by(s.exclude[e], position)) {
        removed[e]++;
        exists = false;
      }
    if (exists) {
      identity["cell"] = cell_params_json(c);
      c.cell_id = experiment_hash_hex(identity.dump()).substr(0, 12);
      if (seen.insert(c.cell_id).second) {  // else the same cell written twice
        c.index = static_cast<int>(cells.size());
        cells.push_back(std::move(c));
      }
    }
    size_t k = axes.size();
    while (k > 0 && ++position[k - 1] == values[k - 1]->size()) position[--k] = 0;
    if (k == 0) break;
  }
  // (An entry naming a value its axis lacks, which only --set narrowing allows, may remove
  // nothing.)
  auto on_axes = [&](const std::map<std::string, std::vector<nlohmann::json>>& entry) {
    for (const auto& [key, vs] : entry)
      for (const nlohmann::json& v : vs) {
        const std::vector<nlohmann::json>& axis = s.values(key);
        if (std::find(axis.begin(), axis.end(), v) == axis.end()) return false;
      }
    return true;
  };
  for (size_t e = 0; e < s.exclude.size(); ++e)
    SPECLAB_INPUT_CHECK(removed[e] > 0 || !on_axes(s.exclude[e]),
                        config.where(str_cat("sweep.exclude[", e, "]")),
                        ": excludes no cell (an earlier entry, or the sweep itself, already "
                        "leaves its combinations out)");
  SPECLAB_INPUT_CHECK(s.exclude.empty() || !cells.empty(), config.where("sweep.exclude"),
                      ": excludes every cell of the sweep");
  // Combinations that do not exist (tree speculation is exact only: no lenience, p_min,
  // adaptive gamma or synthetic acceptance beside a tree) may leave nothing to run.
  SPECLAB_INPUT_CHECK(!cells.empty(), config.where("sweep"),
                      ": expands to no cells (every combination of its axes is one that does not "
                      "exist, e.g. a tree with lenience, p_min, an adaptive gamma_policy or "
                      "synthetic_acceptance)");
  return cells;
}

Shard sweep_parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto parse = [&](const std::string& s, int* out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    *out = std::atoi(s.c_str());
    return true;
  };
  Shard shard;
  const bool ok = slash != std::string::npos && parse(text.substr(0, slash), &shard.index) &&
                  parse(text.substr(slash + 1), &shard.count);
  SPECLAB_INPUT_CHECK(ok, "--shard '", text, "': expected I/N with integers 0 <= I < N (e.g. 0/4)");
  SPECLAB_INPUT_CHECK(shard.count >= 1 && shard.index < shard.count, "--shard '", text,
                      "': expected 0 <= I < N and N >= 1, got I=", shard.index, " N=", shard.count);
  return shard;
}

std::vector<Cell> sweep_shard(const std::vector<Cell>& cells, int i, int n) {
  SPECLAB_ASSERT(n >= 1 && i >= 0 && i < n);
  std::vector<Cell> out;
  for (size_t k = static_cast<size_t>(i); k < cells.size(); k += static_cast<size_t>(n))
    out.push_back(cells[k]);
  return out;
}

}  // namespace speclab
