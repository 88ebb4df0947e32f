// The golden check shared by the CPU and CUDA tests: a runner on a real checkpoint against
// golden logits and greedy continuations made by HF transformers in FP32 (tests/golden/*.json;
// how they were made is written in each file). The prompt is fed in two chunks and the greedy
// continuation one token at a time, so the KV cache, positions and truncation-free decoding
// are all on the path.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/threads.h"
#include "models/llama/llama_runner.h"
#include "models/llama/token_runner.h"

namespace speclab::testing {

struct Golden {
  nlohmann::json meta;
  std::vector<float> logits;  // [rows, vocab]
};

inline Golden read_golden(const std::string& name) {
  const std::string dir = std::string(SPECLAB_SOURCE_DIR) + "/tests/golden/";
  Golden g;
  std::ifstream js(dir + name + ".json");
  EXPECT_TRUE(js.good()) << dir + name + ".json";
  g.meta = nlohmann::json::parse(js);
  const int64_t rows = g.meta["rows"], vocab = g.meta["vocab"];
  g.logits.resize(rows * vocab);
  std::ifstream bin(dir + g.meta["logits_file"].get<std::string>(), std::ios::binary);
  bin.read(reinterpret_cast<char*>(g.logits.data()), g.logits.size() * sizeof(float));
  EXPECT_TRUE(bin.good()) << "golden logits file";
  return g;
}

inline int32_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++) best = x[i] > x[best] ? i : best;
  return static_cast<int32_t>(best);
}

// How the greedy continuation is checked.
enum class Greedy {
  // Free-running: every one of the 40 tokens must be transformers' (FP32-activation paths).
  kExact,
  // Teacher-forced (transformers' tokens fed back): our argmax must be transformers' token
  // wherever transformers' top-2 margin exceeds 2 * atol; where it does not, logits within atol
  // of the golden ones may rank the two either way (paths whose logit error is O(atol)).
  kWithinTolerance,
};

// Checks every prompt's golden logits rows and its 40-token greedy continuation.
// atol: allowed |ours - golden| on a logit (the golden rows come from FP32 PyTorch).
// make_runner: the backend under test (an empty factory: the CPU LlamaRunner).
inline void check_against_golden(const LlamaModel& model, const Golden& g, double atol,
                                 Greedy mode = Greedy::kExact,
                                 const TokenRunnerFactory& make_runner = {}) {
  // One thread: ~280 forward calls of many small parallel regions are 10x slower with two
  // threads when the machine is oversubscribed (a test run beside builds), and the results
  // do not depend on the thread count (LlamaForward.ThreadCountDoesNotChangeLogits).
  threads_set(1);
  const int64_t vocab = g.meta["vocab"];
  ASSERT_EQ(model.config.vocab_size, vocab);
  double max_err_all = 0.0;
  size_t n_greedy = 0, n_differ = 0;
  for (const auto& prompt : g.meta["prompts"]) {
    const std::vector<int32_t> ids = prompt["ids"].get<std::vector<int32_t>>();
    const int64_t n = ids.size();
    std::unique_ptr<TokenRunner> owned =
        make_runner ? make_runner(model, 0, {}) : std::make_unique<LlamaRunner>(model);
    TokenRunner& runner = *owned;
    // Two chunks, keeping all rows: [0, n/2) and [n/2, n).
    std::vector<float> rows(n * vocab);
    const int64_t split = n / 2;
    const float* a = runner.forward(ids.data(), split);
    std::copy(a, a + split * vocab, rows.begin());
    const float* b = runner.forward(ids.data() + split, n - split);
    std::copy(b, b + (n - split) * vocab, rows.begin() + split * vocab);

    const auto& full = prompt["full_logits"];
    const int64_t row_offset = full["row_offset"];
    const std::vector<int64_t> positions = full["positions"].get<std::vector<int64_t>>();
    double max_err = 0.0;
    for (size_t j = 0; j < positions.size(); j++) {
      const float* ours = rows.data() + positions[j] * vocab;
      const float* want = g.logits.data() + (row_offset + j) * vocab;
      int mismatches = 0;
      for (int64_t v = 0; v < vocab; v++) {
        const double err = std::fabs(static_cast<double>(ours[v]) - want[v]);
        max_err = std::max(max_err, err);
        if (!(err <= atol) && mismatches++ < 5) {
          ADD_FAILURE() << prompt["text"] << " position " << positions[j] << " token " << v
                        << ": ours " << ours[v] << ", golden " << want[v];
        }
      }
    }
    max_err_all = std::max(max_err_all, max_err);

    // Greedy continuation, one token per forward call.
    const std::vector<int32_t> greedy = prompt["greedy"].get<std::vector<int32_t>>();
    const std::vector<double> margins = prompt["greedy_margins"].get<std::vector<double>>();
    int32_t next = argmax(rows.data() + (n - 1) * vocab, vocab);
    for (size_t i = 0; i < greedy.size(); i++) {
      if (mode == Greedy::kExact) {
        ASSERT_EQ(next, greedy[i]) << prompt["text"] << ": greedy token " << i;
      } else if (next != greedy[i]) {
        EXPECT_LE(margins[i], 2 * atol) << prompt["text"] << ": greedy token " << i << " is "
                                        << next << ", transformers' " << greedy[i];
        n_differ++;
        next = greedy[i];  // teacher forcing
      }
      next = argmax(runner.forward(&next, 1, /*last_only=*/true), vocab);
    }
    n_greedy += greedy.size();
  }
  threads_set(0);
  std::printf("%s%s: max |logit - golden| = %.3g (atol %.3g), greedy %zu/%zu on %zu prompts (%s)\n",
              make_runner ? "on the given backend, " : "",
              g.meta["model"].get<std::string>().c_str(), max_err_all, atol, n_greedy - n_differ,
              n_greedy, g.meta["prompts"].size(),
              mode == Greedy::kExact ? "free-running" : "teacher-forced");
}

}  // namespace speclab::testing
