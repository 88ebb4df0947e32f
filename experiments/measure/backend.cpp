#include "experiments/measure/backend.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/memory_available.h"
#include "models/llama/batched_llama_runner.h"
#include "models/llama/llama_runner.h"
#ifdef SPECLAB_HAVE_CUDA
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_graph_book.h"
#include "models/llama/cuda/cuda_batched_llama_runner.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#endif

namespace speclab {

namespace {

[[noreturn]] void fail_no_cuda_build(const std::string& what) {
  fail_input(what, ": 'cuda' requested but this build has no CUDA backend (configure with ",
             "-DSPECLAB_CUDA=ON on a machine with nvcc)");
}

// SPECLAB_MEMORY_LIMIT in bytes (read as memory_available_bytes reads it), -1 when unset.
int64_t memory_limit_from_env() {
  const char* v = std::getenv("SPECLAB_MEMORY_LIMIT");
  const int64_t n = v ? std::strtoll(v, nullptr, 10) : 0;
  return n > 0 ? n : -1;
}

#ifdef SPECLAB_HAVE_CUDA
// The device check, its message prefixed with the key or flag that asked for the device.
void require_cuda_device(const std::string& what) {
  try {
    speclab_cuda_device_info();
  } catch (const InputError& e) {
    fail_input(what, ": 'cuda' requested but ", e.what());
  }
}
#endif

}  // namespace

std::unique_ptr<TokenRunner> backend_create_runner(const std::string& backend,
                                                   const LlamaModel& model, int64_t max_ctx,
                                                   const std::string& what) {
  if (backend == "cpu") return std::make_unique<LlamaRunner>(model, max_ctx);
  if (backend == "cuda") {
#ifdef SPECLAB_HAVE_CUDA
    require_cuda_device(what);  // "<what>: no CUDA device found (...)" without a device
    return std::make_unique<CudaLlamaRunner>(model, max_ctx);
#else
    fail_no_cuda_build(what);
#endif
  }
  fail_input(what, ": '", backend, "' (expected cpu or cuda)");
}

std::string backend_cuda_graphs(const std::string& backend, bool batched) {
  if (backend != "cuda") return "none";
#ifdef SPECLAB_HAVE_CUDA
  if (batched) return "off";
  return cuda_graphs_from_env() ? "on" : "off";
#else
  (void)batched;
  return "none";
#endif
}

TokenRunnerFactory backend_runner_factory(const std::string& backend, const std::string& what) {
  if (backend == "cpu") return {};  // the drafter's default: LlamaRunner
  if (backend == "cuda") {
#ifdef SPECLAB_HAVE_CUDA
    require_cuda_device(what);  // "<what>: no CUDA device found (...)" without a device
    return [](const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip_layers) {
      return std::unique_ptr<TokenRunner>(
          std::make_unique<CudaLlamaRunner>(model, max_ctx, std::move(skip_layers)));
    };
#else
    fail_no_cuda_build(what);
#endif
  }
  fail_input(what, ": '", backend, "' (expected cpu or cuda)");
}

std::unique_ptr<BatchTokenRunner> backend_create_batched_runner(const std::string& backend,
                                                                const LlamaModel& model,
                                                                int64_t n_slots, int64_t max_ctx,
                                                                const std::string& what) {
  if (backend == "cpu") return std::make_unique<BatchedLlamaRunner>(model, n_slots, max_ctx);
  return backend_batched_runner_factory(backend, what)(model, n_slots, max_ctx);
}

BatchTokenRunnerFactory backend_batched_runner_factory(const std::string& backend,
                                                       const std::string& what) {
  if (backend == "cpu") return {};  // batch_drafter_create's default: BatchedLlamaRunner
  if (backend == "cuda") {
#ifdef SPECLAB_HAVE_CUDA
    require_cuda_device(what);  // "<what>: no CUDA device found (...)" without a device
    return [](const LlamaModel& model, int64_t n_slots, int64_t max_ctx) {
      return std::unique_ptr<BatchTokenRunner>(
          std::make_unique<CudaBatchedLlamaRunner>(model, n_slots, max_ctx));
    };
#else
    fail_no_cuda_build(what);
#endif
  }
  fail_input(what, ": '", backend, "' (expected cpu or cuda)");
}

void backend_check_batched_drafter(const std::string& backend, const std::string& spec,
                                   const std::string& what) {
  SPECLAB_INPUT_CHECK(backend != "cuda" || spec.rfind("self:", 0) != 0, what, ": '", spec,
                      "': self-speculation at concurrency > 1 runs one drafter per slot on the "
                      "CPU; the cuda backend does not serve it (use a draft model, lookup or "
                      "ngram:, or concurrency 1)");
}

BackendMemory backend_memory(const std::string& backend) {
  BackendMemory m;
  if (backend != "cuda") {
    m.available = memory_available_bytes();  // honours SPECLAB_MEMORY_LIMIT itself
    m.source = "MemAvailable";
    return m;
  }
  m.source = "free device memory";
#ifdef SPECLAB_HAVE_CUDA
  m.available = cuda_device_free_bytes();
#endif
  const int64_t limit = memory_limit_from_env();
  if (limit >= 0) m.available = m.available < 0 ? limit : std::min(m.available, limit);
  return m;
}

size_t backend_batched_bytes(const std::string& backend, const LlamaModel& target,
                             const LlamaModel* draft, int64_t n_slots, int64_t max_ctx) {
  size_t bytes = BatchedLlamaRunner::kv_cache_bytes_for(target.config, n_slots, max_ctx);
  if (draft) bytes += BatchedLlamaRunner::kv_cache_bytes_for(draft->config, n_slots, max_ctx);
  if (backend == "cuda") {
    // Each batched runner uploads its model: every matrix and norm (weight_bytes_per_token
    // counts all but the embedding table) and the embedding table when it is not the head.
    for (const LlamaModel* m : {&target, draft}) {
      if (m == nullptr) continue;
      bytes += static_cast<size_t>(m->weight_bytes_per_token());
      if (m->weights.output.data != m->weights.tok_embeddings.data)
        bytes += m->weights.tok_embeddings.nbytes;
    }
  }
  return bytes;
}

}  // namespace speclab
