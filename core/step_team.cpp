#include "core/step_team.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>

#include "core/error.h"

namespace speclab {

void StepTeam::reset(int64_t n_phases, int n_threads) {
  if (n_phases > capacity_) {
    phases_.reset(new Phase[n_phases]);
    capacity_ = n_phases;
  }
  for (int64_t p = 0; p < n_phases; p++) {
    phases_[p].next.value.store(0, std::memory_order_relaxed);
    phases_[p].done.value.store(0, std::memory_order_relaxed);
  }
  n_threads_ = std::max(1, n_threads);
}

bool StepTeam::next(int64_t p, int64_t n_items, int64_t* begin, int64_t* end) {
  SPECLAB_ASSERT(p < capacity_);
  std::atomic<int64_t>& counter = phases_[p].next.value;
  int64_t cur = counter.load(std::memory_order_relaxed);
  while (cur < n_items) {
    // Guided: half of an equal share of what is left, at least one item.
    const int64_t take = std::max<int64_t>(1, (n_items - cur) / (2 * n_threads_));
    const int64_t stop = std::min(n_items, cur + take);
    if (counter.compare_exchange_weak(cur, stop, std::memory_order_relaxed)) {
      *begin = cur;
      *end = stop;
      return true;
    }
  }
  return false;
}

void StepTeam::done(int64_t p, int64_t count) {
  phases_[p].done.value.fetch_add(count, std::memory_order_release);
}

void StepTeam::wait(int64_t p, int64_t n_items) {
  const std::atomic<int64_t>& done = phases_[p].done.value;
  // Spin first: the other threads are normally running and finish within microseconds. After
  // that, one of them has probably been descheduled: yield the core instead of burning it.
  for (int spin = 0; done.load(std::memory_order_acquire) < n_items; spin++) {
    if (spin < 4096) {
      _mm_pause();
    } else {
      sched_yield();
    }
  }
}

}  // namespace speclab
