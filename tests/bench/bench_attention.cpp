// Attention of one decode step, one layer, both cores:
//   BM_Attention/shape:<s>/n_ctx:<n>  attention of one query token over n cached positions
//       with the head layout of the Llama-3.2 1B (s = 1: 32 query heads, 8 KV heads, head_dim
//       64) or 3B shape (s = 3: 24 query heads, 8 KV heads, head_dim 128). The default path (on
//       an AVX-512 CPU: a KV group's query heads together) is timed beside the plain code of
//       the same call in the same run, so a busy machine slows both. Counters: us (a call,
//       default path), plain_us (the plain code), plain_over_default (their ratio: the gain),
//       kv_GBps (the K and V bytes the call must read, over its time; every KV slice once).
// A decode step runs this once per layer (16 layers in the 1B shape, 28 in the 3B).
#include <algorithm>
#include <chrono>
#include <vector>

#include "core/cpu_attention.h"
#include "core/threads.h"
#include "tests/bench/bench_common.h"

namespace speclab {
namespace {

struct AttentionShape {
  int64_t n_heads, n_kv_heads, head_dim;
};

AttentionShape attention_shape(int64_t s) {
  return s == 1 ? AttentionShape{32, 8, 64} : AttentionShape{24, 8, 128};
}

// Seconds per call at the current path: the call's work items (attention_item, as attention()
// and the step team split them) shared by the two threads of one parallel region that stays
// open for all the calls of a round, each call ending at the region's barrier, as a phase of
// the step team does (a region opened per call would time the threads' wake-up, tens of
// microseconds with passive waiting). The best of 5 rounds of about 50 ms.
double seconds_per_call(const AttentionShape& a, int64_t n_past, const std::vector<float>& q,
                        const std::vector<float>& k, const std::vector<float>& v,
                        std::vector<float>* out) {
  const int64_t items = attention_items_per_token(a.n_heads, a.n_kv_heads);
  const auto run = [&](int64_t calls) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(2)
    {
      std::vector<float> scores(attention_item_scores(n_past + 1));
      for (int64_t c = 0; c < calls; c++) {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < items; i++) {
          attention_item(out->data(), q.data(), k.data(), v.data(), 0, i, n_past, a.n_heads,
                         a.n_kv_heads, a.head_dim, scores.data());
        }
      }
    }
    benchmark::DoNotOptimize(out->data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double one = run(1);
  const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(0.05 / std::max(one, 1e-7)));
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    best = std::min(best, run(calls) / static_cast<double>(calls));
  }
  return best;
}

void BM_Attention(benchmark::State& state) {
  threads_set(2);
  const AttentionShape a = attention_shape(state.range(0));
  const int64_t n_ctx = state.range(1), n_past = n_ctx - 1;
  const int64_t kv = n_ctx * a.n_kv_heads * a.head_dim;
  std::vector<float> q(a.n_heads * a.head_dim), k(kv), v(kv), out(q.size());
  for (size_t i = 0; i < k.size(); i++) {
    k[i] = static_cast<float>((i * 37) % 101) / 100.0f - 0.5f;
    v[i] = static_cast<float>((i * 53) % 97) / 97.0f - 0.5f;
  }
  for (size_t i = 0; i < q.size(); i++) q[i] = static_cast<float>((i * 11) % 13) / 13.0f - 0.5f;
  double fast = 0, plain = 0;
  for (auto _ : state) {
    attention_force_plain(true);
    plain = seconds_per_call(a, n_past, q, k, v, &out);
    attention_force_plain(false);
    fast = seconds_per_call(a, n_past, q, k, v, &out);
    state.SetIterationTime(fast);
  }
  state.counters["us"] = fast * 1e6;
  state.counters["plain_us"] = plain * 1e6;
  state.counters["plain_over_default"] = fast > 0 ? plain / fast : 0.0;
  state.counters["kv_GBps"] = fast > 0 ? 2.0 * static_cast<double>(kv) * 4.0 / fast / 1e9 : 0.0;
  threads_set(0);
}
BENCHMARK(BM_Attention)
    ->ArgNames({"shape", "n_ctx"})
    ->ArgsProduct({{1, 3}, {145, 1025, 2049}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace speclab
