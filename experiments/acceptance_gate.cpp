#include "experiments/acceptance_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace speclab {

namespace {

using nlohmann::json;

// The fields of a row that say which models produced it (cell_runner's row_header: the
// drafter's and the target's identity). Timings and sampling parameters are not identity.
const std::vector<std::string>& identity_keys() {
  static const std::vector<std::string> keys = {
      "drafter",       "drafter_spec",  "draft_sha256",  "draft_spec",        "draft_parameters",
      "draft_dtypes",  "draft_format",  "draft_kind",    "draft_layers",      "draft_dim",
      "draft_vocab",   "target_spec",   "target_sha256", "target_parameters", "target_dtypes",
      "target_format", "target_layers", "target_dim",    "target_vocab"};
  return keys;
}

std::string short_value(const json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 16 && v.is_string() && s.find('/') == std::string::npos
             ? s.substr(0, 12) + "..."
             : s;
}

// "key a -> b, ..." for the identity keys present in both rows with different values;
// `keys_of` filters the keys (drafter or target ones).
std::string identity_diff(const json& base, const json& row, bool (*keep)(const std::string&)) {
  std::string out;
  for (const auto& k : identity_keys()) {
    if (!keep(k) || !base.contains(k) || !row.contains(k) || base[k] == row[k]) continue;
    out +=
        (out.empty() ? "" : ", ") + k + " " + short_value(base[k]) + " -> " + short_value(row[k]);
  }
  return out;
}
bool any_key(const std::string&) { return true; }
bool drafter_key(const std::string& k) { return k.rfind("target_", 0) != 0; }
bool target_key(const std::string& k) { return k.rfind("target_", 0) == 0; }

double num(const json& r, const char* key) {
  auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>() : NAN;
}
std::string str(const json& r, const char* key) {
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : "";
}

GateCellResult cell_from(const json& r) {
  GateCellResult c;
  c.cell_id = str(r, "cell_id");
  c.drafter = str(r, "drafter");
  c.gamma = static_cast<int>(std::isnan(num(r, "gamma")) ? 0 : num(r, "gamma"));
  c.temperature = std::isnan(num(r, "temperature")) ? 0 : num(r, "temperature");
  return c;
}

GateFigure figure(const json& row, const json& base, const char* key, const char* se_key,
                  double band, double sigmas, const std::string& where) {
  for (const char* k : {key, se_key}) {
    SPECLAB_INPUT_CHECK(base.contains(k) && base[k].is_number(), where, ": baseline row of cell ",
                        str(base, "cell_id"), " has no number '", k, "'");
    SPECLAB_ASSERT(row.contains(k) && row[k].is_number());
  }
  GateFigure f;
  f.value = row[key].get<double>();
  f.baseline = base[key].get<double>();
  f.se = std::hypot(row[se_key].get<double>(), base[se_key].get<double>());
  f.band = band;
  f.tolerance = std::max(sigmas * f.se, band) + 1e-9;
  const double d = f.value - f.baseline;
  f.z = f.se > 0 ? d / f.se : (std::fabs(d) <= 1e-9 ? 0.0 : std::copysign(INFINITY, d));
  return f;
}

std::string fmt(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string figure_text(const char* name, const GateFigure& f) {
  return str_cat(name, " ", fmt(f.value, 4), " vs baseline ", fmt(f.baseline, 4), " (z ",
                 fmt(f.z, 2), ", tolerance ", fmt(f.tolerance, 4), ")");
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

GateReport gate_compare(const std::vector<json>& baseline, const std::vector<json>& rerun,
                        const std::map<std::string, GateCellBands>& bands, const GateOptions& o) {
  GateReport rep;
  std::map<std::string, const json*> rerun_by_id;
  for (const auto& r : rerun) rerun_by_id[str(r, "cell_id")] = &r;
  std::set<std::string> base_ids;
  for (const auto& b : baseline) base_ids.insert(str(b, "cell_id"));

  // Identity per drafter name: the first baseline row and the first rerun row of each name.
  std::map<std::string, const json*> base_by_name, rerun_by_name;
  for (const auto& b : baseline) base_by_name.emplace(str(b, "drafter"), &b);
  for (const auto& r : rerun) rerun_by_name.emplace(str(r, "drafter"), &r);
  for (const auto& [name, b] : base_by_name) {
    auto it = rerun_by_name.find(name);
    if (it == rerun_by_name.end()) continue;
    const std::string d = identity_diff(*b, *it->second, drafter_key);
    if (!d.empty()) rep.identity_changes["drafter " + name] = d;
  }
  if (!baseline.empty() && !rerun.empty()) {
    const std::string d = identity_diff(baseline.front(), rerun.front(), target_key);
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
    const json& row = *it->second;
    const std::string where = "cell " + c.cell_id;
    c.drafter = str(row, "drafter");  // the rerun's name for the cell
    const std::string id_diff = identity_diff(b, row, any_key);
    const GateCellBands none;
    const auto bi = bands.find(c.cell_id);
    const GateCellBands& band = bi == bands.end() ? none : bi->second;
    c.alpha = figure(row, b, "alpha_empirical", "alpha_se", band.alpha.band, o.sigmas, where);
    c.tau = figure(row, b, "tau", "tau_se", band.tau.band, o.sigmas, where);
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
    if (base_ids.count(str(r, "cell_id"))) continue;
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

std::map<std::string, GateCellBands> gate_bands_read(const std::string& path) {
  std::ifstream f(path);
  SPECLAB_INPUT_CHECK(f.good(), path, ": cannot read the bands file");
  std::stringstream ss;
  ss << f.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception&) {
    fail_input(path, ": not valid JSON (expected a speclab-gate-bands/1 object)");
  }
  SPECLAB_INPUT_CHECK(j.is_object() && j.value("format", "") == "speclab-gate-bands/1", path,
                      ": 'format' must be \"speclab-gate-bands/1\"");
  SPECLAB_INPUT_CHECK(j.contains("cells") && j["cells"].is_object(), path,
                      ": 'cells' must be an object keyed by cell_id");
  std::map<std::string, GateCellBands> out;
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
      g.n = o["n"].get<int>();
      g.mean = o["mean"].get<double>();
      g.sd = o["sd"].get<double>();
      g.min = o["min"].get<double>();
      g.max = o["max"].get<double>();
      g.band = o["band"].get<double>();
    }
    out[it.key()] = b;
  }
  return out;
}

json gate_band_json(const GateBand& b) {
  return {{"n", b.n},     {"mean", b.mean}, {"sd", b.sd},
          {"min", b.min}, {"max", b.max},   {"band", b.band}};
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
  return b;
}

}  // namespace speclab
