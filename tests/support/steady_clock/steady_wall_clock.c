/* Preloaded into the redis-server processes the tests start: their wall
 * clock (the clock Redis measures key expiry with) runs at the rate of
 * CLOCK_MONOTONIC from the first reading on, so a step of the machine's wall
 * clock (a VM resumed after a pause has its clock set forward) cannot expire
 * every lease at once in the middle of a test. LEASEHOLD_CLOCK_SKEW_MS shifts
 * it by a fixed amount: a Redis node whose clock is ahead or behind.
 * Plain C without sanitizers, since redis-server is not instrumented. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);

static clock_gettime_fn real_clock_gettime;
static long long offset_ns; /* wall = monotonic + offset_ns */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static long long to_ns(const struct timespec* t) { return (long long)t->tv_sec * 1000000000LL + t->tv_nsec; }

static void init(void) {
  real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  struct timespec wall, mono;
  real_clock_gettime(CLOCK_REALTIME, &wall);
  real_clock_gettime(CLOCK_MONOTONIC, &mono);
  const char* skew = getenv("LEASEHOLD_CLOCK_SKEW_MS");
  offset_ns = to_ns(&wall) - to_ns(&mono) + (skew != NULL ? atoll(skew) * 1000000LL : 0);
}

static long long wall_ns(void) {
  pthread_once(&once, init);
  struct timespec mono;
  real_clock_gettime(CLOCK_MONOTONIC, &mono);
  return to_ns(&mono) + offset_ns;
}

int clock_gettime(clockid_t clock, struct timespec* out) {
  pthread_once(&once, init);
  if (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE) return real_clock_gettime(clock, out);
  const long long ns = wall_ns();
  out->tv_sec = (time_t)(ns / 1000000000LL);
  out->tv_nsec = (long)(ns % 1000000000LL);
  return 0;
}

int gettimeofday(struct timeval* restrict out, void* restrict zone) {
  (void)zone;
  const long long ns = wall_ns();
  out->tv_sec = (time_t)(ns / 1000000000LL);
  out->tv_usec = (suseconds_t)(ns % 1000000000LL / 1000);
  return 0;
}

time_t time(time_t* out) {
  const time_t now = (time_t)(wall_ns() / 1000000000LL);
  if (out != NULL) *out = now;
  return now;
}
