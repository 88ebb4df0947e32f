// The number of CPU threads the kernels use (OpenMP parallel regions).
#pragma once

namespace speclab {

// Sets the thread count for later kernel calls; n <= 0 restores the default (all cores).
void threads_set(int n);
// The thread count kernels will use.
int threads_get();

}  // namespace speclab
