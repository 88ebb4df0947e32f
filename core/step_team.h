// One team of threads for a whole forward step: the threads enter one OpenMP parallel region
// per step and walk the same sequence of phases (a matmul, attention, ...); within a phase they
// take work items from a shared counter, and before a phase that reads a previous phase's
// output they wait until every item of that phase is done.
//
// Why not a parallel region per kernel: with passive OpenMP waiting (the only sane policy on a
// machine shared with other jobs) each region wakes the sleeping workers through a futex and
// puts them back to sleep at the join, 20-130 µs a region on the 2-core VM, and a SmolLM2
// decode step had 181 of them (docs/findings.md). Inside a step the threads here spin briefly,
// then yield the core, while they wait.
//
// Why completion counts rather than barriers: a thread that the OS has descheduled holds up a
// barrier even when it holds no work; here it holds up the others only while it is inside a
// work item, and when it resumes it finds the finished phases' counters exhausted and catches
// up. Items are handed out in shrinking runs (as OpenMP's guided schedule); which thread
// computes an item changes no bit of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace speclab {

class StepTeam {
 public:
  // Before the parallel region (one thread): room for n_phases phases, all counters zero.
  void reset(int64_t n_phases, int n_threads);

  // Inside the region, any thread: the next run [*begin, *end) of phase p's n_items items;
  // false when none are left.
  bool next(int64_t p, int64_t n_items, int64_t* begin, int64_t* end);
  // Marks `count` items of phase p done (after their outputs are written).
  void done(int64_t p, int64_t count);
  // Returns once all n_items items of phase p are done (their outputs visible to this thread).
  void wait(int64_t p, int64_t n_items);

 private:
  struct alignas(64) Counter {
    std::atomic<int64_t> value{0};
  };
  struct Phase {
    Counter next;  // items handed out
    Counter done;  // items finished
  };
  std::unique_ptr<Phase[]> phases_;
  int64_t capacity_ = 0;
  int n_threads_ = 1;
};

}  // namespace speclab
