#include "experiments/results/table.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/error.h"

namespace speclab {

namespace {

std::string latex_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '_' || c == '%' || c == '&' || c == '#' || c == '$') o += '\\';
    o += c;
  }
  return o;
}

// A cell of a Markdown table: a '|' would end the cell ("median |err|" split a header in two
// and shifted every column after it), so it is written \|, which renderers show as '|'; a line
// break would end the row, so CR and LF are written as a space.
std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\n' || c == '\r') {
      o += ' ';
      continue;
    }
    if (c == '|') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

std::string table_number(double v, int digits, bool machine) {
  if (std::isnan(v)) return machine ? "" : "-";
  char b[64];
  if (machine)
    std::snprintf(b, sizeof b, "%.10g", v);
  else
    std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

TableFormat table_format_parse(const std::string& name) {
  if (name == "md" || name == "markdown") return TableFormat::kMarkdown;
  if (name == "csv") return TableFormat::kCsv;
  if (name == "latex" || name == "tex") return TableFormat::kLatex;
  if (name == "json") return TableFormat::kJson;
  fail_input("--format: '", name, "' (expected md, csv, latex or json)");
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
      auto cells = [](std::vector<std::string> v) {
        for (auto& x : v) x = markdown_cell(x);
        return v;
      };
      s += "### " + t.title + "\n\n| " + join(cells(t.headers), " | ") + " |\n|";
      for (size_t i = 0; i < t.headers.size(); i++) s += " --- |";
      s += "\n";
      for (const auto& r : t.rows) s += "| " + join(cells(r), " | ") + " |\n";
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

std::string table_file_stem(const Table& t, bool several_configs) {
  return several_configs ? t.name + "-" + (t.config_hash.empty() ? "none" : t.config_hash) : t.name;
}

}  // namespace speclab
