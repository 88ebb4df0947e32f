// Steps every decoder shares (autoregressive, chain and tree speculative), so that they check
// requests, time phases and apply stops the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "models/decode/generation.h"
#include "models/drafters/drafter.h"
#include "models/llama/token_runner.h"

namespace speclab {

using DecodeClock = std::chrono::steady_clock;
inline double seconds_since(DecodeClock::time_point t0) {
  return std::chrono::duration<double>(DecodeClock::now() - t0).count();
}

// The prompt is non-empty and fits the target's context (InputError otherwise).
void decode_check_prompt(const GenerationRequest& request, const TokenRunner& target);

// The drafter shares the target's vocabulary (InputError naming the draft otherwise).
void decode_check_drafter(const Drafter& drafter, const TokenRunner& target);

// Commits one generated token: appends it to context and result, and tells whether
// generation stops after it (an EOS id -> kEos, max_new_tokens reached -> kMaxTokens; the
// reason is set in result.stop).
bool decode_commit_token(const GenerationRequest& request, int32_t token,
                         std::vector<int32_t>* context, GenerationResult* result);

}  // namespace speclab
