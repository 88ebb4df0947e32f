// Choosing where the target runs: "cpu" (LlamaRunner; BatchedLlamaRunner for many requests at
// once) or "cuda" (CudaLlamaRunner; CudaBatchedLlamaRunner), when the build has the CUDA
// backend and a device is present. Asking for CUDA without it is bad input (exit 2) with the
// reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "models/llama/batch_token_runner.h"
#include "models/llama/llama_model.h"
#include "models/llama/token_runner.h"

namespace speclab {

// backend: "cpu" | "cuda"; `what` names the setting in errors ("--backend",
// "configs/x.yaml: generation.backend").
std::unique_ptr<TokenRunner> backend_create_runner(const std::string& backend,
                                                   const LlamaModel& model, int64_t max_ctx,
                                                   const std::string& what);

// The same choice as a factory for drafters that run a model (draft models, self-speculation),
// so they run on the target's backend. Checks `backend` now (InputError as above).
TokenRunnerFactory backend_runner_factory(const std::string& backend, const std::string& what);

// The batched (continuous-batching) runner of a backend: n_slots sequences of max_ctx
// positions. InputError as backend_create_runner.
std::unique_ptr<BatchTokenRunner> backend_create_batched_runner(const std::string& backend,
                                                                const LlamaModel& model,
                                                                int64_t n_slots, int64_t max_ctx,
                                                                const std::string& what);

// The same choice as a factory for batched draft models (batch_drafter_create), so a draft
// model of a concurrency N run runs on the target's backend. Empty for cpu. Checks `backend`
// now (InputError as above).
BatchTokenRunnerFactory backend_batched_runner_factory(const std::string& backend,
                                                       const std::string& what);

// Refuses (InputError naming `what`) a drafter spec the batched loop cannot serve on `backend`:
// on cuda, self-speculation ("self:..."), which the batched loop runs as one drafter per slot
// on the CPU (each slot would need its own device copy of the target's weights).
void backend_check_batched_drafter(const std::string& backend, const std::string& spec,
                                   const std::string& what);

// Whether a cell on `backend` ran with CUDA graphs, for its row (run_cuda_graphs): on cuda "on"
// or "off" as SPECLAB_CUDA_GRAPHS sets the one-request runners (the target's and a draft
// model's alike; unset or empty: on; InputError for a value other than unset, empty, 0 or 1),
// "off" for a batched
// cell (concurrency > 1: the batched runners capture no graphs); "none" on cpu and in a build
// without the CUDA backend.
std::string backend_cuda_graphs(const std::string& backend, bool batched);

// Where the batched runners of a backend allocate their caches, and how much room is there:
// cpu: host memory, memory_available_bytes() ("MemAvailable"); cuda: the device's free memory
// (cudaMemGetInfo), where each batched runner also keeps its own copy of its model's weights.
// Both are capped by SPECLAB_MEMORY_LIMIT (bytes) when set. available = -1 when unknown.
struct BackendMemory {
  int64_t available = -1;
  std::string source;  // "MemAvailable" or "free device memory", for messages
};
BackendMemory backend_memory(const std::string& backend);

// Bytes the batched runners of a concurrency-N run (the target's and a draft model's, if any)
// allocate on the backend's memory: their KV caches, and on cuda their weights too.
size_t backend_batched_bytes(const std::string& backend, const LlamaModel& target,
                             const LlamaModel* draft, int64_t n_slots, int64_t max_ctx);

}  // namespace speclab
