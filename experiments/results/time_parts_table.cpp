#include "experiments/results/time_parts_table.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "experiments/config/sweep_axes.h"

namespace speclab {

namespace {

struct Part {
  const char* label;
  std::optional<double> ResultRow::*loop;
  std::optional<double> ResultRow::*profile;  // null: the profile has no such part
};

const std::vector<Part>& step_parts() {
  static const std::vector<Part> parts = {
      {"layers", &ResultRow::step_layers_s, &ResultRow::profile_step_layers_s},
      {"head", &ResultRow::step_head_s, &ResultRow::profile_step_head_s},
      {"to probabilities", &ResultRow::step_standardize_s, &ResultRow::profile_step_standardize_s},
      {"draw", &ResultRow::step_draw_s, &ResultRow::profile_step_draw_s},
      {"other", &ResultRow::step_other_s, nullptr}};
  return parts;
}

const std::vector<Part>& round_parts() {
  static const std::vector<Part> parts = {
      {"draft forward", &ResultRow::round_draft_forward_s,
       &ResultRow::profile_round_draft_forward_s},
      {"draft other", &ResultRow::round_draft_other_s, &ResultRow::profile_round_draft_other_s},
      {"verify layers", &ResultRow::round_verify_layers_s,
       &ResultRow::profile_round_verify_layers_s},
      {"verify head", &ResultRow::round_verify_head_s, &ResultRow::profile_round_verify_head_s},
      {"to probabilities", &ResultRow::round_standardize_s,
       &ResultRow::profile_round_standardize_s},
      {"accept", &ResultRow::round_accept_s, &ResultRow::profile_round_accept_s},
      {"other", &ResultRow::round_other_s, nullptr}};
  return parts;
}

// The axes (label) whose text differs among the rows, in table order; draft and gamma always.
std::vector<std::string> varying_axes(const std::vector<const ResultRow*>& rows) {
  std::vector<std::string> labels;
  const auto first = sweep_axes_table_key(rows.front()->cell, {"gamma"});
  for (size_t i = 0; i < first.size(); i++) {
    bool varies = first[i].first == "draft";
    for (const ResultRow* r : rows)
      varies = varies || sweep_axes_table_key(r->cell, {"gamma"})[i].second != first[i].second;
    if (varies) labels.push_back(first[i].first);
  }
  labels.push_back("gamma");
  return labels;
}

std::string milliseconds(const std::optional<double>& v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", *v * 1e3);
  return b;
}

Table parts_table(const char* name, const char* title, const std::vector<Part>& parts,
                  const std::vector<const ResultRow*>& rows, const std::vector<std::string>& axes,
                  bool machine) {
  Table t{name, title, axes, {}, {}, {}};
  for (const Part& p : parts) {
    if (machine) {
      t.headers.push_back(std::string(p.label) + " loop");
      if (p.profile) t.headers.push_back(std::string(p.label) + " profile");
    } else {
      t.headers.push_back(p.label);
    }
  }
  for (const ResultRow* r : rows) {
    std::vector<std::string> row;
    for (const auto& [label, text] : sweep_axes_table_key(r->cell, {"gamma"}))
      for (const std::string& a : axes)
        if (a == label) row.push_back(text);
    row.push_back(std::to_string(r->cell.gamma));
    for (const Part& p : parts) {
      const std::optional<double>& loop = r->*p.loop;
      if (machine) {
        row.push_back(loop ? table_number(*loop, 0, true) : "");
        if (p.profile) {
          const std::optional<double>& prof = r->*p.profile;
          row.push_back(prof ? table_number(*prof, 0, true) : "");
        }
      } else {
        row.push_back(milliseconds(loop) +
                      (p.profile ? " / " + milliseconds(r->*p.profile) : std::string()));
      }
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

std::vector<Table> time_parts_tables(const std::vector<const ResultRow*>& rows, bool machine) {
  std::vector<const ResultRow*> with_step, with_round;
  for (const ResultRow* r : rows) {
    if (r->step_layers_s) with_step.push_back(r);
    if (r->round_verify_layers_s) with_round.push_back(r);
  }
  std::vector<Table> out;
  if (!with_step.empty())
    out.push_back(
        parts_table("step_parts",
                    "Where a plain step goes, per token: the plain loop / the cost profile, ms (an "
                    "accounting; the profile times each part in isolation)",
                    step_parts(), with_step, varying_axes(with_step), machine));
  if (!with_round.empty())
    out.push_back(parts_table(
        "round_parts",
        "Where a round goes, per round: the speculative loop / the cost profile priced at this "
        "run's own rounds (how many each drafted, which followed a fully accepted one), ms: a "
        "diagnostic of which part departs, not a prediction",
        round_parts(), with_round, varying_axes(with_round), machine));
  return out;
}

}  // namespace speclab
