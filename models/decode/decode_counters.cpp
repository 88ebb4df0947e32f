#include "models/decode/decode_counters.h"

#include <atomic>

namespace speclab {

namespace {
std::atomic<int64_t> g_speculative_generations{0};
}

void decode_count_speculative_generation() { g_speculative_generations.fetch_add(1); }
int64_t decode_speculative_generations() { return g_speculative_generations.load(); }

}  // namespace speclab
