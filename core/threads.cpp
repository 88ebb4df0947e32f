#include "core/threads.h"

#include <omp.h>
#include <pthread.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace speclab {

namespace {

// The stack size libgomp gives its threads: OMP_STACKSIZE (a number with an optional B, K, M or
// G suffix, K when none) when set and readable, else the pthread default (0 = leave it).
size_t omp_stack_bytes() {
  const char* s = std::getenv("OMP_STACKSIZE");
  if (s == nullptr) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s) return 0;
  while (std::isspace(static_cast<unsigned char>(*end))) end++;
  unsigned long long scale = 1024;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case '\0':
      break;
    case 'B':
      scale = 1;
      break;
    case 'K':
      scale = 1024;
      break;
    case 'M':
      scale = 1024ull * 1024;
      break;
    case 'G':
      scale = 1024ull * 1024 * 1024;
      break;
    default:
      return 0;  // libgomp ignores a value it cannot read; so do we
  }
  return static_cast<size_t>(v * scale);
}

// Probe threads wait here until all are started, so that the n - 1 exist at the same time
// as OpenMP's would.
struct Gate {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  bool open = false;
};

void* wait_at_gate(void* arg) {
  Gate* g = static_cast<Gate*>(arg);
  pthread_mutex_lock(&g->mu);
  while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
  return nullptr;
}

// Starts `count` threads at once; returns how many started and the error of the first that
// did not (0 if all did). All started ones are joined before returning.
int try_start_threads(int count, int* error) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  const size_t stack = omp_stack_bytes();
  if (stack > 0) pthread_attr_setstacksize(&attr, stack);
  Gate gate;
  std::vector<pthread_t> started;
  started.reserve(static_cast<size_t>(count));
  *error = 0;
  for (int i = 0; i < count; i++) {
    pthread_t t;
    const int rc = pthread_create(&t, &attr, wait_at_gate, &gate);
    if (rc != 0) {
      *error = rc;
      break;
    }
    started.push_back(t);
  }
  pthread_mutex_lock(&gate.mu);
  gate.open = true;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  for (pthread_t t : started) pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  return static_cast<int>(started.size());
}

}  // namespace

void threads_set(int n, const std::string& what) {
  if (n > 1) {
    int error = 0;
    const int started = try_start_threads(n - 1, &error);
    SPECLAB_INPUT_CHECK(error == 0, what, ": ", n, " threads cannot be started on this machine (",
                        std::strerror(error), " after ", started + 1,
                        "); expected a thread count it can start, e.g. ", omp_get_num_procs(),
                        " (its cores)");
  }
  omp_set_num_threads(n > 0 ? n : omp_get_num_procs());
}

int threads_get() { return omp_get_max_threads(); }

bool split_over_threads(int64_t n_elements) {
  return n_elements >= kSplitElements && !omp_in_parallel() && omp_get_max_threads() > 1;
}

}  // namespace speclab
