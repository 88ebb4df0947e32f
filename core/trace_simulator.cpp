#include "core/trace_simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/gamma_policy.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "core/rng.h"

namespace speclab {

namespace {

using Mat2 = std::array<std::array<double, 2>, 2>;

Mat2 mat_mul(const Mat2& x, const Mat2& y) {
  Mat2 z{};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) z[i][j] = x[i][0] * y[0][j] + x[i][1] * y[1][j];
  return z;
}

Mat2 mat_add(const Mat2& x, const Mat2& y) {
  Mat2 z{};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) z[i][j] = x[i][j] + y[i][j];
  return z;
}

// Rows: from easy (0) / hard (1).
Mat2 markov_transition(const MarkovAcceptance& m) {
  return Mat2{
      {{1.0 - m.p_easy_to_hard, m.p_easy_to_hard}, {m.p_hard_to_easy, 1.0 - m.p_hard_to_easy}}};
}

// Run lengths above this are treated as a runaway (alpha = 1 with an oracle policy).
constexpr int64_t kMaxRunLength = 10'000'000;

// Who decides whether the next examined draft is accepted.
class AcceptSource {
 public:
  virtual ~AcceptSource() = default;
  virtual bool next() = 0;
};

class IidSource : public AcceptSource {
 public:
  IidSource(double alpha, uint64_t seed) : alpha_(alpha), key_{seed, 0, 0, kRngTest, 0} {}
  bool next() override { return rng_uniform(rng_key_at(key_, index_++, kRngTest, 0)) < alpha_; }

 private:
  double alpha_;
  RngKey key_;
  uint64_t index_ = 0;
};

class MarkovSource : public AcceptSource {
 public:
  MarkovSource(const MarkovAcceptance& m, uint64_t seed) : m_(m), key_{seed, 0, 0, kRngTest, 0} {}
  bool next() override {
    // index 1: the state of this token (stationary start, then one chain step per token);
    // index 0: the accept test.
    const double u_state = rng_uniform(rng_key_at(key_, index_, kRngTest, 1));
    if (index_ == 0)
      easy_ = u_state < markov_stationary_easy(m_);
    else
      easy_ = easy_ ? u_state >= m_.p_easy_to_hard : u_state < m_.p_hard_to_easy;
    const double a = easy_ ? m_.a_easy : m_.a_hard;
    return rng_uniform(rng_key_at(key_, index_++, kRngTest, 0)) < a;
  }

 private:
  MarkovAcceptance m_;
  RngKey key_;
  uint64_t index_ = 0;
  bool easy_ = true;
};

// Sums over rounds plus batch sums for standard errors.
class RoundAccumulator {
 public:
  RoundAccumulator(int64_t n_rounds, double c)
      : n_rounds_(n_rounds),
        c_(c),
        n_batches_(std::max<int64_t>(1, std::min<int64_t>(50, n_rounds))) {
    batch_tokens_.assign(n_batches_, 0.0);
    batch_cost_.assign(n_batches_, 0.0);
    batch_rounds_.assign(n_batches_, 0.0);
  }

  // One round: gamma drafted, n accepted, examined drafts (n, +1 if one was rejected).
  void add(int64_t gamma, int64_t n, int64_t examined) {
    const int64_t b = r_.n_rounds * n_batches_ / n_rounds_;
    const double cost = static_cast<double>(gamma) * c_ + 1.0;
    r_.n_rounds += 1;
    r_.tokens += n + 1;
    r_.drafted += gamma;
    r_.accepted += n;
    r_.cost += cost;
    examined_ += examined;
    batch_tokens_[b] += static_cast<double>(n + 1);
    batch_cost_[b] += cost;
    batch_rounds_[b] += 1.0;
  }

  SimResult finish(int64_t imputed) {
    SimResult out = r_;
    out.imputed_rounds = imputed;
    const double n = static_cast<double>(r_.n_rounds);
    out.tokens_per_round = r_.tokens / n;
    out.speedup = r_.tokens / r_.cost;
    out.mean_gamma = r_.drafted / n;
    out.acceptance = examined_ > 0 ? static_cast<double>(r_.accepted) / examined_ : 0.0;
    out.tokens_per_round_se = ratio_se(batch_tokens_, batch_rounds_, out.tokens_per_round);
    out.speedup_se = ratio_se(batch_tokens_, batch_cost_, out.speedup);
    return out;
  }

 private:
  // Delta method for R = sum x / sum y over batches: var(R) ~ var(x_b - R y_b) / (B ybar^2).
  static double ratio_se(const std::vector<double>& x, const std::vector<double>& y, double r) {
    const size_t nb = x.size();
    if (nb < 2) return 0.0;
    double ybar = 0.0;
    for (double v : y) ybar += v;
    ybar /= nb;
    double ss = 0.0;
    for (size_t b = 0; b < nb; ++b) ss += (x[b] - r * y[b]) * (x[b] - r * y[b]);
    const double var_z = ss / (nb - 1);
    return std::sqrt(var_z / nb) / ybar;
  }

  int64_t n_rounds_;
  double c_;
  int64_t n_batches_;
  SimResult r_;
  int64_t examined_ = 0;
  std::vector<double> batch_tokens_, batch_cost_, batch_rounds_;
};

std::unique_ptr<GammaPolicy> make_policy(const PolicySpec& p) {
  if (p.kind == PolicyKind::kOracle) return nullptr;  // not a policy: the best gamma per round
  return gamma_policy_create(policy_kind_name(p.kind), p.gamma);
}

void check_sim_args(double c, const PolicySpec& policy, int64_t n_rounds) {
  SPECLAB_INPUT_CHECK(c >= 0.0 && std::isfinite(c), "c must be a finite number >= 0, got ", c);
  SPECLAB_INPUT_CHECK(policy.kind == PolicyKind::kOracle || policy.gamma >= 1,
                      "gamma must be >= 1, got ", policy.gamma);
  SPECLAB_INPUT_CHECK(n_rounds >= 1, "rounds must be >= 1, got ", n_rounds);
}

SimResult simulate_rounds(AcceptSource& src, double c, const PolicySpec& policy, int64_t n_rounds) {
  check_sim_args(c, policy, n_rounds);
  std::unique_ptr<GammaPolicy> pol = make_policy(policy);
  RoundAccumulator acc(n_rounds, c);
  for (int64_t r = 0; r < n_rounds; ++r) {
    if (!pol) {
      // Oracle (section 3.5): draft exactly the run length L that will be accepted.
      int64_t L = 0;
      while (src.next()) {
        SPECLAB_INPUT_CHECK(++L < kMaxRunLength, "oracle policy: run length exceeds ",
                            kMaxRunLength, " (acceptance 1?)");
      }
      acc.add(L, L, L + 1);
      continue;
    }
    const int g = pol->next_gamma();
    int n = 0;
    bool rejected = false;
    while (n < g) {
      if (!src.next()) {
        rejected = true;
        break;
      }
      ++n;
    }
    acc.add(g, n, n + (rejected ? 1 : 0));
    pol->observe(g, n, {});
  }
  return acc.finish(0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void markov_validate(const MarkovAcceptance& m) {
  const double v[4] = {m.a_easy, m.a_hard, m.p_easy_to_hard, m.p_hard_to_easy};
  const char* names[4] = {"a_easy", "a_hard", "p_easy_to_hard", "p_hard_to_easy"};
  for (int i = 0; i < 4; ++i)
    SPECLAB_INPUT_CHECK(v[i] >= 0.0 && v[i] <= 1.0, "markov model: ", names[i],
                        " must lie in [0, 1], got ", v[i]);
  SPECLAB_INPUT_CHECK(m.p_easy_to_hard + m.p_hard_to_easy > 0.0,
                      "markov model: p_easy_to_hard + p_hard_to_easy must be > 0");
}

double markov_stationary_easy(const MarkovAcceptance& m) {
  return m.p_hard_to_easy / (m.p_easy_to_hard + m.p_hard_to_easy);
}

double markov_stationary_alpha(const MarkovAcceptance& m) {
  markov_validate(m);
  const double pi = markov_stationary_easy(m);
  return pi * m.a_easy + (1.0 - pi) * m.a_hard;
}

double markov_expected_tokens(const MarkovAcceptance& m, int gamma) {
  markov_validate(m);
  SPECLAB_INPUT_CHECK(gamma >= 1, "gamma must be >= 1, got ", gamma);
  const Mat2 P = markov_transition(m);
  const double a[2] = {m.a_easy, m.a_hard};
  Mat2 A{}, R{};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      A[i][j] = a[i] * P[i][j];
      R[i][j] = (1.0 - a[i]) * P[i][j];
    }
  Mat2 K{};                           // round-start kernel
  std::array<double, 2> r{};          // expected tokens of a round from each start state
  Mat2 Ak{{{1.0, 0.0}, {0.0, 1.0}}};  // A^k
  for (int k = 0; k < gamma; ++k) {
    const Mat2 AkR = mat_mul(Ak, R);
    K = mat_add(K, AkR);
    for (int i = 0; i < 2; ++i) r[i] += (k + 1) * (AkR[i][0] + AkR[i][1]);
    Ak = mat_mul(Ak, A);
  }
  K = mat_add(K, Ak);
  for (int i = 0; i < 2; ++i) r[i] += (gamma + 1) * (Ak[i][0] + Ak[i][1]);
  // Stationary vector of the 2x2 stochastic matrix K.
  const double den = K[0][1] + K[1][0];
  const double pi_easy = den > 0.0 ? K[1][0] / den : markov_stationary_easy(m);
  return pi_easy * r[0] + (1.0 - pi_easy) * r[1];
}

MarkovFit markov_fit(const std::vector<uint8_t>& x, int max_iter, double tol) {
  const size_t n = x.size();
  SPECLAB_INPUT_CHECK(n >= 2, "markov fit: need at least 2 outcomes, got ", n);
  // Initialization from the fully observed chain (state = outcome): transition counts.
  double n1 = 0, n0 = 0, n10 = 0, n01 = 0, ones = 0;
  for (size_t t = 0; t < n; ++t) {
    ones += x[t];
    if (t + 1 == n) break;
    if (x[t]) {
      n1 += 1;
      n10 += !x[t + 1];
    } else {
      n0 += 1;
      n01 += x[t + 1];
    }
  }
  const double mean = ones / n;
  double a[2] = {0.5 + 0.5 * mean, 0.5 * mean};  // shrunk from (1, 0)
  double P[2][2];
  P[0][1] = 0.5 * (n1 > 0 ? n10 / n1 : 0.5);
  P[1][0] = 0.5 * (n0 > 0 ? n01 / n0 : 0.5);
  P[0][1] = std::clamp(P[0][1], 1e-3, 0.5);
  P[1][0] = std::clamp(P[1][0], 1e-3, 0.5);
  P[0][0] = 1 - P[0][1];
  P[1][1] = 1 - P[1][0];
  double pi0[2] = {0.5, 0.5};

  std::vector<std::array<double, 2>> fw(n), bw(n);  // scaled forward / backward, [t][state]
  std::vector<double> scale(n);
  MarkovFit fit;
  double prev_ll = -std::numeric_limits<double>::infinity();
  auto emit = [&](int i, uint8_t obs) { return obs ? a[i] : 1.0 - a[i]; };
  for (int iter = 1; iter <= max_iter; ++iter) {
    // E-step: forward.
    double ll = 0.0;
    for (size_t t = 0; t < n; ++t) {
      double s = 0.0;
      for (int j = 0; j < 2; ++j) {
        const double prior = t == 0 ? pi0[j] : fw[t - 1][0] * P[0][j] + fw[t - 1][1] * P[1][j];
        fw[t][j] = prior * emit(j, x[t]);
        s += fw[t][j];
      }
      SPECLAB_ASSERT(s > 0.0);
      fw[t][0] /= s;
      fw[t][1] /= s;
      scale[t] = s;
      ll += std::log(s);
    }
    // Backward.
    bw[n - 1] = {1.0, 1.0};
    for (size_t t = n - 1; t-- > 0;) {
      for (int i = 0; i < 2; ++i)
        bw[t][i] = (P[i][0] * emit(0, x[t + 1]) * bw[t + 1][0] +
                    P[i][1] * emit(1, x[t + 1]) * bw[t + 1][1]) /
                   scale[t + 1];
    }
    // Posterior sums.
    double occ[2] = {0, 0}, occ_trans[2] = {0, 0}, occ_one[2] = {0, 0}, xi[2][2] = {{0, 0}, {0, 0}};
    for (size_t t = 0; t < n; ++t) {
      for (int i = 0; i < 2; ++i) {
        const double g = fw[t][i] * bw[t][i];
        occ[i] += g;
        occ_one[i] += x[t] ? g : 0.0;
        if (t + 1 < n) occ_trans[i] += g;
      }
      if (t + 1 < n)
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j)
            xi[i][j] += fw[t][i] * P[i][j] * emit(j, x[t + 1]) * bw[t + 1][j] / scale[t + 1];
    }
    // M-step.
    for (int i = 0; i < 2; ++i) {
      a[i] = occ[i] > 0 ? occ_one[i] / occ[i] : a[i];
      const double row = xi[i][0] + xi[i][1];
      if (row > 0)
        for (int j = 0; j < 2; ++j) P[i][j] = xi[i][j] / row;
      pi0[i] = fw[0][i] * bw[0][i];
    }
    fit.iterations = iter;
    fit.log_likelihood = ll;
    if (ll - prev_ll < tol * static_cast<double>(n)) {
      fit.converged = true;
      break;
    }
    prev_ll = ll;
  }
  const int e = a[0] >= a[1] ? 0 : 1, h = 1 - e;
  fit.model.a_easy = a[e];
  fit.model.a_hard = a[h];
  fit.model.p_easy_to_hard = P[e][h];
  fit.model.p_hard_to_easy = P[h][e];
  return fit;
}

// ---------------------------------------------------------------------------------------------

PolicyKind policy_kind_parse(const std::string& name) {
  if (name == "fixed") return PolicyKind::kFixed;
  if (name == "heuristic") return PolicyKind::kHeuristic;
  if (name == "oracle") return PolicyKind::kOracle;
  fail_input("policy: expected fixed, heuristic or oracle, got '", name, "'");
}

const char* policy_kind_name(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kFixed:
      return "fixed";
    case PolicyKind::kHeuristic:
      return "heuristic";
    case PolicyKind::kOracle:
      return "oracle";
  }
  return "?";
}

SimResult simulate_iid(double alpha, double c, const PolicySpec& policy, int64_t n_rounds,
                       uint64_t seed) {
  SPECLAB_INPUT_CHECK(alpha >= 0.0 && alpha <= 1.0, "alpha must lie in [0, 1], got ", alpha);
  SPECLAB_INPUT_CHECK(policy.kind != PolicyKind::kOracle || alpha < 1.0,
                      "oracle policy: alpha must be < 1, got ", alpha);
  IidSource src(alpha, seed);
  return simulate_rounds(src, c, policy, n_rounds);
}

SimResult simulate_markov(const MarkovAcceptance& m, double c, const PolicySpec& policy,
                          int64_t n_rounds, uint64_t seed) {
  markov_validate(m);
  MarkovSource src(m, seed);
  return simulate_rounds(src, c, policy, n_rounds);
}

// ---------------------------------------------------------------------------------------------

std::vector<RoundTrace> trace_parse(const std::string& text, const std::string& source) {
  using nlohmann::json;
  std::vector<RoundTrace> out;
  std::istringstream in(text);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = str_cat(source, ":", line_no, ": ");
    json j;
    try {
      j = json_input_parse(line, str_cat(source, ":", line_no));
    } catch (const json::exception&) {  // parse_error; out_of_range for 1e999
      fail_input(where, "not valid JSON; expected {\"n_draft\": g, \"n_accepted\": n, ...}");
    }
    SPECLAB_INPUT_CHECK(j.is_object(), where, "expected a JSON object per line");
    RoundTrace r;
    for (const char* key : {"n_draft", "n_accepted"}) {
      SPECLAB_INPUT_CHECK(j.contains(key) && j[key].is_number_integer(), where, "'", key,
                          "' must be an integer");
    }
    const int64_t g = j["n_draft"].get<int64_t>(), n = j["n_accepted"].get<int64_t>();
    if (j.contains("draft_cap")) {
      SPECLAB_INPUT_CHECK(j["draft_cap"].is_number_integer(), where,
                          "'draft_cap' must be an integer");
      const int64_t cap = j["draft_cap"].get<int64_t>();
      SPECLAB_INPUT_CHECK(cap >= g && cap <= 1'000'000, where,
                          "'draft_cap' must lie in [n_draft = ", g, ", 1e6], got ", cap);
      r.draft_cap = static_cast<int>(cap);
    }
    // A round that drafted nothing is meaningful only with draft_cap 0 (nothing could be
    // drafted, so every policy yields its 1 token).
    const int64_t g_min = r.draft_cap == 0 ? 0 : 1;
    SPECLAB_INPUT_CHECK(g >= g_min && g <= 1'000'000, where, "'n_draft' must lie in [", g_min,
                        ", 1e6]", g_min ? " (0 only with \"draft_cap\": 0)" : "", ", got ", g);
    SPECLAB_INPUT_CHECK(n >= 0 && n <= g, where, "'n_accepted' must lie in [0, n_draft = ", g,
                        "], got ", n);
    r.n_draft = static_cast<int>(g);
    r.n_accepted = static_cast<int>(n);
    // Keys the replay does not use, written by speclab's trace writer: when present they must
    // agree with the counts, or the line is not the round it claims to be.
    for (const char* key : {"gamma", "round", "request", "repeat"}) {
      SPECLAB_INPUT_CHECK(
          !j.contains(key) || (j[key].is_number_integer() && j[key].get<int64_t>() >= 0), where,
          "'", key, "' must be an integer >= 0");
    }
    if (j.contains("accept")) {
      const json& a = j["accept"];
      const size_t examined = static_cast<size_t>(std::min(n + 1, g));
      bool consistent = a.is_array() && a.size() == examined;
      for (size_t i = 0; consistent && i < a.size(); ++i)
        consistent = a[i].is_boolean() && a[i].get<bool>() == (static_cast<int64_t>(i) < n);
      SPECLAB_INPUT_CHECK(consistent, where, "'accept' must be ", examined,
                          " booleans, the first n_accepted = ", n,
                          " true and any after them false, got ", a.dump());
    }
    if (j.contains("beta")) {
      const json& b = j["beta"];
      SPECLAB_INPUT_CHECK(b.is_array() && b.size() <= static_cast<size_t>(g), where,
                          "'beta' must be an array of at most n_draft = ", g, " numbers");
      for (size_t i = 0; i < b.size(); ++i) {
        SPECLAB_INPUT_CHECK(
            b[i].is_number() && b[i].get<double>() >= 0.0 && b[i].get<double>() <= 1.0, where,
            "'beta'[", i, "] must be a number in [0, 1]");
        r.beta.push_back(b[i].get<double>());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<RoundTrace> trace_read_file(const std::string& path) {
  // 1 GiB of JSON lines is tens of millions of rounds, far more than any recorded run; the
  // bound (and the regular-file check) keep /dev/zero from filling memory.
  constexpr uint64_t kMaxTraceBytes = 1ull << 30;
  std::vector<RoundTrace> trace =
      trace_parse(input_file_read(path, "trace file", kMaxTraceBytes), path);
  SPECLAB_INPUT_CHECK(!trace.empty(), path, ": the trace has no round (expected JSON lines)");
  return trace;
}

std::string trace_format_line(const RoundTrace& r) {
  nlohmann::json j = {{"n_draft", r.n_draft}, {"n_accepted", r.n_accepted}};
  if (!r.beta.empty()) j["beta"] = r.beta;
  if (r.draft_cap >= 0) j["draft_cap"] = r.draft_cap;
  return j.dump();
}

double trace_alpha_mle(const std::vector<RoundTrace>& trace) {
  SPECLAB_INPUT_CHECK(!trace.empty(), "trace: no rounds");
  double accepts = 0, rejects = 0;
  for (const RoundTrace& r : trace) {
    accepts += r.n_accepted;
    rejects += r.censored() ? 0 : 1;
  }
  return accepts + rejects > 0 ? accepts / (accepts + rejects) : 1.0;  // no draft examined
}

double trace_alpha_beta(const std::vector<RoundTrace>& trace) {
  double sum = 0;
  int64_t count = 0;
  for (const RoundTrace& r : trace)
    for (double b : r.beta) {
      sum += b;
      ++count;
    }
  return count > 0 ? sum / count : -1.0;
}

std::vector<uint8_t> trace_outcomes(const std::vector<RoundTrace>& trace) {
  std::vector<uint8_t> out;
  for (const RoundTrace& r : trace) {
    out.insert(out.end(), r.n_accepted, 1);
    if (!r.censored()) out.push_back(0);
  }
  return out;
}

SimResult trace_replay(const std::vector<RoundTrace>& trace, double c, const PolicySpec& policy,
                       uint64_t seed) {
  check_sim_args(c, policy, static_cast<int64_t>(trace.size()));
  const double alpha_hat = trace_alpha_mle(trace);
  std::unique_ptr<GammaPolicy> pol = make_policy(policy);
  RoundAccumulator acc(static_cast<int64_t>(trace.size()), c);
  int64_t imputed = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const RoundTrace& r = trace[i];
    // Imputed tail L' ~ Geometric(alpha_hat), P(L' >= k) = alpha_hat^k, by inverse CDF; the
    // same draw for every policy (key: round index).
    auto tail = [&]() -> int64_t {
      const double u = rng_uniform(RngKey{seed, i, 0, kRngTest, 0});
      if (alpha_hat <= 0.0) return 0;
      if (alpha_hat >= 1.0) return kMaxRunLength;
      return static_cast<int64_t>(
          std::min<double>(std::floor(std::log1p(-u) / std::log(alpha_hat)), kMaxRunLength));
    };
    // The round's own cap (budget, context, drafter), whatever the policy asks.
    const int64_t cap = r.draft_cap >= 0 ? r.draft_cap : kMaxRunLength;
    if (!pol) {  // oracle: drafts exactly the run length L
      int64_t L = r.n_accepted;
      if (r.censored() && r.n_draft < cap) {
        SPECLAB_INPUT_CHECK(alpha_hat < 1.0,
                            "oracle replay: the trace has no rejection, so the censored run "
                            "lengths cannot be bounded");
        L += tail();
        ++imputed;
      }
      L = std::min(L, cap);
      acc.add(L, L, L + 1);
      continue;
    }
    const int g = static_cast<int>(std::min<int64_t>(pol->next_gamma(), cap));
    int64_t n;
    if (!r.censored())
      n = std::min<int64_t>(r.n_accepted, g);  // exact: L = n_accepted
    else if (g <= r.n_draft)
      n = g;  // exact: L >= n_draft >= g
    else {
      n = std::min<int64_t>(r.n_draft + tail(), g);
      ++imputed;
    }
    acc.add(g, n, n + (n < g ? 1 : 0));
    pol->observe(g, static_cast<int>(n), {});
  }
  return acc.finish(imputed);
}

}  // namespace speclab
