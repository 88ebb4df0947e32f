// Continuous batching on the CPU: one BatchedLlamaRunner forward of b rows (b sequences, one
// new token each, a decode step of b requests) against b single-row forwards of the same
// runner, on the Llama-3.2 1B shape (synthetic BF16).
//   BM_BatchedDecode/llama-3.2-1b:bf16/b:B   iteration time: the b-row forward; counters
//        T_batch_ms (one b-row forward), T_singles_ms (b one-row forwards, interleaved with it
//        as BM_Verify does: robust to load drift), ratio = T_batch / T_singles.
// The weights are read once per forward either way, so on a memory-bound machine the b-row
// forward costs about one row's time until the arithmetic catches up with the reads.
#include <chrono>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/threads.h"
#include "models/llama/batched_llama_runner.h"
#include "tests/bench/bench_common.h"

namespace speclab {
namespace {

constexpr int64_t kBatchContext = 64;  // positions per slot: 32 slots x 64 x 64 KiB = 128 MiB
constexpr int64_t kBatchPrompt = 8;    // per slot, so attention spans a few positions

void BM_BatchedDecode(benchmark::State& state, const std::string& spec) {
  threads_set(2);
  const int64_t b = state.range(0);
  const LlamaModel& model = bench_model(spec);
  BatchedLlamaRunner runner(model, b, kBatchContext);
  const int32_t vocab = static_cast<int32_t>(runner.vocab());
  std::vector<BatchRow> prompt;  // [b * kBatchPrompt] rows, slot by slot
  for (int32_t s = 0; s < b; s++) {
    for (int64_t i = 0; i < kBatchPrompt; i++)
      prompt.push_back({s, static_cast<int32_t>((s * 7919 + i * 104729 + 13) % vocab)});
  }
  runner.forward_batch(prompt, /*last_only=*/true);
  std::vector<BatchRow> step;  // [b] rows: one new token per slot
  for (int32_t s = 0; s < b; s++) step.push_back({s, static_cast<int32_t>((s * 31 + 1) % vocab)});
  double t_batch = 0.0, t_singles = 0.0;
  for (auto _ : state) {
    const auto a = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < b; s++) benchmark::DoNotOptimize(runner.forward_batch(&step[s], 1));
    for (int64_t s = 0; s < b; s++) runner.truncate(s, kBatchPrompt);
    const auto m = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(runner.forward_batch(step));  // all b rows of logits
    for (int64_t s = 0; s < b; s++) runner.truncate(s, kBatchPrompt);
    const auto e = std::chrono::steady_clock::now();
    t_singles += std::chrono::duration<double>(m - a).count();
    t_batch += std::chrono::duration<double>(e - m).count();
    state.SetIterationTime(std::chrono::duration<double>(e - m).count());
  }
  state.SetItemsProcessed(state.iterations() * b);  // items/s = rows/s of the batched forward
  state.counters["T_batch_ms"] = 1e3 * t_batch / state.iterations();
  state.counters["T_singles_ms"] = 1e3 * t_singles / state.iterations();
  state.counters["ratio"] = t_batch / t_singles;
  state.SetLabel(matmul_isa());
}

const int kRegistered = [] {
  benchmark::RegisterBenchmark("BM_BatchedDecode/llama-3.2-1b:bf16", BM_BatchedDecode,
                               std::string("llama-3.2-1b:bf16"))
      ->ArgName("b")
      ->Arg(1)
      ->Arg(8)
      ->Arg(32)
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime()
      ->Iterations(3);
  return 0;
}();

}  // namespace
}  // namespace speclab
