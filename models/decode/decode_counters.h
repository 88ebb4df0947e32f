// Process-wide count of speculative generations started (chain and tree decoders), so that
// a command that promises not to run the speculative decoder (`speclab predict`) can report,
// and its test can check, that it ran none.
#pragma once

#include <cstdint>

namespace speclab {

void decode_count_speculative_generation();
int64_t decode_speculative_generations();

}  // namespace speclab
