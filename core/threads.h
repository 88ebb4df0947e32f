// The number of CPU threads the kernels use (OpenMP parallel regions).
#pragma once

#include <cstdint>
#include <string>

namespace speclab {

// Sets the thread count for later kernel calls; n <= 0 restores the default (all cores).
// Before asking OpenMP for n > 1 threads it starts n - 1 threads itself (each with the stack
// OpenMP would give it) and stops them again: libgomp answers a thread it cannot create with
// "Thread creation failed" and exit(1) in the middle of the run, so a count the machine cannot
// start is refused here instead, as an InputError naming `what` (the option or config key that
// asked for n) and the count that could be started.
void threads_set(int n, const std::string& what = "threads");
// The thread count kernels will use.
int threads_get();

// Whether an elementwise kernel whose elements cost a few ns each (SwiGLU's exp, core/cpu_ops.h)
// splits a call of n_elements over the threads: at least kSplitElements, more than one thread,
// and not made from inside a parallel region (the step team calls it on its own items). Below
// that, waking a sleeping worker (22-129 us with passive waiting, docs/cpu-kernels.md) costs
// about what the work does. Each element is computed by the same operations whichever thread
// computes it, so a split changes no bit.
constexpr int64_t kSplitElements = int64_t{1} << 16;
bool split_over_threads(int64_t n_elements);

}  // namespace speclab
