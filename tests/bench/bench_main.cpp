// speclab_bench: Google Benchmark main that measures the machine's read bandwidth first and
// records it in the run's context (JSON "context.read_bandwidth_GBps"), so every figure is
// printed next to its napkin limit from the same run. See tests/bench/README.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/cpu_matmul.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/threads.h"
#include "experiments/measure/compute_peak_probe.h"
#include "experiments/measure/read_bandwidth_probe.h"
#include "models/llama/llama_synthetic.h"
#include "tests/bench/bench_common.h"

namespace speclab {

size_t bench_last_level_cache_bytes() {
  static const size_t bytes = [] {
    size_t largest = 0;
    for (int i = 0; i < 8; i++) {
      const std::string path =
          "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size";
      std::FILE* f = std::fopen(path.c_str(), "r");
      if (f == nullptr) continue;
      unsigned long long n = 0;
      char unit = 0;
      const int got = std::fscanf(f, "%llu%c", &n, &unit);
      std::fclose(f);
      if (got < 1) continue;
      const size_t scale = unit == 'K'   ? size_t{1} << 10
                           : unit == 'M' ? size_t{1} << 20
                           : unit == 'G' ? size_t{1} << 30
                                         : 1;
      largest = std::max(largest, static_cast<size_t>(n) * scale);
    }
    return largest;
  }();
  return bytes;
}

size_t bench_stream_bytes() {
  return std::max(size_t{512} << 20, 4 * bench_last_level_cache_bytes());
}

const ReadBandwidth& bench_read_probes() {
  static const ReadBandwidth bw = read_bandwidth_measure(bench_stream_bytes(), 2.0, 2);
  return bw;
}

double bench_read_bandwidth() { return bench_read_probes().best_gbps * 1e9; }

std::unique_ptr<LlamaModel> bench_model_load(const std::string& spec) {
  threads_set(2);
  try {
    return spec.rfind("file:", 0) == 0 ? llama_load(spec.substr(5)) : llama_make_synthetic(spec);
  } catch (const InputError& e) {  // a bad file named in SPECLAB_BENCH_GGUF: one line, exit 2
    std::fprintf(stderr, "speclab_bench: %s\n", e.what());
    std::exit(2);
  }
}

namespace {
std::string g_bench_model_spec;
std::unique_ptr<LlamaModel> g_bench_model;
}  // namespace

const LlamaModel& bench_model(const std::string& spec) {
  if (!g_bench_model || g_bench_model_spec != spec) {
    g_bench_model.reset();  // free the previous model first: two 3B models do not fit
    g_bench_model = bench_model_load(spec);
    g_bench_model_spec = spec;
  }
  return *g_bench_model;
}

void bench_model_release() {
  g_bench_model.reset();
  g_bench_model_spec.clear();
}

std::string bench_smollm2_gguf() {
  const char* cache = std::getenv("SPECLAB_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir =
      cache && *cache ? cache : std::string(home ? home : "") + "/.cache/speclab";
  const std::string path = dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? path : "";
}

std::vector<std::pair<std::string, std::string>> bench_user_ggufs() {
  std::vector<std::pair<std::string, std::string>> out;
  const char* list = std::getenv("SPECLAB_BENCH_GGUF");
  if (list == nullptr) return out;
  const std::string paths = list;
  for (size_t start = 0; start <= paths.size();) {
    const size_t comma = std::min(paths.find(',', start), paths.size());
    const std::string path = paths.substr(start, comma - start);
    start = comma + 1;
    if (path.empty()) continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      std::fprintf(stderr, "speclab_bench: SPECLAB_BENCH_GGUF: %s: not a regular file\n",
                   path.c_str());
      std::exit(2);
    }
    out.emplace_back("gguf:" + std::filesystem::path(path).filename().string(), "file:" + path);
  }
  return out;
}

namespace {
// The weight matrices one forward call reads: the output head, then every layer's seven.
std::vector<const TensorView*> weight_matrices(const LlamaModel& m) {
  std::vector<const TensorView*> out = {&m.weights.output};
  for (const LlamaLayerWeights& lw : m.weights.layers) {
    for (const TensorView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
      out.push_back(w);
  }
  return out;
}
}  // namespace

double bench_weight_bytes(const LlamaModel& m) {
  double bytes = 0;
  for (const TensorView* w : weight_matrices(m)) bytes += static_cast<double>(w->nbytes);
  return bytes;
}

double bench_read_tensors_seconds(const std::vector<const TensorView*>& tensors) {
  const ReadProbe probe = bench_read_probes().best.probe;
  std::vector<ReadRange> ranges;
  for (const TensorView* w : tensors) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(w->data);
    const uintptr_t aligned = (begin + 63) / 64 * 64;
    const uintptr_t end = begin + static_cast<uintptr_t>(w->nbytes);
    if (end <= aligned) continue;
    ranges.push_back({reinterpret_cast<const uint64_t*>(aligned),
                      static_cast<int64_t>((end - aligned) / sizeof(uint64_t))});
  }
  const auto start = std::chrono::steady_clock::now();
  const uint64_t sink = read_probe_ranges(probe, ranges, 2);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  benchmark::DoNotOptimize(sink);
  return seconds;
}

double bench_fast_state_threshold(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  return 0.85 * rates[rates.size() * 9 / 10];
}

double bench_read_weights_seconds(const LlamaModel& m) {
  return bench_read_tensors_seconds(weight_matrices(m));
}

double bench_weight_flops_per_token(const LlamaModel& m) {
  double params = 0;
  for (const TensorView* w : weight_matrices(m)) params += static_cast<double>(w->numel());
  return 2.0 * params;
}

double bench_fma_peak_flops(int threads) {
  const bool wide = std::strncmp(matmul_isa(), "avx512", 6) == 0;
  return fp32_fma_peak_flops(threads, wide ? 16 : 8);
}

void bench_set_bandwidth_counters(benchmark::State& state, double bytes_per_iteration,
                                  double working_set_bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes_per_iteration * state.iterations()));
  state.counters["bw_frac"] =
      benchmark::Counter(bytes_per_iteration * state.iterations() / bench_read_bandwidth(),
                         benchmark::Counter::kIsRate);
  const double set = working_set_bytes > 0 ? working_set_bytes : bytes_per_iteration;
  state.counters["in_cache"] =
      set <= static_cast<double>(bench_last_level_cache_bytes()) ? 1.0 : 0.0;
}

}  // namespace speclab

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // A misspelt SPECLAB_MATMUL_ISA / _STREAM / _PREFETCH would time the default under its name.
  try {
    speclab::matmul_check_environment();
  } catch (const speclab::InputError& e) {
    std::fprintf(stderr, "speclab_bench: %s\n", e.what());
    return 2;
  }
  // The limit: the best of several read probes on 4 KB and on huge pages, measured before the
  // benchmarks; each probe's figure is recorded too (context.read_probe_<probe>.<pages>_GBps).
  const speclab::ReadBandwidth& probes = speclab::bench_read_probes();
  for (const speclab::ReadProbeFigure& f : probes.probes) {
    const std::string label = speclab::read_probe_label(f);
    std::fprintf(stderr, "read probe %-21s (2 threads, %s): %.2f GB/s\n", label.c_str(),
                 speclab::read_probe_isa(), f.gbps);
    benchmark::AddCustomContext("read_probe_" + label + "_GBps", std::to_string(f.gbps));
  }
  const double bw = speclab::bench_read_bandwidth();
  const std::string best = speclab::read_probe_label(probes.best);
  std::fprintf(stderr, "measured read bandwidth (best probe, %s): %.2f GB/s\n", best.c_str(),
               bw / 1e9);
  benchmark::AddCustomContext("read_bandwidth_GBps", std::to_string(bw / 1e9));
  benchmark::AddCustomContext("read_bandwidth_probe", best);
  std::fprintf(stderr, "last-level cache %.0f MB; streamed buffers and matrix sets span %.0f MB\n",
               speclab::bench_last_level_cache_bytes() / 1e6, speclab::bench_stream_bytes() / 1e6);
  benchmark::AddCustomContext("last_level_cache_bytes",
                              std::to_string(speclab::bench_last_level_cache_bytes()));
  // The arithmetic limits, the same threads, the same way (each chain free of memory).
  const int lanes = speclab::fp32_fma_widest_lanes();
  const double fma = speclab::fp32_fma_peak_flops(2, lanes);
  const double bf16 = speclab::bf16_dot_peak_flops(2);
  std::fprintf(
      stderr, "FP32 FMA peak (2 threads, %d lanes): %.1f GFLOP/s; BF16 dot peak: %s\n", lanes,
      fma / 1e9,
      bf16 > 0 ? (std::to_string(bf16 / 1e9) + " GFLOP/s").c_str() : "none (no AVX512-BF16)");
  benchmark::AddCustomContext("fp32_fma_peak_GFLOPs", std::to_string(fma / 1e9));
  benchmark::AddCustomContext("fp32_fma_peak_lanes", std::to_string(lanes));
  benchmark::AddCustomContext("bf16_dot_peak_GFLOPs", std::to_string(bf16 / 1e9));
  const double amx = speclab::amx_bf16_peak_flops(2);
  if (amx > 0) {
    std::fprintf(stderr, "AMX BF16 peak (2 threads, tdpbf16ps): %.1f GFLOP/s\n", amx / 1e9);
    benchmark::AddCustomContext("amx_bf16_peak_GFLOPs", std::to_string(amx / 1e9));
  }
  benchmark::AddCustomContext("matmul_isa", speclab::matmul_isa());
  // How one-token products read each dtype's rows (core/cpu_matmul.h, MatmulStreaming): the
  // 1B's 2048-column rows, the 3B's 3072-column ones and both down projections' 8192, each
  // length named where they differ.
  std::string streaming;
  for (speclab::DType d :
       {speclab::DType::F32, speclab::DType::F16, speclab::DType::BF16, speclab::DType::Q8_0,
        speclab::DType::Q4_0, speclab::DType::Q4_1, speclab::DType::Q4_K, speclab::DType::Q6_K}) {
    const std::string s2048 = speclab::matmul_one_token_streaming(d, 2048);
    const std::string s3072 = speclab::matmul_one_token_streaming(d, 3072);
    const std::string s8192 = speclab::matmul_one_token_streaming(d, 8192);
    const bool same = s2048 == s3072 && s3072 == s8192;
    streaming +=
        std::string(streaming.empty() ? "" : ", ") + speclab::dtype_name(d) + " " +
        (same ? s2048 : s2048 + " (2048 columns) / " + s3072 + " (3072) / " + s8192 + " (8192)");
  }
  benchmark::AddCustomContext("matmul_one_token_streaming", streaming);
  // How models loaded by this run store BF16 matrices (core/cpu_matmul.h, MatmulLayout): where
  // they are row pairs, one-token products read them a pair at a time.
  benchmark::AddCustomContext("bf16_weights_layout",
                              speclab::matmul_bf16_row_pairs() ? "row pairs" : "rows");
  // Where column segments prefetch the next segment's weights (core/cpu_matmul.h, MatmulPrefetch).
  std::fprintf(stderr, "segments prefetch the next segment's weights into: %s\n",
               speclab::matmul_segment_prefetch());
  benchmark::AddCustomContext("matmul_segment_prefetch", speclab::matmul_segment_prefetch());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
