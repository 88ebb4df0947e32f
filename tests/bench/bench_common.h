// Shared pieces of the speclab_bench benchmarks: the machine's read bandwidth (measured once
// per process, the napkin limit of every memory-bound figure), synthetic models built once and
// kept one at a time (a 3B BF16 model is 6.4 GB), and the weight bytes one forward call reads.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/llama/llama_model.h"

namespace speclab {

// Streaming read bandwidth of both cores in bytes/s: the best of the read probes
// (experiments/measure/read_bandwidth_probe.h, 2 threads, ~2 s round robin), measured on first use.
double bench_read_bandwidth();

// The model `spec`: a synthetic shape ("llama-3.2-3b:bf16") or "file:PATH" (a GGUF or
// safetensors model); loading another frees the previous one.
const LlamaModel& bench_model(const std::string& spec);
// Frees the model bench_model holds (a benchmark that loads its own copies).
void bench_model_release();
// A new copy of the model `spec` (as bench_model loads it; a bad file: one line, exit 2).
std::unique_ptr<LlamaModel> bench_model_load(const std::string& spec);

// The installed SmolLM2-135M-Instruct Q4_1 GGUF ($SPECLAB_CACHE or ~/.cache/speclab), or ""
// when it is not there.
std::string bench_smollm2_gguf();
// The GGUF files the user names in SPECLAB_BENCH_GGUF (comma-separated; empty when unset), each
// as (tag "gguf:<file name>", spec "file:<path>").
std::vector<std::pair<std::string, std::string>> bench_user_ggufs();

// Bytes of weights one forward call reads: every layer matrix and the output head (the norms
// are negligible, the embedding lookup reads one row per token).
double bench_weight_bytes(const LlamaModel& m);
// Reads every weight matrix of one forward call (bench_weight_bytes' tensors, each from its first
// 64-byte-aligned word) with the probe that set bench_read_bandwidth, on 2 threads, the matrices
// in turn in one parallel region (as the decode's step team: a region per matrix cost the read
// 2-10% more time than the decode on a Zen 4 guest): the fastest plain read of the decode's very
// bytes, from the same pages, at the same moment. Returns the seconds it took.
double bench_read_weights_seconds(const LlamaModel& m);
// The same read of any tensors, in turn, in one parallel region.
double bench_read_tensors_seconds(const std::vector<const TensorView*>& tensors);
// The read rate from which a paired read counts as the run's fast memory state: 0.85 of the rate
// that a tenth of the run's paired reads reached (their 90th percentile, so that one stray fast
// read does not define the state). On the Zen 4 guest, whose reads flip between 23-36 and 40-58
// GB/s, that separates the two states whenever a tenth of the reads found the fast one; on a
// steady machine nearly every read qualifies. rates: each paired read's bytes/s (not empty).
double bench_fast_state_threshold(std::vector<double> rates);
// Multiply-add FLOPs of the weight matrices for one token: 2 * weight parameters.
double bench_weight_flops_per_token(const LlamaModel& m);
// The FP32 FMA peak of `threads` threads at the vector width of the matmul path in use (16
// lanes on the avx512 paths, else 8): what the default path's many-row products run against.
double bench_fma_peak_flops(int threads);

// The largest cache the OS reports for CPU 0 (/sys/devices/system/cpu/cpu0/cache/index*/size:
// the L3 of a server part, 260 MB on some), 0 when it reports none.
size_t bench_last_level_cache_bytes();
// Bytes that a buffer (or a set of matrices read in turn) must span to be read from memory and
// not from a cache: max(512 MB, 4 x the last-level cache). A 256 MB set of matrices on a
// machine with a 260 MB L3 streamed at 35-37 GB/s, above the read probe's 34, while a 2 GB set
// streamed at 31.
size_t bench_stream_bytes();

// Counters: bw_frac = (bytes / time) / measured read bandwidth (a rate counter), and in_cache =
// 1 when the data the iterations cycle through (working_set_bytes; by default one iteration's
// bytes) fits in the last-level cache: then bw_frac compares a cache's rate with memory's and
// can exceed 1.
void bench_set_bandwidth_counters(benchmark::State& state, double bytes_per_iteration,
                                  double working_set_bytes = 0);

}  // namespace speclab
