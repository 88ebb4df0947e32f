// The baseline: the target alone, one token per forward call.
#pragma once

#include "models/decode/generation.h"
#include "models/llama/llama_runner.h"

namespace speclab {

// Generates with the target alone. The runner's cache is reset first. Token t of the
// output (absolute position pos) is drawn with key (seed, request, pos, kTargetSample),
// so the output does not depend on threads or timing.
GenerationResult generate_autoregressive(TokenRunner& target, const GenerationRequest& request);

}  // namespace speclab
