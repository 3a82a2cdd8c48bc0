/*
 * fsjob crash injector: what its three parts share.
 *
 *   interpose.c        initialisation, path resolution, counting, and the
 *                      three things a counted call can do: kill the group,
 *                      pause the process, or just be logged
 *   interpose-trace.c  trace mode: a record of each counted call's effect,
 *                      written after the call (the power-loss mode builds
 *                      crash states from it)
 *   interpose-calls.c  the libc wrappers themselves
 *   interpose-clock.c  the wall-clock offset: clock_gettime, gettimeofday,
 *                      time and timespec_get add what the driver set
 *
 * Everything here is async-signal-safe and thread-safe: the library's own
 * I/O uses syscall(2) directly so it never re-enters the wrappers.
 */
#ifndef FSJOB_INTERPOSE_H
#define FSJOB_INTERPOSE_H

#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

enum { PATH_CAP = PATH_MAX + NAME_MAX + 2 };

/* The file FSJOB_CRASH_COUNTER names, mapped MAP_SHARED by every process of
 * the tree. conformance/crash/run.ts reads it at these offsets. */
struct shared {
  uint64_t counter;       /*  0: the last k drawn */
  int64_t pgid;           /*  8: the group to kill */
  uint64_t pause_matches; /* 16: calls that matched the pause pattern */
  uint64_t blob;          /* 24: bytes reserved in the trace data file */
  int64_t paused_pid;     /* 32: the process that stopped itself at the pause point */
  uint64_t paused_k;      /* 40: its call */
  /* The wall-clock offset (interpose-clock.c), written only by the driver
   * while the run goes: a sequence count (odd while it writes) and the
   * signed nanoseconds added to CLOCK_REALTIME and every call reading it. */
  uint64_t clock_seq;     /* 48 */
  int64_t clock_offset;   /* 56 */
  uint64_t fault_matches; /* 64: calls that matched the fault pattern */
};

HIDDEN extern struct shared *g_shared;

/* Whether the library is active in this process (root, counter and log set). */
HIDDEN int enabled(void);
/* Whether trace mode is on (FSJOB_CRASH_TRACE set). */
HIDDEN int tracing(void);

HIDDEN void *next_symbol(void **slot, const char *name);

/* The next definition of `name` in `fn_`, or errno ENOSYS and `return fail`
 * when this libc lacks it (an unsupported syscall rather than a crash). */
#define NEXT(name, fail)                                                      \
  static void *slot_##name;                                                   \
  __typeof__(&name) fn_ = (__typeof__(&name))next_symbol(&slot_##name, #name); \
  if (!fn_) {                                                                 \
    errno = ENOSYS;                                                           \
    return fail;                                                              \
  }

HIDDEN int fd_path(int fd, char *out, size_t cap);
HIDDEN int resolve_at(int dirfd, const char *path, char *out, size_t cap);

/* Each returns the call's k when it counted (its target is inside the root),
 * else 0. A counted call may not return at all: the kill point. errno is
 * preserved. */
HIDDEN uint64_t track_fd(const char *op, int fd);
HIDDEN uint64_t track_at(const char *op, int dirfd, const char *path);
/* track_at that also logs the call's flags and requested mode (-1: none). */
HIDDEN uint64_t track_open(const char *op, int dirfd, const char *path, long flags, long mode);
/* A read-only open: counted (and paused) only when FSJOB_CRASH_PAUSE_READ matches it. */
HIDDEN uint64_t track_read_open(const char *op, int dirfd, const char *path, long flags);
HIDDEN uint64_t track_pair(const char *op, int d1, const char *p1, int d2, const char *p2);
/* The errno the thread's last counted call drew from FSJOB_CRASH_FAULT_* (0: none), once;
 * *after: the call is performed first and then reported failed. */
HIDDEN int take_fault(int *after);
HIDDEN uint64_t track_symlink(const char *op, const char *text, int dirfd, const char *linkpath);
HIDDEN uint64_t track_global(const char *op);

/* What the trace records about one counted call, filled by its wrapper. */
struct effect {
  uint64_t k;
  const char *op;
  long ret;
  int err;
  /* The object to stat after the call: an fd (>= 0), else dirfd + path
   * (lstat, not followed), else nothing. `pre` replaces the stat when the
   * object is gone afterwards (fclose). */
  int fd;
  int dirfd;
  const char *path;
  const struct stat *pre;
  /* The paths the record names: path (and path2) resolved like the log's. */
  int name_dirfd;
  const char *name;
  int name2_dirfd;
  const char *name2;
  const char *text; /* symlink text, logged as path2 */
  long flags;       /* open flags, renameat2/unlinkat/linkat flags */
  int64_t off;      /* where written bytes landed; -1 = at the fd's offset after the call minus ret */
  const void *data; /* bytes written (ret of them), or NULL */
  const struct iovec *iov;
  int iovcnt;
  int readback; /* data is not in memory: read the ret bytes back from the file */
};

HIDDEN void effect_init(struct effect *e, uint64_t k, const char *op);
HIDDEN void trace_effect(struct effect *e);

#endif
