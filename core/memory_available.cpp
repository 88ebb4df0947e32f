#include "core/memory_available.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"

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

void memory_check_environment() {
  if (const char* cap = std::getenv("SPECLAB_MEMORY_LIMIT")) {
    const std::string v = cap;
    const bool digits = !v.empty() && v.size() <= 18 && v[0] != '0' &&
                        v.find_first_not_of("0123456789") == std::string::npos;
    SPECLAB_INPUT_CHECK(digits, "SPECLAB_MEMORY_LIMIT: '", v,
                        "' (expected a whole number of bytes > 0, below 10^18)");
  }
  if (const char* no_thp = std::getenv("SPECLAB_NO_THP")) {
    SPECLAB_INPUT_CHECK(std::string(no_thp) == "1", "SPECLAB_NO_THP: '", no_thp,
                        "' (expected 1 to keep weights on 4 KB pages, or leave it unset)");
  }
}

}  // namespace speclab
