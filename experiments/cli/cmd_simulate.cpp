// speclab simulate: analytic and Monte Carlo predictions (Leviathan et al. 2023, section 3).
//
// Modes (one per call):
//   --table paper-table1                     Table 1, recomputed from Eq. (1) and Theorem 3.11
//   --alpha A [--c C] [--c-hat CH] [--gamma G] [--gamma-max G]
//                                            E[tokens], speedup, operations per gamma; optimal
//                                            gamma; Corollary 3.9; the oracle bound of 3.5
//   --figure 2|3|4 | --curve NAMES --alpha-grid LO:HI:STEP [--c-list ..] [--gamma-list ..]
//                                            data behind Figures 2-4 as CSV (or --format json)
//   --monte-carlo iid|markov ...             simulated vs closed-form numbers
//   --replay TRACE.jsonl (--gamma G | --policy fixed|heuristic|oracle)
//                                            replays a recorded round trace
// Formulas and their limits: core/speedup_theory.h, core/trace_simulator.h.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/speedup_theory.h"
#include "core/trace_simulator.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/number_checks.h"

namespace speclab {

namespace {

using nlohmann::json;

struct SimulateArgs {
  std::string table, curve, alpha_grid, c_list, gamma_list, format = "csv", monte_carlo, markov,
                                                            markov_fit, replay, policy;
  int figure = 0, gamma = 5, gamma_max = 10;
  double alpha = 0.0, c = 0.0, c_hat = 0.0;
  int64_t rounds = 100000;
  uint64_t seed = 1;
  bool json = false;
  // Which options were given.
  bool has_alpha = false, has_gamma = false, has_gamma_max = false, has_c = false;
  std::set<std::string> given;  // every option on the command line (even as '': refused)
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void check_alpha(double a) {
  SPECLAB_INPUT_CHECK(a >= 0.0 && a < 1.0, "--alpha: expected a number in [0, 1), got ", a);
}
void check_c(double c, const char* flag) {
  SPECLAB_INPUT_CHECK(c >= 0.0 && std::isfinite(c), flag, ": expected a number >= 0, got ", c);
}
// The bound of --gamma-list: past it Theorem 3.8's terms are alpha^gamma = 0 to the last bit,
// and a gamma near INT_MAX only makes the optimum's search run for seconds.
constexpr int kMaxGamma = 100000;

void check_gamma(int g, const char* flag) {
  SPECLAB_INPUT_CHECK(g >= 1 && g <= kMaxGamma, flag, ": expected an integer in 1..", kMaxGamma,
                      ", got ", g);
}

// Every item, empty ones too: "0.1," is two items, the second empty (refused by the parser),
// and "" is one empty item, not an empty list that would mean the default.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

double parse_double(const std::string& s, const char* flag, const char* expected) {
  size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    used = 0;
  }
  SPECLAB_INPUT_CHECK(used == s.size() && !s.empty() && std::isfinite(v), flag, ": expected ",
                      expected, ", got '", s, "'");
  return v;
}

std::vector<double> parse_doubles(const std::string& s, const char* flag, const char* expected) {
  std::vector<double> out;
  for (const std::string& item : split(s, ',')) out.push_back(parse_double(item, flag, expected));
  SPECLAB_INPUT_CHECK(!out.empty(), flag, ": expected ", expected, ", got an empty list");
  return out;
}

std::vector<int> parse_gammas(const std::string& s) {
  std::vector<int> out;
  for (double v : parse_doubles(s, "--gamma-list", "a comma list of integers >= 1")) {
    SPECLAB_INPUT_CHECK(v >= 1 && v == std::floor(v) && v <= kMaxGamma,
                        "--gamma-list: expected integers >= 1, got ", v);
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// "LO:HI:STEP" -> LO, LO + STEP, ..., <= HI; 0 <= LO <= HI < 1, STEP > 0.
std::vector<double> parse_alpha_grid(const std::string& s) {
  const char* expected = "LO:HI:STEP with 0 <= LO <= HI < 1 and STEP > 0";
  const std::vector<std::string> parts = split(s, ':');
  SPECLAB_INPUT_CHECK(parts.size() == 3, "--alpha-grid: expected ", expected, ", got '", s, "'");
  const double lo = parse_double(parts[0], "--alpha-grid", expected);
  const double hi = parse_double(parts[1], "--alpha-grid", expected);
  const double step = parse_double(parts[2], "--alpha-grid", expected);
  SPECLAB_INPUT_CHECK(lo >= 0 && lo <= hi && hi < 1 && step > 0, "--alpha-grid: expected ",
                      expected, ", got '", s, "'");
  SPECLAB_INPUT_CHECK((hi - lo) / step < 1e6, "--alpha-grid: '", s, "' has ", (hi - lo) / step + 1,
                      " points, expected at most 1e6 (a larger STEP)");
  std::vector<double> grid;
  const int n = static_cast<int>(std::floor((hi - lo) / step + 1e-9)) + 1;
  for (int i = 0; i < n; ++i) grid.push_back(std::round((lo + i * step) * 1e12) / 1e12);
  return grid;
}

MarkovAcceptance parse_markov(const std::string& s) {
  const char* expected = "a_easy,a_hard,p_easy_to_hard,p_hard_to_easy (four numbers in [0, 1])";
  const std::vector<double> v = parse_doubles(s, "--markov", expected);
  SPECLAB_INPUT_CHECK(v.size() == 4, "--markov: expected ", expected, ", got '", s, "'");
  MarkovAcceptance m{v[0], v[1], v[2], v[3]};
  try {
    markov_validate(m);
  } catch (const InputError& e) {
    fail_input("--markov: ", e.what());
  }
  return m;
}

void print_json(const json& j) { std::printf("%s\n", j.dump(2).c_str()); }

// ---------------------------------------------------------------------------------------------

// Table 1: alpha, gamma, OPERATIONS (Theorem 3.11), SPEED (Eq. (1) = Theorem 3.8 at c = 0),
// c = c_hat = 0, printed as the paper prints them ("1.53X").
void run_table(const SimulateArgs& a) {
  SPECLAB_INPUT_CHECK(a.table == "paper-table1", "--table: unknown table '", a.table,
                      "'; expected paper-table1");
  const struct {
    double alpha;
    int gamma;
  } rows[] = {{0.6, 2}, {0.7, 3}, {0.8, 2}, {0.8, 5}, {0.9, 2}, {0.9, 10}};
  json out = json::array();
  if (!a.json) {
    std::printf(
        "# Leviathan et al. 2023, Table 1: total arithmetic operations and inference speed "
        "vs the baseline, c = c_hat = 0\n");
    std::printf("alpha\tgamma\tOPERATIONS\tSPEED\n");
  }
  for (const auto& r : rows) {
    const double ops = theory_operations_factor(r.alpha, 0.0, r.gamma);
    const double speed = theory_walltime_speedup(r.alpha, 0.0, r.gamma);
    if (a.json)
      out.push_back(
          {{"alpha", r.alpha}, {"gamma", r.gamma}, {"operations", ops}, {"speed", speed}});
    else
      std::printf("%s\t%d\t%sX\t%sX\n", fmt("%.1f", r.alpha).c_str(), r.gamma,
                  fmt("%.2f", ops).c_str(), fmt("%.2f", speed).c_str());
  }
  if (a.json) print_json(out);
}

void run_analytic(const SimulateArgs& a) {
  SPECLAB_INPUT_CHECK(a.has_alpha,
                      "simulate: give --alpha A (or --table, --figure, --curve, "
                      "--monte-carlo, --replay)");
  std::vector<int> gammas;
  if (a.has_gamma)
    gammas.push_back(a.gamma);
  else
    for (int g = 1; g <= a.gamma_max; ++g) gammas.push_back(g);
  const int search_max = std::max(a.gamma_max, a.has_gamma ? a.gamma : 1);
  const OptimalGamma best = theory_optimal_gamma(a.alpha, a.c, search_max);
  json rows = json::array();
  if (!a.json) {
    std::printf("alpha %g  c %g  c_hat %g\n", a.alpha, a.c, a.c_hat);
    std::printf("%-6s %-10s %-10s %s\n", "gamma", "E[tokens]", "speedup", "operations");
  }
  for (int g : gammas) {
    const double E = theory_expected_tokens(a.alpha, g);
    const double s = theory_walltime_speedup(a.alpha, a.c, g);
    const double ops = theory_operations_factor(a.alpha, a.c_hat, g);
    if (a.json)
      rows.push_back({{"gamma", g}, {"expected_tokens", E}, {"speedup", s}, {"operations", ops}});
    else
      std::printf("%-6d %-10.4f %-10.4f %.4f\n", g, E, s, ops);
  }
  const bool improves = theory_gamma_improves(a.alpha, a.c);
  const double bound = theory_gamma1_speedup_bound(a.alpha, a.c);
  const double oracle_tokens = theory_oracle_expected_tokens(a.alpha);
  const double oracle_speedup = theory_oracle_speedup(a.alpha, a.c);
  if (a.json) {
    print_json({{"alpha", a.alpha},
                {"c", a.c},
                {"c_hat", a.c_hat},
                {"rows", rows},
                {"optimal_gamma",
                 {{"gamma", best.gamma},
                  {"speedup", best.speedup},
                  {"gamma_max", search_max},
                  {"capped", best.capped}}},
                {"corollary_3_9", {{"improves", improves}, {"gamma1_speedup", bound}}},
                {"oracle", {{"expected_tokens", oracle_tokens}, {"speedup", oracle_speedup}}}});
    return;
  }
  std::printf("optimal gamma (Theorem 3.8, gamma <= %d): %d, speedup %.4f%s\n", search_max,
              best.gamma, best.speedup, best.capped ? " (capped: still rising at gamma-max)" : "");
  std::printf("Corollary 3.9: alpha > c: %s; gamma = 1 gives (1 + alpha) / (1 + c) = %.4f\n",
              improves ? "yes" : "no", bound);
  std::printf(
      "oracle gamma (section 3.5): E[tokens] = 1 / (1 - alpha) = %.4f, speedup "
      "1 / (1 - alpha + c alpha) = %.4f\n",
      oracle_tokens, oracle_speedup);
}

// Figures 2-4 and free curves: long-format rows, one per (alpha, c, gamma) or (alpha, c).
void run_curve(SimulateArgs a) {
  std::vector<std::string> metrics;
  std::vector<double> cs = {a.c};
  std::vector<int> gammas;
  std::string grid = a.alpha_grid;
  if (a.figure != 0) {
    SPECLAB_INPUT_CHECK(a.figure >= 2 && a.figure <= 4, "--figure: expected 2, 3 or 4, got ",
                        a.figure);
    SPECLAB_INPUT_CHECK(a.curve.empty(), "--figure: give either --figure or --curve, not both");
    if (grid.empty()) grid = a.figure == 3 ? "0.01:0.99:0.01" : "0:0.99:0.01";
    if (a.figure == 2) metrics = {"expected_tokens"};
    if (a.figure == 3) metrics = {"optimal_gamma"};
    if (a.figure == 4) metrics = {"speedup", "operations"};
    // The paper's plots do not print their parameter sets; these defaults are ours.
    if (a.figure == 3 && !a.given.count("--c-list") && !a.has_c) {
      a.c_list = "0.01,0.02,0.05,0.1,0.2";
      a.given.insert("--c-list");
    }
    if (a.figure != 3 && !a.given.count("--gamma-list") && !a.has_gamma_max) {
      a.gamma_list = "1,2,3,5,7,10";
      a.given.insert("--gamma-list");
    }
    if (a.figure == 3 && !a.has_gamma_max) a.gamma_max = 100;
  } else {
    SPECLAB_INPUT_CHECK(!grid.empty(), "--curve: needs --alpha-grid LO:HI:STEP");
    for (const std::string& m : split(a.curve, ',')) {
      const std::string name = m == "tokens" || m == "expected-tokens" ? "expected_tokens"
                               : m == "optimal-gamma"                  ? "optimal_gamma"
                                                                       : m;
      SPECLAB_INPUT_CHECK(name == "expected_tokens" || name == "speedup" || name == "operations" ||
                              name == "optimal_gamma",
                          "--curve: expected expected-tokens, speedup, operations or "
                          "optimal-gamma (comma list), got '",
                          m, "'");
      metrics.push_back(name);
    }
    SPECLAB_INPUT_CHECK(metrics.size() == 1 || metrics[0] != "optimal_gamma",
                        "--curve: optimal-gamma cannot be combined with other curves");
  }
  SPECLAB_INPUT_CHECK(a.format == "csv" || a.format == "json",
                      "--format: expected csv or json, got '", a.format, "'");
  const std::vector<double> alphas = parse_alpha_grid(grid);
  if (a.given.count("--c-list"))
    cs = parse_doubles(a.c_list, "--c-list", "a comma list of numbers >= 0");
  for (double c : cs) check_c(c, "--c-list");
  if (a.given.count("--gamma-list"))
    gammas = parse_gammas(a.gamma_list);
  else
    for (int g = 1; g <= a.gamma_max; ++g) gammas.push_back(g);

  const bool optimal = metrics[0] == "optimal_gamma";
  json out = json::array();
  const bool csv = a.format == "csv";
  if (csv) {
    std::printf(optimal ? "alpha,c,optimal_gamma,speedup,capped,oracle_speedup\n"
                        : "alpha,c,c_hat,gamma");
    if (!optimal) {
      for (const std::string& m : metrics) std::printf(",%s", m.c_str());
      std::printf("\n");
    }
  }
  for (double c : cs) {
    for (double alpha : alphas) {
      if (optimal) {
        const OptimalGamma o = theory_optimal_gamma(alpha, c, a.gamma_max);
        const double oracle = theory_oracle_speedup(alpha, c);
        if (csv)
          std::printf("%.10g,%.10g,%d,%.10g,%d,%.10g\n", alpha, c, o.gamma, o.speedup,
                      o.capped ? 1 : 0, oracle);
        else
          out.push_back({{"alpha", alpha},
                         {"c", c},
                         {"optimal_gamma", o.gamma},
                         {"speedup", o.speedup},
                         {"capped", o.capped},
                         {"oracle_speedup", oracle}});
        continue;
      }
      for (int g : gammas) {
        json row = {{"alpha", alpha}, {"c", c}, {"c_hat", a.c_hat}, {"gamma", g}};
        if (csv) std::printf("%.10g,%.10g,%.10g,%d", alpha, c, a.c_hat, g);
        for (const std::string& m : metrics) {
          const double v = m == "expected_tokens" ? theory_expected_tokens(alpha, g)
                           : m == "speedup"       ? theory_walltime_speedup(alpha, c, g)
                                                  : theory_operations_factor(alpha, a.c_hat, g);
          if (csv)
            std::printf(",%.10g", v);
          else
            row[m] = v;
        }
        if (csv)
          std::printf("\n");
        else
          out.push_back(row);
      }
    }
  }
  if (!csv) print_json(out);
}

PolicySpec policy_from_args(const SimulateArgs& a) {
  PolicySpec p;
  p.gamma = a.gamma;
  if (!a.policy.empty()) {
    try {
      p.kind = policy_kind_parse(a.policy);
    } catch (const InputError& e) {
      fail_input("--policy: expected fixed, heuristic or oracle, got '", a.policy, "'");
    }
  }
  return p;
}

json result_json(const SimResult& r) {
  return {{"rounds", r.n_rounds},
          {"tokens", r.tokens},
          {"drafted", r.drafted},
          {"accepted", r.accepted},
          {"tokens_per_round", r.tokens_per_round},
          {"tokens_per_round_se", r.tokens_per_round_se},
          {"speedup", r.speedup},
          {"speedup_se", r.speedup_se},
          {"mean_gamma", r.mean_gamma},
          {"acceptance", r.acceptance},
          {"imputed_rounds", r.imputed_rounds}};
}

std::string policy_label(const PolicySpec& p) {
  if (p.kind == PolicyKind::kFixed) return str_cat("fixed gamma ", p.gamma);
  if (p.kind == PolicyKind::kHeuristic) return str_cat("heuristic from gamma ", p.gamma);
  return "oracle";
}

void run_monte_carlo(const SimulateArgs& a) {
  SPECLAB_INPUT_CHECK(a.monte_carlo == "iid" || a.monte_carlo == "markov",
                      "--monte-carlo: expected iid or markov, got '", a.monte_carlo, "'");
  SPECLAB_INPUT_CHECK(a.rounds >= 1 && a.rounds <= 100'000'000,
                      "--rounds: expected an integer in [1, 1e8], got ", a.rounds);
  const PolicySpec policy = policy_from_args(a);
  SimResult r;
  double alpha = a.alpha;
  double closed_tokens = NAN, closed_speedup = NAN;
  std::string closed_name;
  json model;
  if (a.monte_carlo == "iid") {
    SPECLAB_INPUT_CHECK(a.has_alpha, "--monte-carlo iid: needs --alpha A");
    r = simulate_iid(a.alpha, a.c, policy, a.rounds, a.seed);
    model = {{"kind", "iid"}, {"alpha", a.alpha}};
    if (policy.kind == PolicyKind::kFixed) {
      closed_tokens = theory_expected_tokens(alpha, policy.gamma);
      closed_speedup = theory_walltime_speedup(alpha, a.c, policy.gamma);
      closed_name = "Eq. (1) / Theorem 3.8";
    }
  } else {
    SPECLAB_INPUT_CHECK(a.markov.empty() != a.markov_fit.empty(),
                        "--monte-carlo markov: needs exactly one of --markov "
                        "a_easy,a_hard,p_easy_to_hard,p_hard_to_easy or --markov-fit TRACE.jsonl");
    MarkovAcceptance m;
    if (!a.markov.empty()) {
      m = parse_markov(a.markov);
    } else {
      const MarkovFit fit = markov_fit(trace_outcomes(trace_read_file(a.markov_fit)));
      m = fit.model;
      model["fit"] = {{"trace", a.markov_fit},
                      {"log_likelihood", fit.log_likelihood},
                      {"iterations", fit.iterations},
                      {"converged", fit.converged}};
    }
    alpha = markov_stationary_alpha(m);
    r = simulate_markov(m, a.c, policy, a.rounds, a.seed);
    model["kind"] = "markov";
    model["a_easy"] = m.a_easy;
    model["a_hard"] = m.a_hard;
    model["p_easy_to_hard"] = m.p_easy_to_hard;
    model["p_hard_to_easy"] = m.p_hard_to_easy;
    model["stationary_alpha"] = alpha;
    if (policy.kind == PolicyKind::kFixed) {
      closed_tokens = markov_expected_tokens(m, policy.gamma);
      closed_speedup = closed_tokens / (policy.gamma * a.c + 1.0);
      closed_name = "exact markov";
      model["iid_expected_tokens"] = theory_expected_tokens(alpha, policy.gamma);
      model["iid_speedup"] = theory_walltime_speedup(alpha, a.c, policy.gamma);
    }
  }
  if (policy.kind == PolicyKind::kOracle && alpha < 1.0) {
    // Section 3.5's closed form holds for i.i.d. acceptance; for markov it is the i.i.d. value.
    closed_tokens = theory_oracle_expected_tokens(alpha);
    closed_speedup = theory_oracle_speedup(alpha, a.c);
    closed_name = a.monte_carlo == "iid" ? "section 3.5" : "section 3.5 at stationary alpha (iid)";
  }
  if (a.json) {
    json j = {{"model", model},        {"c", a.c},       {"policy", policy_kind_name(policy.kind)},
              {"gamma", policy.gamma}, {"seed", a.seed}, {"simulated", result_json(r)}};
    if (!closed_name.empty())
      j["closed_form"] = {
          {"name", closed_name}, {"expected_tokens", closed_tokens}, {"speedup", closed_speedup}};
    print_json(j);
    return;
  }
  std::printf("monte carlo: %s, alpha %.6g, c %g, policy %s, %lld rounds, seed %llu\n",
              a.monte_carlo.c_str(), alpha, a.c, policy_label(policy).c_str(),
              static_cast<long long>(r.n_rounds), static_cast<unsigned long long>(a.seed));
  if (a.monte_carlo == "markov")
    std::printf("markov: a_easy %.6g a_hard %.6g p_easy_to_hard %.6g p_hard_to_easy %.6g\n",
                model["a_easy"].get<double>(), model["a_hard"].get<double>(),
                model["p_easy_to_hard"].get<double>(), model["p_hard_to_easy"].get<double>());
  std::printf("%-16s %-22s %s\n", "", "simulated (+- 1 SE)",
              closed_name.empty() ? "closed form: none for this policy" : closed_name.c_str());
  auto line = [](const char* name, double v, double se, double closed) {
    std::printf("%-16s %-22s %s\n", name, (fmt("%.4f", v) + " +- " + fmt("%.4f", se)).c_str(),
                std::isnan(closed) ? "-" : fmt("%.4f", closed).c_str());
  };
  line("tokens/round", r.tokens_per_round, r.tokens_per_round_se, closed_tokens);
  line("speedup", r.speedup, r.speedup_se, closed_speedup);
  std::printf("%-16s %-22.4f %.4f\n", "acceptance", r.acceptance, alpha);
  std::printf("%-16s %.4f\n", "mean gamma", r.mean_gamma);
  if (model.contains("iid_expected_tokens"))
    std::printf("i.i.d. at the stationary alpha: tokens/round %.4f, speedup %.4f\n",
                model["iid_expected_tokens"].get<double>(), model["iid_speedup"].get<double>());
}

void run_replay(const SimulateArgs& a) {
  SPECLAB_INPUT_CHECK(a.has_gamma || !a.policy.empty(),
                      "--replay: needs --gamma G or --policy fixed|heuristic|oracle");
  const PolicySpec policy = policy_from_args(a);
  const std::vector<RoundTrace> trace = trace_read_file(a.replay);
  // The recorded run itself: tokens n + 1 at cost n_draft c + 1 per round.
  double rec_tokens = 0, rec_cost = 0, rec_gamma = 0;
  for (const RoundTrace& r : trace) {
    rec_tokens += r.n_accepted + 1;
    rec_cost += r.n_draft * a.c + 1.0;
    rec_gamma += r.n_draft;
  }
  const double n = static_cast<double>(trace.size());
  const double alpha_mle = trace_alpha_mle(trace), alpha_beta = trace_alpha_beta(trace);
  const SimResult r = trace_replay(trace, a.c, policy, a.seed);
  if (a.json) {
    json rec = {{"rounds", trace.size()},
                {"mean_gamma", rec_gamma / n},
                {"tokens_per_round", rec_tokens / n},
                {"speedup", rec_tokens / rec_cost},
                {"alpha_mle", alpha_mle}};
    if (alpha_beta >= 0) rec["alpha_beta"] = alpha_beta;
    print_json({{"trace", a.replay},
                {"c", a.c},
                {"recorded", rec},
                {"policy", policy_kind_name(policy.kind)},
                {"gamma", policy.gamma},
                {"seed", a.seed},
                {"replay", result_json(r)}});
    return;
  }
  std::printf("trace %s: %zu rounds, mean gamma %.4f, tokens/round %.4f, speedup at c %g: %.4f\n",
              a.replay.c_str(), trace.size(), rec_gamma / n, rec_tokens / n, a.c,
              rec_tokens / rec_cost);
  std::printf("alpha (censored geometric MLE) %.4f", alpha_mle);
  if (alpha_beta >= 0) std::printf(", alpha (mean beta, Corollary 3.6) %.4f", alpha_beta);
  std::printf("\n");
  std::printf(
      "replay, policy %s: tokens/round %.4f +- %.4f, speedup %.4f +- %.4f, mean gamma "
      "%.4f, imputed rounds %lld of %lld\n",
      policy_label(policy).c_str(), r.tokens_per_round, r.tokens_per_round_se, r.speedup,
      r.speedup_se, r.mean_gamma, static_cast<long long>(r.imputed_rounds),
      static_cast<long long>(r.n_rounds));
}

void run(SimulateArgs& a) {
  // Shared checks, one line each, naming the flag.
  if (a.has_alpha) check_alpha(a.alpha);
  check_c(a.c, "--c");
  check_c(a.c_hat, "--c-hat");
  check_gamma(a.gamma, "--gamma");
  check_gamma(a.gamma_max, "--gamma-max");
  SPECLAB_INPUT_CHECK(a.gamma_max <= 100000, "--gamma-max: expected an integer <= 100000, got ",
                      a.gamma_max);
  const int modes = !a.table.empty() + (a.figure != 0 || !a.curve.empty()) +
                    !a.monte_carlo.empty() + !a.replay.empty();
  SPECLAB_INPUT_CHECK(modes <= 1,
                      "simulate: give one of --table, --figure/--curve, --monte-carlo, --replay");
  // An option of another mode would be ignored without a word (even a bad value of it).
  const bool curves = a.figure != 0 || !a.curve.empty(), monte = !a.monte_carlo.empty();
  const std::string mode = !a.table.empty()    ? "--table"
                           : curves            ? "--figure/--curve"
                           : monte             ? "--monte-carlo"
                           : !a.replay.empty() ? "--replay"
                                               : "--alpha (the analytic table)";
  auto only_with = [&](const char* option, bool applies, const char* where) {
    SPECLAB_INPUT_CHECK(!a.given.count(option) || applies, option, ": only for ", where, "; with ",
                        mode, " it would be ignored");
  };
  for (const char* o : {"--rounds", "--seed", "--markov", "--markov-fit"})
    only_with(o, monte, "--monte-carlo");
  only_with("--policy", monte || !a.replay.empty(), "--monte-carlo and --replay");
  for (const char* o : {"--alpha-grid", "--c-list", "--gamma-list", "--format"})
    only_with(o, curves, "--figure and --curve");
  only_with("--alpha", a.table.empty() && !curves && a.replay.empty(),
            "the analytic table and --monte-carlo (curves take --alpha-grid)");

  if (!a.table.empty()) return run_table(a);
  if (a.figure != 0 || !a.curve.empty()) return run_curve(a);
  if (!a.monte_carlo.empty()) return run_monte_carlo(a);
  if (!a.replay.empty()) return run_replay(a);
  run_analytic(a);
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand(
      "simulate", "Analytic and Monte Carlo predictions (Leviathan et al. 2023, section 3)");
  cmd->add_option("--table", args->table, "Print a table from the paper: paper-table1");
  auto* alpha = cmd->add_option("--alpha", args->alpha, "Expected acceptance rate, in [0, 1)");
  auto* c = cmd->add_option("--c", args->c, "Cost coefficient: draft step / target step time");
  cmd->add_option("--c-hat", args->c_hat, "Operations per token, draft / target (Theorem 3.11)");
  auto* gamma = cmd->add_option("--gamma", args->gamma,
                                "Draft tokens per round (heuristic: the initial value); default 5");
  auto* gamma_max =
      cmd->add_option("--gamma-max", args->gamma_max, "Largest gamma to tabulate / search");
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->add_option("--figure", args->figure, "Data behind Figure 2, 3 or 4 of the paper");
  cmd->add_option("--curve", args->curve,
                  "expected-tokens, speedup, operations (comma list) or optimal-gamma");
  cmd->add_option("--alpha-grid", args->alpha_grid, "LO:HI:STEP alpha values for curves");
  cmd->add_option("--c-list", args->c_list, "Comma list of c values for curves");
  cmd->add_option("--gamma-list", args->gamma_list, "Comma list of gamma values for curves");
  cmd->add_option("--format", args->format, "Curve output: csv (default) or json");
  cmd->add_option("--monte-carlo", args->monte_carlo, "Simulate rounds: iid or markov");
  cmd->add_option("--markov", args->markov, "a_easy,a_hard,p_easy_to_hard,p_hard_to_easy");
  cmd->add_option("--markov-fit", args->markov_fit,
                  "Fit the markov model to a trace's outcomes (Baum-Welch)");
  cmd->add_option("--rounds", args->rounds, "Monte Carlo rounds (default 100000)");
  cmd->add_option("--seed", args->seed, "Random seed")
      ->check(unsigned_up_to((1ull << 53) - 1));  // written to JSON: exact up to 2^53
  cmd->add_option("--replay", args->replay, "Replay a recorded trace (JSON lines)");
  cmd->add_option("--policy", args->policy, "Gamma policy: fixed, heuristic or oracle");
  cmd->callback([args, cmd, alpha, c, gamma, gamma_max] {
    for (const CLI::Option* o : cmd->get_options({}))
      if (o->count() > 0) args->given.insert(o->get_name());
    args->has_alpha = alpha->count() > 0;
    args->has_c = c->count() > 0;
    args->has_gamma = gamma->count() > 0;
    args->has_gamma_max = gamma_max->count() > 0;
    run(*args);
  });
}

}  // namespace speclab
