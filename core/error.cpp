#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace speclab {

void detail_assert_fail(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "speclab: internal error: assertion '%s' failed at %s:%d\n", cond, file,
               line);
  std::abort();
}

}  // namespace speclab
