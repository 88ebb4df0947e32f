#include "experiments/results/acceptance_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "experiments/results/table.h"

namespace speclab {

namespace {

using nlohmann::json;

// Which models produced a row: the draft's and the target's identity fields (their groups in
// experiments/results/result_row.h). Timings and sampling parameters are not identity.
json identity_of(const ResultRow& r, bool draft, bool target) {
  json id = json::object();
  if (draft) id.update(result_row_group(r, "draft"));
  if (target) id.update(result_row_group(r, "target"));
  return id;
}

std::string short_value(const json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 16 && v.is_string() && s.find('/') == std::string::npos
             ? s.substr(0, 12) + "..."
             : s;
}

// "field a -> b, ..." for the identity fields present in both rows with different values.
std::string identity_diff(const ResultRow& base_row, const ResultRow& rerun_row, bool draft,
                          bool target) {
  const json base = identity_of(base_row, draft, target);
  const json row = identity_of(rerun_row, draft, target);
  std::string out;
  for (auto it = base.begin(); it != base.end(); ++it) {
    const std::string& k = it.key();
    if (!row.contains(k) || base[k] == row[k]) continue;
    out +=
        (out.empty() ? "" : ", ") + k + " " + short_value(base[k]) + " -> " + short_value(row[k]);
  }
  return out;
}

GateCellResult cell_from(const ResultRow& r) {
  GateCellResult c;
  c.cell_id = r.cell.cell_id;
  c.drafter = r.cell.drafter;
  c.gamma = r.cell.gamma;
  c.temperature = r.cell.temperature;
  return c;
}

// A gated figure (alpha or tau) and its standard error, as the rerun and the baseline have it.
struct GatedValue {
  const char* name;
  std::optional<double> value, se;
};

GateFigure figure(const GatedValue& row, const GatedValue& base, const char* se_name,
                  const std::string& base_cell, const GateBand& band, const GateOptions& o,
                  const std::string& where) {
  SPECLAB_INPUT_CHECK(base.value && std::isfinite(*base.value), where, ": baseline row of cell ",
                      base_cell, " has no number '", base.name, "'");
  SPECLAB_INPUT_CHECK(base.se && std::isfinite(*base.se), where, ": baseline row of cell ",
                      base_cell, " has no number '", se_name, "'");
  SPECLAB_ASSERT(row.value && row.se);
  GateFigure f;
  f.value = *row.value;
  f.baseline = *base.value;
  f.se = std::hypot(*row.se, *base.se);
  f.band = band.band;
  f.deterministic = band.deterministic;
  f.tolerance = (band.deterministic ? o.deterministic_band * std::fabs(f.baseline)
                                    : std::max(o.sigmas * f.se, band.band)) +
                1e-9;
  const double d = f.value - f.baseline;
  f.z = f.se > 0 ? d / f.se : (std::fabs(d) <= 1e-9 ? 0.0 : std::copysign(INFINITY, d));
  return f;
}

std::string figure_text(const char* name, const GateFigure& f) {
  return str_cat(name, " ", table_number(f.value, 4), " vs baseline ", table_number(f.baseline, 4),
                 " (z ", table_number(f.z, 2), ", tolerance ", table_number(f.tolerance, 4), ")");
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

json figure_json(const GateFigure& f) {
  return {{"value", f.value},
          {"baseline", f.baseline},
          {"se", f.se},
          {"band", f.band},
          {"tolerance", f.tolerance},
          {"deterministic", f.deterministic},
          {"z", std::isfinite(f.z) ? json(f.z) : json(f.z > 0 ? "inf" : "-inf")}};
}

}  // namespace

const char* gate_status_name(GateStatus s) {
  switch (s) {
    case GateStatus::kOk:
      return "ok";
    case GateStatus::kImprovement:
      return "improvement";
    case GateStatus::kRegression:
      return "regression";
    case GateStatus::kChanged:
      return "changed";
    case GateStatus::kMissing:
      return "missing";
    case GateStatus::kNew:
      return "new";
    case GateStatus::kModelChanged:
      return "model_changed";
  }
  return "?";
}

std::string GateCellResult::label() const {
  return str_cat("drafter ", drafter, " gamma ", gamma, " T ", temperature, " [", cell_id, "]");
}

GateReport gate_compare(const std::vector<ResultRow>& baseline, const std::vector<ResultRow>& rerun,
                        const std::map<std::string, GateCellBands>& bands, const GateOptions& o) {
  GateReport rep;
  std::map<std::string, const ResultRow*> rerun_by_id;
  for (const auto& r : rerun) rerun_by_id[r.cell.cell_id] = &r;
  std::set<std::string> base_ids;
  for (const auto& b : baseline) base_ids.insert(b.cell.cell_id);

  // Identity per drafter name: the first baseline row and the first rerun row of each name.
  std::map<std::string, const ResultRow*> base_by_name, rerun_by_name;
  for (const auto& b : baseline) base_by_name.emplace(b.cell.drafter, &b);
  for (const auto& r : rerun) rerun_by_name.emplace(r.cell.drafter, &r);
  for (const auto& [name, b] : base_by_name) {
    auto it = rerun_by_name.find(name);
    if (it == rerun_by_name.end()) continue;
    const std::string d = identity_diff(*b, *it->second, /*draft=*/true, /*target=*/false);
    if (!d.empty()) rep.identity_changes["drafter " + name] = d;
  }
  if (!baseline.empty() && !rerun.empty()) {
    const std::string d =
        identity_diff(baseline.front(), rerun.front(), /*draft=*/false, /*target=*/true);
    if (!d.empty()) rep.identity_changes["target"] = d;
  }

  auto finish = [&](GateCellResult& c, GateStatus s, bool fails, const std::string& why) {
    c.status = s;
    c.failed = fails;
    c.reason = why;
  };
  for (const auto& b : baseline) {
    GateCellResult c = cell_from(b);
    auto it = rerun_by_id.find(c.cell_id);
    if (it == rerun_by_id.end()) {
      finish(c, GateStatus::kMissing, !o.allow_missing_cells,
             "in the baseline but not in the rerun (a changed config, drafter or --set?)");
      rep.cells.push_back(c);
      continue;
    }
    const ResultRow& row = *it->second;
    const std::string where = "cell " + c.cell_id;
    c.drafter = row.cell.drafter;  // the rerun's name for the cell
    const std::string id_diff = identity_diff(b, row, /*draft=*/true, /*target=*/true);
    const GateCellBands none;
    const auto bi = bands.find(c.cell_id);
    const GateCellBands& band = bi == bands.end() ? none : bi->second;
    c.alpha = figure({row_field::alpha_empirical, row.alpha_empirical, row.alpha_se},
                     {row_field::alpha_empirical, b.alpha_empirical, b.alpha_se},
                     row_field::alpha_se, b.cell.cell_id, band.alpha, o, where);
    c.tau = figure({row_field::tau, row.tau, row.tau_se}, {row_field::tau, b.tau, b.tau_se},
                   row_field::tau_se, b.cell.cell_id, band.tau, o, where);
    c.compared = true;
    rep.n_compared++;
    if (!id_diff.empty() && !o.allow_model_change) {
      finish(c, GateStatus::kModelChanged, true, "model identity changed: " + id_diff);
      rep.cells.push_back(c);
      continue;
    }
    const bool drop = c.alpha.baseline - c.alpha.value > c.alpha.tolerance ||
                      c.tau.baseline - c.tau.value > c.tau.tolerance;
    const bool rise = c.alpha.value - c.alpha.baseline > c.alpha.tolerance ||
                      c.tau.value - c.tau.baseline > c.tau.tolerance;
    const std::string figures = figure_text("alpha", c.alpha) + "; " + figure_text("tau", c.tau);
    if (drop)
      finish(c, GateStatus::kRegression, true, "acceptance dropped: " + figures);
    else if (rise && o.two_sided)
      finish(c, GateStatus::kChanged, true, "acceptance rose (two-sided gate): " + figures);
    else if (rise)
      finish(c, GateStatus::kImprovement, false, "acceptance rose: " + figures);
    if (!id_diff.empty())  // allowed by allow_model_change: said, not failed
      c.reason +=
          (c.reason.empty() ? "" : "; ") + std::string("model identity changed: ") + id_diff;
    rep.cells.push_back(c);
  }
  for (const auto& r : rerun) {
    if (base_ids.count(r.cell.cell_id)) continue;
    GateCellResult c = cell_from(r);
    finish(c, GateStatus::kNew, !o.allow_missing_cells,
           "in the rerun but not in the baseline (refresh the baseline with --update)");
    rep.cells.push_back(c);
  }
  for (const auto& c : rep.cells) rep.n_failed += c.failed ? 1 : 0;
  return rep;
}

json gate_cell_json(const GateCellResult& c) {
  json j = {{"cell_id", c.cell_id},
            {"drafter", c.drafter},
            {"gamma", c.gamma},
            {"temperature", c.temperature},
            {"status", gate_status_name(c.status)},
            {"failed", c.failed},
            {"reason", c.reason}};
  if (c.compared) {
    j["alpha"] = figure_json(c.alpha);
    j["tau"] = figure_json(c.tau);
  }
  return j;
}

json gate_verdict_json(const GateReport& r, const GateOptions& o, const std::string& baseline_path,
                       const std::string& bands_path) {
  json failed = json::array();
  for (const auto& c : r.cells)
    if (c.failed) failed.push_back(c.cell_id);
  json ids = json::object();
  for (const auto& [who, d] : r.identity_changes) ids[who] = d;
  return {{"verdict", r.passed() ? "pass" : "fail"},
          {"baseline", baseline_path},
          {"bands", bands_path.empty() ? json(nullptr) : json(bands_path)},
          {"sigmas", o.sigmas},
          {"sided", o.two_sided ? "two" : "one"},
          {"allow_missing_cells", o.allow_missing_cells},
          {"allow_model_change", o.allow_model_change},
          {"cells", r.cells.size()},
          {"compared", r.n_compared},
          {"failed", r.n_failed},
          {"failed_cells", failed},
          {"identity_changes", ids}};
}

std::string gate_junit_xml(const GateReport& r, const std::string& suite) {
  int skipped = 0;
  for (const auto& c : r.cells)
    skipped += !c.failed && (c.status == GateStatus::kMissing || c.status == GateStatus::kNew);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"speclab check\" tests=\"" << r.cells.size() << "\" failures=\""
    << r.n_failed << "\">\n";
  x << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << r.cells.size()
    << "\" failures=\"" << r.n_failed << "\" errors=\"0\" skipped=\"" << skipped << "\">\n";
  for (const auto& c : r.cells) {
    x << "    <testcase classname=\"" << xml_escape(suite + "." + c.drafter) << "\" name=\""
      << xml_escape(str_cat("gamma=", c.gamma, " T=", c.temperature, " [", c.cell_id, "]"))
      << "\">";
    if (c.failed) {
      x << "\n      <failure type=\"" << gate_status_name(c.status) << "\" message=\""
        << xml_escape(c.reason) << "\">" << xml_escape(c.label() + ": " + c.reason)
        << "</failure>\n    ";
    } else if (c.status == GateStatus::kMissing || c.status == GateStatus::kNew) {
      x << "\n      <skipped message=\"" << xml_escape(c.reason) << "\"/>\n    ";
    } else if (!c.reason.empty()) {
      x << "\n      <system-out>" << xml_escape(c.reason) << "</system-out>\n    ";
    }
    x << "</testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

std::string gate_bands_default_path(const std::string& baseline_path) {
  const std::string ext = ".jsonl";
  std::string stem = baseline_path;
  if (stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0)
    stem.resize(stem.size() - ext.size());
  return stem + ".bands.json";
}

GateBands gate_bands_read(const std::string& path) {
  // A bands file is a few KB per cell; 256 MiB is not one (and /dev/zero is refused).
  const std::string text = input_file_read(path, "bands file", 256ull << 20);
  json j;
  try {
    j = json_input_parse(text, path);
  } catch (const json::exception&) {
    fail_input(path, ": not valid JSON (expected a speclab-gate-bands/2 object)");
  }
  SPECLAB_INPUT_CHECK(j.is_object(), path, ": expected a speclab-gate-bands/2 object");
  const std::string format =
      j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
  SPECLAB_INPUT_CHECK(format != "speclab-gate-bands/1", path,
                      ": format speclab-gate-bands/1 does not tell deterministic cells apart; "
                      "write the bands again (speclab check CONFIG --baseline FILE --calibrate 5)");
  SPECLAB_INPUT_CHECK(format == "speclab-gate-bands/2", path,
                      ": 'format' must be \"speclab-gate-bands/2\"");
  SPECLAB_INPUT_CHECK(j.contains("config_hash") && j["config_hash"].is_string(), path,
                      ": 'config_hash' must be a string");
  SPECLAB_INPUT_CHECK(
      j.contains("sigmas") && j["sigmas"].is_number() && j["sigmas"].get<double>() > 0, path,
      ": 'sigmas' must be a number > 0");
  SPECLAB_INPUT_CHECK(j.contains("cells") && j["cells"].is_object(), path,
                      ": 'cells' must be an object keyed by cell_id");
  GateBands out;
  out.config_hash = j["config_hash"].get<std::string>();
  out.sigmas = j["sigmas"].get<double>();
  for (auto it = j["cells"].begin(); it != j["cells"].end(); ++it) {
    GateCellBands b;
    for (const char* fig : {"alpha", "tau"}) {
      const std::string key = "cells." + it.key() + "." + fig;
      SPECLAB_INPUT_CHECK(it->is_object() && it->contains(fig) && (*it)[fig].is_object(), path,
                          ": ", key, " must be an object");
      const json& o = (*it)[fig];
      GateBand& g = std::string(fig) == "alpha" ? b.alpha : b.tau;
      for (const char* k : {"n", "mean", "sd", "min", "max", "band"}) {
        const bool nonneg =
            std::string(k) == "n" || std::string(k) == "sd" || std::string(k) == "band";
        SPECLAB_INPUT_CHECK(
            o.contains(k) && o[k].is_number() && (!nonneg || o[k].get<double>() >= 0), path, ": ",
            key, ".", k, " must be a number", nonneg ? " >= 0" : "");
      }
      SPECLAB_INPUT_CHECK(o.contains("deterministic") && o["deterministic"].is_boolean(), path,
                          ": ", key, ".deterministic must be true or false");
      g.n = o["n"].get<int>();
      g.mean = o["mean"].get<double>();
      g.sd = o["sd"].get<double>();
      g.min = o["min"].get<double>();
      g.max = o["max"].get<double>();
      g.band = o["band"].get<double>();
      g.deterministic = o["deterministic"].get<bool>();
    }
    out.cells[it.key()] = b;
  }
  return out;
}

void gate_bands_check(const GateBands& bands, const std::string& path,
                      const std::string& config_hash, double sigmas,
                      const std::vector<std::string>& cell_ids) {
  SPECLAB_INPUT_CHECK(bands.config_hash == config_hash, path, ": calibrated for config hash ",
                      bands.config_hash, ", this check's config hashes to ", config_hash,
                      " (another target, drafters, prompts, generation or measure settings): "
                      "calibrate again (--calibrate N) or give the bands of this config (--bands)");
  SPECLAB_INPUT_CHECK(
      std::fabs(bands.sigmas - sigmas) <= 1e-12 * sigmas, path, ": bands computed with sigmas ",
      bands.sigmas, ", the config's gate.sigmas is ", sigmas, ": calibrate again (--calibrate N)");
  for (const std::string& id : cell_ids)
    SPECLAB_INPUT_CHECK(bands.cells.count(id) > 0, path, ": no band for cell ", id,
                        " (a cell added to the sweep since the calibration): calibrate again "
                        "(--calibrate N)");
}

json gate_band_json(const GateBand& b) {
  return {{"n", b.n},
          {"mean", b.mean},
          {"sd", b.sd},
          {"min", b.min},
          {"max", b.max},
          {"band", b.band},
          {"deterministic", b.deterministic}};
}

double gate_expected_tolerance(const GateBand& band, double se, const GateOptions& o) {
  if (band.deterministic) return o.deterministic_band * std::fabs(band.mean);
  return std::max(o.sigmas * std::sqrt(2.0) * se, band.band);
}

GateBand gate_band_from(const std::vector<double>& v, double sigmas) {
  SPECLAB_ASSERT(v.size() >= 2);
  GateBand b;
  b.n = static_cast<int>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  b.mean = sum / b.n;
  double ss = 0;
  for (double x : v) ss += (x - b.mean) * (x - b.mean);
  b.sd = std::sqrt(ss / (b.n - 1));
  b.min = *std::min_element(v.begin(), v.end());
  b.max = *std::max_element(v.begin(), v.end());
  b.band = sigmas * std::sqrt(2.0) * b.sd;
  b.deterministic = b.max == b.min;
  return b;
}

}  // namespace speclab
