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

}  // namespace speclab
