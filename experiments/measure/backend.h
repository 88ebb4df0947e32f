// Choosing where the target runs: "cpu" (LlamaRunner) or "cuda" (CudaLlamaRunner, when the
// build has the CUDA backend and a device is present). Asking for CUDA without it is bad
// input (exit 2) with the reason.
#pragma once

#include <memory>
#include <string>

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

}  // namespace speclab
