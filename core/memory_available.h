// How much memory a new allocation may take.
#pragma once

#include <cstdint>

namespace speclab {

// Bytes of memory available for new allocations (weights, KV caches, a weight file's copy):
// MemAvailable from /proc/meminfo, capped by SPECLAB_MEMORY_LIMIT (bytes) when set (a user's
// own cap; tests use it). -1 if unknown.
int64_t memory_available_bytes();

// The memory settings of the environment, checked before any verb runs (as the kernel ones
// are): SPECLAB_MEMORY_LIMIT a whole number of bytes > 0 ("1e3" read as 1, "junk" as unset),
// SPECLAB_NO_THP 1 when set. InputError "SPECLAB_MEMORY_LIMIT: '1e3' (expected ...)".
void memory_check_environment();

}  // namespace speclab
