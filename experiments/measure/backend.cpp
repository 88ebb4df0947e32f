#include "experiments/measure/backend.h"

#include "core/error.h"
#include "models/llama/llama_runner.h"
#ifdef SPECLAB_HAVE_CUDA
#include "core/cuda/cuda_device.h"
#include "models/llama/cuda/cuda_llama_runner.h"
#endif

namespace speclab {

std::unique_ptr<TokenRunner> backend_create_runner(const std::string& backend,
                                                   const LlamaModel& model, int64_t max_ctx,
                                                   const std::string& what) {
  if (backend == "cpu") return std::make_unique<LlamaRunner>(model, max_ctx);
  if (backend == "cuda") {
#ifdef SPECLAB_HAVE_CUDA
    speclab_cuda_device_info();  // InputError "no CUDA device found (...)" without a device
    return std::make_unique<CudaLlamaRunner>(model, max_ctx);
#else
    fail_input(what, ": 'cuda' requested but this build has no CUDA backend (configure with ",
               "-DSPECLAB_CUDA=ON on a machine with nvcc)");
#endif
  }
  fail_input(what, ": '", backend, "' (expected cpu or cuda)");
}

TokenRunnerFactory backend_runner_factory(const std::string& backend, const std::string& what) {
  if (backend == "cpu") return {};  // the drafter's default: LlamaRunner
  if (backend == "cuda") {
#ifdef SPECLAB_HAVE_CUDA
    speclab_cuda_device_info();  // InputError "no CUDA device found (...)" without a device
    return [](const LlamaModel& model, int64_t max_ctx, std::vector<bool> skip_layers) {
      return std::unique_ptr<TokenRunner>(
          std::make_unique<CudaLlamaRunner>(model, max_ctx, std::move(skip_layers)));
    };
#else
    fail_input(what, ": 'cuda' requested but this build has no CUDA backend (configure with ",
               "-DSPECLAB_CUDA=ON on a machine with nvcc)");
#endif
  }
  fail_input(what, ": '", backend, "' (expected cpu or cuda)");
}

}  // namespace speclab
