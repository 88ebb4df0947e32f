// Sweep expansion: an experiment's `sweep` axes crossed into cells, one measured setting each.
//
// The axes are declared once, in the table of experiments/config/sweep_axes.cpp (sweep_axes.h):
// parsing, checks, defaults, how each sets a Cell field, enters the cell id and the row.
// Order (stable, documented, what `--shard` and the result files rely on): nested loops over
// the axes in table order, the first axis outermost and the last varying fastest:
//   drafter, gamma, temperature, draft_temperature, top_k, top_p, lenience, gamma_policy, p_min,
//   synthetic_acceptance, tree
// Within an axis, values keep their order in the file. Drafter outermost means a run loads
// each draft model once. A combination identical to an earlier one after resolution
// (draft_temperature "same" and the same number written out) is dropped, so cell ids are
// unique. A tree cell exists only for the exact chain settings (lenience 1, gamma_policy
// fixed, p_min 0, synthetic acceptance off) at the first gamma value, and takes the tree's
// depth as its gamma; other combinations with a tree are no cell.
//
// cell_id: 12 hex digits of a hash of the canonical JSON (sorted keys) of
//   { cell: the resolved parameters with the drafter's spec (not its name),
//     target: target spec, prompts: {file spec, limit, chat_template} or null,
//     generation: every generation setting }
// with one key per axis (drafter as `drafter_spec`). synthetic_acceptance and tree (axes
// with omit_at_default) enter the cell's parameters only when on, so the ids of cells
// without them are what they were before those axes existed.
// Specs are as written in the config, not resolved paths, so ids agree across machines and
// checkouts; anything that changes what a cell measures changes its id, which is what
// `--resume` relies on to skip finished cells.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/sampling.h"
#include "core/token_tree.h"
#include "experiments/config/experiment_config.h"

namespace speclab {

struct Cell {
  int index = 0;        // position in sweep_expand order (before sharding)
  std::string cell_id;  // 12 hex digits, see above
  std::string drafter;  // name in config.drafters
  ModelRef drafter_ref;
  int gamma = 1;
  double temperature = 0;
  double draft_temperature = 0;  // resolved: equals temperature when the config said "same"
  bool draft_temperature_same = true;
  int top_k = 0;
  double top_p = 1;
  double lenience = 1;
  std::string gamma_policy = "fixed";
  double p_min = 0;
  std::vector<double> synthetic_acceptance;  // empty = off; else per position, last repeats
  TreeShape tree;  // parsed once by sweep_expand; depth 0 = a chain cell (rows: "3x2x1:topk")
  // Requests in flight at once (continuous batching, models/decode/batched_decoder.h); 1 =
  // one request at a time, the protocol of cell_run.
  int concurrency = 1;
  // Values of axes declared without a typed field (a test's axis): key -> canonical JSON.
  std::map<std::string, nlohmann::json> other_axes;

  SamplingParams target_sampling() const;
  SamplingParams draft_sampling() const;  // the draft temperature, the same top-k / top-p
  // Flat: cell_index, cell_id, drafter, drafter_spec, draft_temperature_same and each axis'
  // key (synthetic_acceptance and tree only when on); integers as JSON integers, numbers as
  // doubles. The cell part of a result row.
  nlohmann::json to_json() const;
  // The inverse of to_json() on a flat result row (other keys are ignored): an axis the row
  // lacks (a row written before the axis existed) takes the axis' default. drafter_ref.path
  // stays empty (rows carry specs, not this machine's paths). Throws nlohmann::json's
  // type_error on a key of the wrong JSON type, InputError on a bad tree shape.
  static Cell from_json(const nlohmann::json& row);
};

// Every cell of config.sweep in the order above. Throws InputError if the config has no sweep.
std::vector<Cell> sweep_expand(const ExperimentConfig& config);

// A `--shard I/N` selection: this run takes cells whose index % count == index.
struct Shard {
  int index = 0;
  int count = 1;
};

// Parses "I/N" (0 <= I < N, N >= 1). Throws InputError naming --shard.
Shard sweep_parse_shard(const std::string& text);

// The cells of shard i of n, round-robin by position: cells[i], cells[i + n], ...
std::vector<Cell> sweep_shard(const std::vector<Cell>& cells, int i, int n);

}  // namespace speclab
