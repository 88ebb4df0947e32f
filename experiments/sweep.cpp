#include "experiments/sweep.h"

#include <cstdlib>
#include <set>

#include "core/error.h"
#include "core/token_tree.h"

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

// The parameters that define what a cell measures (no index, no id, no drafter name).
nlohmann::json cell_params_json(const Cell& c) {
  nlohmann::json j = {{"drafter_spec", c.drafter_ref.spec},
                      {"gamma", c.gamma},
                      {"temperature", c.temperature},
                      {"draft_temperature", c.draft_temperature},
                      {"top_k", c.top_k},
                      {"top_p", c.top_p},
                      {"lenience", c.lenience},
                      {"gamma_policy", c.gamma_policy},
                      {"p_min", c.p_min}};
  // Only when on: cells without it keep the ids they had before the axis existed.
  if (!c.synthetic_acceptance.empty()) j["synthetic_acceptance"] = c.synthetic_acceptance;
  if (c.tree.depth() > 0) j["tree"] = c.tree.to_string();
  return j;
}

}  // namespace

nlohmann::json Cell::to_json() const {
  nlohmann::json j = cell_params_json(*this);
  j["cell_index"] = index;
  j["cell_id"] = cell_id;
  j["drafter"] = drafter;
  j["draft_temperature_same"] = draft_temperature_same;
  return j;
}

std::vector<Cell> sweep_expand(const ExperimentConfig& config) {
  SPECLAB_INPUT_CHECK(config.sweep.has_value(), config.file,
                      ": no `sweep` section (a simulator-only config has no cells to run)");
  const SweepConfig& s = *config.sweep;
  const nlohmann::json experiment_identity = config.to_json();
  nlohmann::json identity;
  identity["target"] = config.target ? nlohmann::json(config.target->spec) : nlohmann::json();
  identity["prompts"] =
      experiment_identity.contains("prompts") ? experiment_identity["prompts"] : nlohmann::json();
  identity["generation"] = experiment_identity["generation"];

  std::vector<Cell> cells;
  std::set<std::string> seen;
  for (const auto& drafter : s.drafter)
    for (int gamma : s.gamma)
      for (double temperature : s.temperature)
        for (const auto& draft_temperature : s.draft_temperature)
          for (int top_k : s.top_k)
            for (double top_p : s.top_p)
              for (double lenience : s.lenience)
                for (const auto& policy : s.gamma_policy)
                  for (double p_min : s.p_min) {
                    const DrafterEntry* entry = config.find_drafter(drafter);
                    SPECLAB_ASSERT(entry != nullptr);  // experiment_config_validate checked it
                    Cell c;
                    c.drafter = drafter;
                    c.drafter_ref = entry->ref;
                    c.gamma = gamma;
                    c.temperature = temperature;
                    c.draft_temperature_same = !draft_temperature.has_value();
                    c.draft_temperature = draft_temperature.value_or(temperature);
                    c.top_k = top_k;
                    c.top_p = top_p;
                    c.lenience = lenience;
                    c.gamma_policy = policy;
                    c.p_min = p_min;
                    identity["cell"] = cell_params_json(c);
                    c.cell_id = experiment_hash_hex(identity.dump()).substr(0, 12);
                    if (!seen.insert(c.cell_id).second) continue;  // same cell written twice
                    c.index = static_cast<int>(cells.size());
                    cells.push_back(std::move(c));
                  }
  // synthetic_acceptance, the innermost axis: each cell above once per value, in file order
  // ("off" leaves the cell as it is, id included). The values are distinct (validated), so
  // the ids stay unique.
  const auto& synthetic_axis = s.synthetic_acceptance;
  if (!(synthetic_axis.size() == 1 && synthetic_axis[0].empty())) {
    std::vector<Cell> expanded;
    for (const Cell& base : cells)
      for (const auto& synthetic : synthetic_axis) {
        Cell c = base;
        c.synthetic_acceptance = synthetic;
        identity["cell"] = cell_params_json(c);
        c.cell_id = experiment_hash_hex(identity.dump()).substr(0, 12);
        c.index = static_cast<int>(expanded.size());
        expanded.push_back(std::move(c));
      }
    cells = std::move(expanded);
  }
  // tree, outermost of the post-expansions: each value once per cell above; "off" keeps the
  // chain cell. A tree cell exists only for exact chain settings (lenience 1, fixed policy,
  // p_min 0, synthetic off) at the first gamma, and takes the tree's depth as its gamma.
  if (!(s.tree.size() == 1 && s.tree[0] == "off")) {
    std::vector<Cell> expanded;
    for (const Cell& base : cells)
      for (const auto& tree : s.tree) {
        Cell c = base;
        if (tree != "off") {
          const bool exact = base.lenience == 1.0 && base.gamma_policy == "fixed" &&
                             base.p_min == 0.0 && base.synthetic_acceptance.empty() &&
                             base.gamma == s.gamma.front();
          if (!exact) continue;
          c.tree = tree_shape_parse(tree, "sweep.tree");
          c.gamma = c.tree.depth();
          identity["cell"] = cell_params_json(c);
          c.cell_id = experiment_hash_hex(identity.dump()).substr(0, 12);
        }
        c.index = static_cast<int>(expanded.size());
        expanded.push_back(std::move(c));
      }
    cells = std::move(expanded);
  }
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
