// Temporary: replaced by the sweep axis table's Cell::from_json.
#include "core/token_tree.h"
#include "experiments/sweep.h"

namespace speclab {

Cell Cell::from_json(const nlohmann::json& j) {
  Cell c;
  c.index = j.value("cell_index", 0);
  c.cell_id = j.value("cell_id", "");
  c.drafter = j.value("drafter", "");
  c.drafter_ref.spec = j.value("drafter_spec", "");
  c.gamma = j.value("gamma", 1);
  c.temperature = j.value("temperature", 0.0);
  c.draft_temperature = j.value("draft_temperature", c.temperature);
  c.draft_temperature_same = j.value("draft_temperature_same", true);
  c.top_k = j.value("top_k", 0);
  c.top_p = j.value("top_p", 1.0);
  c.lenience = j.value("lenience", 1.0);
  c.gamma_policy = j.value("gamma_policy", "fixed");
  c.p_min = j.value("p_min", 0.0);
  if (j.contains("synthetic_acceptance") && j["synthetic_acceptance"].is_array())
    c.synthetic_acceptance = j["synthetic_acceptance"].get<std::vector<double>>();
  if (j.contains("tree") && j["tree"].is_string()) c.tree = tree_shape_parse(j["tree"], "tree");
  return c;
}

}  // namespace speclab
