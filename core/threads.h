// The number of CPU threads the kernels use (OpenMP parallel regions).
#pragma once

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

}  // namespace speclab
