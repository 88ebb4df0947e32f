// How much memory a new allocation may take.
#pragma once

#include <cstdint>

namespace speclab {

// Bytes of memory available for new allocations (weights, KV caches, a weight file's copy):
// MemAvailable from /proc/meminfo, capped by SPECLAB_MEMORY_LIMIT (bytes) when set (a user's
// own cap; tests use it). -1 if unknown.
int64_t memory_available_bytes();

}  // namespace speclab
