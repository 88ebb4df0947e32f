#include "core/memory_available.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace speclab {

int64_t memory_available_bytes() {
  int64_t avail = -1;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemAvailable:") {
      avail = kb * 1024;
      break;
    }
  }
  if (const char* cap = std::getenv("SPECLAB_MEMORY_LIMIT")) {
    const int64_t c = std::strtoll(cap, nullptr, 10);
    if (c > 0 && (avail < 0 || c < avail)) avail = c;
  }
  return avail;
}

}  // namespace speclab
