#include "core/threads.h"

#include <omp.h>

namespace speclab {

void threads_set(int n) { omp_set_num_threads(n > 0 ? n : omp_get_num_procs()); }

int threads_get() { return omp_get_max_threads(); }

}  // namespace speclab
