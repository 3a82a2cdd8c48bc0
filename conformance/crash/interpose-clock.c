/*
 * The crash injector's wall-clock offset: a case moves the wall clock of a
 * running implementation (LEASE-4: "wall clocks jump") without touching the
 * host's. CLOCK_REALTIME is not namespaced (time namespaces move only the
 * monotonic and boot clocks), so the library adds the offset itself to what
 * every wall-clock reading of the run's processes returns:
 *
 *   clock_gettime   CLOCK_REALTIME and CLOCK_REALTIME_COARSE only; the
 *                   monotonic, boot-time and CPU clocks are passed through
 *   gettimeofday    (Node's Date.now() through libuv, bash's EPOCHREALTIME)
 *   time            (seconds, as the offset clock has them)
 *   timespec_get    TIME_UTC
 *
 * The offset lives in the shared counter file (struct shared: clock_seq,
 * clock_offset), written only by the driver (run.ts setWallClockOffset):
 * clock_seq is odd while it writes, so a reader retries instead of taking a
 * half-written value. With the library disabled, or the offset 0, every
 * call is the real one.
 *
 * Not seen: programs that read the clock without libc's dynamic symbols (a
 * static binary, Go's runtime calling the vDSO directly, raw syscalls), and
 * file timestamps, which the kernel sets from its own clock.
 */
#include "interpose.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { NS_PER_S = 1000000000 };

/* The offset now, in nanoseconds (0 when the library is off). */
static int64_t clock_offset(void) {
  if (!enabled() || !g_shared) return 0;
  int64_t value = 0;
  /* The driver's three writes take microseconds; a bound keeps a driver
   * killed mid-write from hanging the program (it then takes the last value). */
  for (int tries = 0; tries < 100000; tries++) {
    uint64_t before = __atomic_load_n(&g_shared->clock_seq, __ATOMIC_ACQUIRE);
    value = __atomic_load_n(&g_shared->clock_offset, __ATOMIC_ACQUIRE);
    uint64_t after = __atomic_load_n(&g_shared->clock_seq, __ATOMIC_ACQUIRE);
    if (before == after && (before & 1) == 0) return value;
    syscall(SYS_sched_yield);
  }
  return value;
}

static void shift(struct timespec *ts, int64_t offset) {
  int64_t sec = (int64_t)ts->tv_sec + offset / NS_PER_S;
  int64_t nsec = (int64_t)ts->tv_nsec + offset % NS_PER_S;
  if (nsec < 0) {
    nsec += NS_PER_S;
    sec -= 1;
  } else if (nsec >= NS_PER_S) {
    nsec -= NS_PER_S;
    sec += 1;
  }
  ts->tv_sec = (time_t)sec;
  ts->tv_nsec = (long)nsec;
}

static int is_wall(clockid_t id) { return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE; }

EXPORT int clock_gettime(clockid_t id, struct timespec *ts) {
  NEXT(clock_gettime, -1);
  int r = fn_(id, ts);
  if (r == 0 && ts && is_wall(id)) {
    int64_t offset = clock_offset();
    if (offset) shift(ts, offset);
  }
  return r;
}

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  NEXT(gettimeofday, -1);
  int r = fn_(tv, tz);
  if (r == 0 && tv) {
    int64_t offset = clock_offset();
    if (offset) {
      struct timespec ts = {tv->tv_sec, (long)tv->tv_usec * 1000};
      shift(&ts, offset);
      tv->tv_sec = ts.tv_sec;
      tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
    }
  }
  return r;
}

EXPORT time_t time(time_t *out) {
  NEXT(time, (time_t)-1);
  int64_t offset = clock_offset();
  if (!offset) return fn_(out);
  /* Whole seconds of the offset clock, as clock_gettime would give them. */
  struct timespec ts;
  if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0) return fn_(out);
  shift(&ts, offset);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}

EXPORT int timespec_get(struct timespec *ts, int base) {
  NEXT(timespec_get, 0);
  int r = fn_(ts, base);
  if (r == TIME_UTC && ts) {
    int64_t offset = clock_offset();
    if (offset) shift(ts, offset);
  }
  return r;
}
