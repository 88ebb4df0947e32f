#include "experiments/result_tables.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"

namespace speclab {

namespace {

// How cells are written: for reading (fixed digits, "-" for none, "+5.0%", "[lo, hi]") or
// for machines (csv/json: every digit that matters, "" for none, fractions, lo and hi in
// columns of their own).
struct CellFormat {
  bool machine = false;

  std::string fmt(double v, int digits = 2) const {
    char b[64];
    if (machine)
      std::snprintf(b, sizeof b, "%.10g", v);
    else
      std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
  }
  std::string none() const { return machine ? "" : "-"; }
  std::string maybe(double v, int digits = 2) const {
    return std::isnan(v) ? none() : fmt(v, digits);
  }
  std::string pct(double v) const {
    if (std::isnan(v)) return none();
    if (machine) return fmt(v);
    char b[64];
    std::snprintf(b, sizeof b, "%+.1f%%", 100 * v);
    return b;
  }
  // The speedup interval: one "[lo, hi]" column ("-" for rows without a speedup), or for
  // machines two columns speedup_ci_lo, speedup_ci_hi.
  void interval_header(std::vector<std::string>* h) const {
    if (machine) {
      h->push_back("speedup_ci_lo");
      h->push_back("speedup_ci_hi");
    } else {
      h->push_back("interval");
    }
  }
  void interval_cells(const nlohmann::json& r, std::vector<std::string>* row) const;
};

double num(const nlohmann::json& r, const char* key, double def = NAN) {
  auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>() : def;
}
std::string str(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : "";
}

void CellFormat::interval_cells(const nlohmann::json& r, std::vector<std::string>* row) const {
  const bool no_speedup = std::isnan(num(r, "speedup"));
  if (machine) {
    row->push_back(no_speedup ? "" : maybe(num(r, "speedup_ci_lo")));
    row->push_back(no_speedup ? "" : maybe(num(r, "speedup_ci_hi")));
  } else {
    row->push_back(no_speedup ? "-"
                              : "[" + maybe(num(r, "speedup_ci_lo")) + ", " +
                                    maybe(num(r, "speedup_ci_hi")) + "]");
  }
}

std::string latex_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '_' || c == '%' || c == '&' || c == '#' || c == '$') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

TableFormat table_format_parse(const std::string& name) {
  if (name == "md" || name == "markdown") return TableFormat::kMarkdown;
  if (name == "csv") return TableFormat::kCsv;
  if (name == "latex" || name == "tex") return TableFormat::kLatex;
  if (name == "json") return TableFormat::kJson;
  fail_input("--format: '", name, "' (expected md, csv, latex or json)");
}

namespace {

// The tables of the rows of one config.
std::vector<Table> tables_of_config(const std::vector<const nlohmann::json*>& rows,
                                    const CellFormat& f) {
  std::vector<Table> out;
  // Synthetic-acceptance cells get their own table: their alpha is configured, not the pair's.
  // Tree cells too: their acceptance is per depth of a tree, not a chain's alpha.
  std::vector<const nlohmann::json*> gen, cost, synthetic, tree;
  for (const auto* r : rows)
    (r->contains("predicted_grid")         ? cost
     : r->contains("synthetic_acceptance") ? synthetic
     : r->contains("tree")                 ? tree
                                           : gen)
        .push_back(r);

  if (!gen.empty()) {
    // Table 3 analog: alpha per target x drafter x temperature, pooled over gamma.
    struct Acc {
      double accepted = 0, tested = 0, beta = 0;
    };
    std::map<std::tuple<std::string, std::string, double>, Acc> by;
    for (const auto* r : gen) {
      auto& a = by[{str(*r, "target_spec"), str(*r, "drafter"), num(*r, "temperature", 0)}];
      const double tested = num(*r, "tested", 0);
      a.accepted += num(*r, "accepted", 0);
      a.tested += tested;
      a.beta += num(*r, "alpha_beta", 0) * tested;
    }
    Table t3{"acceptance",
             "Acceptance (Table 3 analog): alpha per target, draft and temperature, pooled over "
             "gamma; alpha = accepted/tested, beta = Corollary 3.6 estimate",
             {"target", "draft", "T", "alpha", "beta", "tested"},
             {},
             {},
             {}};
    for (const auto& [k, a] : by) {
      t3.rows.push_back({std::get<0>(k), std::get<1>(k), f.fmt(std::get<2>(k), 1),
                         a.tested ? f.fmt(a.accepted / a.tested) : f.maybe(NAN),
                         a.tested ? f.fmt(a.beta / a.tested) : f.maybe(NAN), f.fmt(a.tested, 0)});
    }
    out.push_back(t3);

    // Table 4 analog.
    Table t4{"speedup",
             "Speedup (Table 4 analog): measured (95% bootstrap interval over prompts) vs "
             "Theorem 3.8 and the refined model",
             {"draft", "T", "gamma", "policy", "alpha", "c", "tau", "speedup"},
             {},
             {},
             {}};
    f.interval_header(&t4.headers);
    for (const char* h : {"thm 3.8", "err thm 3.8", "refined", "err refined"})
      t4.headers.push_back(h);
    for (const auto* r : gen) {
      std::vector<std::string> row{str(*r, "drafter"),
                                   f.fmt(num(*r, "temperature", 0), 1),
                                   std::to_string(static_cast<int>(num(*r, "gamma", 0))),
                                   str(*r, "gamma_policy"),
                                   f.maybe(num(*r, "alpha_beta")),
                                   f.maybe(num(*r, "c_measured"), 3),
                                   f.maybe(num(*r, "tau")),
                                   f.maybe(num(*r, "speedup"))};
      f.interval_cells(*r, &row);
      for (const auto& x :
           {f.maybe(num(*r, "predicted_speedup_thm38")), f.pct(num(*r, "error_thm38")),
            f.maybe(num(*r, "predicted_speedup_refined")), f.pct(num(*r, "error_refined"))})
        row.push_back(x);
      t4.rows.push_back(row);
    }
    out.push_back(t4);

    // Speedup vs gamma.
    std::set<int> gammas;
    std::map<std::pair<std::string, double>, std::map<int, double>> grid;
    for (const auto* r : gen) {
      if (str(*r, "gamma_policy") != "fixed" && !str(*r, "gamma_policy").empty()) continue;
      const int g = static_cast<int>(num(*r, "gamma", 0));
      gammas.insert(g);
      grid[{str(*r, "drafter"), num(*r, "temperature", 0)}][g] = num(*r, "speedup");
    }
    Table tg{"gamma", "Measured speedup vs gamma (fixed gamma)", {"draft", "T"}, {}, {}, {}};
    for (int g : gammas) tg.headers.push_back("g=" + std::to_string(g));
    for (const auto& [k, m] : grid) {
      std::vector<std::string> row{k.first, f.fmt(k.second, 1)};
      for (int g : gammas) row.push_back(m.count(g) ? f.maybe(m.at(g)) : f.maybe(NAN));
      tg.rows.push_back(row);
    }
    out.push_back(tg);
  }

  if (!tree.empty()) {
    Table tt{
        "tree",
        "Tree speculation: tokens per round (tau) and measured speedup per tree shape "
        "(AxBxC: A children of the root, B of each, ...; topk = the draft's top tokens, sample "
        "= independent draft samples) vs the refined model (per-depth acceptance, measured cost "
        "of the draft per round and of verifying all nodes); Theorem 3.8 has no tree form",
        {"draft", "T", "tree", "nodes/round", "tau", "speedup"},
        {},
        {},
        {}};
    f.interval_header(&tt.headers);
    tt.headers.push_back("refined");
    tt.headers.push_back("err refined");
    for (const auto* r : tree) {
      std::vector<std::string> row{
          str(*r, "drafter"),      f.fmt(num(*r, "temperature", 0), 1),
          str(*r, "tree"),         f.maybe(num(*r, "mean_tree_nodes_per_round"), 1),
          f.maybe(num(*r, "tau")), f.maybe(num(*r, "speedup"))};
      f.interval_cells(*r, &row);
      row.push_back(f.maybe(num(*r, "predicted_speedup_refined")));
      row.push_back(f.pct(num(*r, "error_refined")));
      tt.rows.push_back(row);
    }
    out.push_back(tt);
  }

  if (!synthetic.empty()) {
    Table ts{"synthetic",
             "Synthetic acceptance (known alpha): measured speedup vs Theorem 3.8 and the refined "
             "model at the configured alpha; alpha set = configured per position (last repeats), "
             "alpha = measured accepted/tested",
             {"draft", "T", "gamma", "alpha set", "alpha", "c", "tau", "speedup"},
             {},
             {},
             {}};
    f.interval_header(&ts.headers);
    for (const char* h : {"thm 3.8", "err thm 3.8", "refined", "err refined"})
      ts.headers.push_back(h);
    for (const auto* r : synthetic) {
      std::string set;
      for (const auto& a : (*r)["synthetic_acceptance"])
        set += (set.empty() ? "" : "/") + f.fmt(a.is_number() ? a.get<double>() : NAN);
      std::vector<std::string> row{str(*r, "drafter"),
                                   f.fmt(num(*r, "temperature", 0), 1),
                                   std::to_string(static_cast<int>(num(*r, "gamma", 0))),
                                   set,
                                   f.maybe(num(*r, "alpha_empirical")),
                                   f.maybe(num(*r, "c_measured"), 3),
                                   f.maybe(num(*r, "tau")),
                                   f.maybe(num(*r, "speedup"))};
      f.interval_cells(*r, &row);
      for (const auto& x :
           {f.maybe(num(*r, "predicted_speedup_thm38")), f.pct(num(*r, "error_thm38")),
            f.maybe(num(*r, "predicted_speedup_refined")), f.pct(num(*r, "error_refined"))})
        row.push_back(x);
      ts.rows.push_back(row);
    }
    out.push_back(ts);
  }

  if (!cost.empty()) {
    Table tc{"cost",
             "Cost terms: c = draft time per token / T(1); T(k)/T(1) of the target",
             {"draft", "c", "bytes ratio", "T(1) ms"},
             {},
             {},
             {}};
    size_t kmax = 0;
    for (const auto* r : cost) kmax = std::max(kmax, (*r)["target_tk_ratio"].size());
    for (size_t k = 2; k <= kmax; k++) tc.headers.push_back("T(" + std::to_string(k) + ")/T(1)");
    for (const auto* r : cost) {
      std::vector<std::string> row{str(*r, "drafter"), f.maybe(num(*r, "c_measured"), 3),
                                   f.maybe(num(*r, "weight_bytes_ratio"), 3),
                                   f.maybe(1e3 * num(*r, "target_t1_s"), 1)};
      const auto& ratios = (*r)["target_tk_ratio"];
      for (size_t k = 1; k < kmax; k++)
        row.push_back(k < ratios.size() ? f.fmt(ratios[k].get<double>()) : f.maybe(NAN));
      tc.rows.push_back(row);
    }
    out.push_back(tc);
  }
  return out;
}

}  // namespace

std::vector<Table> result_tables_build(const std::vector<nlohmann::json>& rows, bool machine) {
  const CellFormat f{machine};
  // Rows of different configs (config_hash) measure different things under the same names
  // (other prompts, lengths, models): never pooled, one set of tables per config, in the order
  // the configs first appear.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const nlohmann::json*>> by_config;
  for (const auto& r : rows) {
    const std::string h = str(r, "config_hash");
    if (!by_config.count(h)) order.push_back(h);
    by_config[h].push_back(&r);
  }
  std::vector<Table> out;
  for (const auto& h : order) {
    for (Table t : tables_of_config(by_config[h], f)) {
      t.config_hash = h;
      t.experiment = str(*by_config[h].front(), "experiment");
      if (order.size() > 1)
        t.title = "config " + (h.empty() ? std::string("(no config_hash)") : h) + " (" +
                  t.experiment + "): " + t.title;
      SPECLAB_ASSERT(table_headers_unique(t));
      out.push_back(std::move(t));
    }
  }
  return out;
}

bool table_headers_unique(const Table& t) {
  return std::set<std::string>(t.headers.begin(), t.headers.end()).size() == t.headers.size();
}

std::string table_render(const Table& t, TableFormat f) {
  std::string s;
  auto join = [](const std::vector<std::string>& v, const std::string& sep) {
    std::string o;
    for (size_t i = 0; i < v.size(); i++) o += (i ? sep : "") + v[i];
    return o;
  };
  switch (f) {
    case TableFormat::kMarkdown: {
      s += "### " + t.title + "\n\n| " + join(t.headers, " | ") + " |\n|";
      for (size_t i = 0; i < t.headers.size(); i++) s += " --- |";
      s += "\n";
      for (const auto& r : t.rows) s += "| " + join(r, " | ") + " |\n";
      s += "\n";
      break;
    }
    case TableFormat::kCsv: {
      // RFC 4180: the header line, then one line per row; nothing else (no title, no blank
      // line), so that a CSV reader (pandas.read_csv) loads it with its defaults.
      auto quote = [](std::vector<std::string> v) {
        for (auto& x : v)
          if (x.find_first_of(",\"\n\r") != std::string::npos) {
            std::string q = "\"";
            for (char c : x) q += c == '"' ? std::string("\"\"") : std::string(1, c);
            x = q + "\"";
          }
        return v;
      };
      s += join(quote(t.headers), ",") + "\n";
      for (const auto& r : t.rows) s += join(quote(r), ",") + "\n";
      break;
    }
    case TableFormat::kJson: {
      s += table_json(t).dump() + "\n";
      break;
    }
    case TableFormat::kLatex: {
      s += "% " + t.title + "\n\\begin{tabular}{" + std::string(t.headers.size(), 'l') +
           "}\n\\hline\n";
      std::vector<std::string> h;
      for (const auto& x : t.headers) h.push_back(latex_escape(x));
      s += join(h, " & ") + " \\\\\n\\hline\n";
      for (const auto& r : t.rows) {
        std::vector<std::string> e;
        for (const auto& x : r) e.push_back(latex_escape(x));
        s += join(e, " & ") + " \\\\\n";
      }
      s += "\\hline\n\\end{tabular}\n\n";
      break;
    }
  }
  return s;
}

nlohmann::json table_json(const Table& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : t.rows) {
    nlohmann::json o = nlohmann::json::object();
    for (size_t i = 0; i < t.headers.size() && i < r.size(); i++) {
      // A cell that is a whole number is written as one; "" (no value) as null.
      const std::string& x = r[i];
      char* end = nullptr;
      const double v = x.empty() ? 0 : std::strtod(x.c_str(), &end);
      if (x.empty())
        o[t.headers[i]] = nullptr;
      else if (end && *end == '\0' && std::isfinite(v))
        o[t.headers[i]] = v;
      else
        o[t.headers[i]] = x;
    }
    rows.push_back(o);
  }
  return {{"name", t.name},
          {"title", t.title},
          {"config_hash", t.config_hash},
          {"experiment", t.experiment},
          {"columns", t.headers},
          {"rows", rows}};
}

std::string result_tables_render(const std::vector<nlohmann::json>& rows, TableFormat format) {
  const bool machine = format == TableFormat::kCsv || format == TableFormat::kJson;
  const std::vector<Table> tables = result_tables_build(rows, machine);
  if (format == TableFormat::kJson) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& t : tables) all.push_back(table_json(t));
    return nlohmann::json{{"tables", all}}.dump(1) + "\n";
  }
  std::string s;
  for (const auto& t : tables) s += table_render(t, format);
  return s;
}

std::string table_file_stem(const Table& t, bool several_configs) {
  return several_configs ? t.name + "-" + (t.config_hash.empty() ? "none" : t.config_hash) : t.name;
}

}  // namespace speclab
