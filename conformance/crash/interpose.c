/*
 * fsjob crash injector: an LD_PRELOAD library that counts the mutating
 * filesystem calls a whole process tree makes inside one directory, and
 * kills the tree instead of performing the k-th one, or stops the calling
 * process just before its k-th (or first matching) call so that a test can
 * run something else first, or records what each call did (trace mode).
 *
 * It exists so the conformance suite can crash-test implementations written
 * in any language (sh, Python, Node, ...) identically: the only thing they
 * need in common is that they reach the kernel through glibc's dynamic
 * symbols.
 *
 * Environment (all set by conformance/crash/run.ts; with ROOT, COUNTER or LOG
 * unset the library is a transparent pass-through, because LD_PRELOAD is
 * inherited by every command the program runs):
 *   FSJOB_CRASH_ROOT       absolute real path; only calls targeting it or
 *                          something below it are counted
 *   FSJOB_CRASH_COUNTER    file of >= 64 zero bytes, mmap(MAP_SHARED) by every
 *                          process so k is global across the tree
 *   FSJOB_CRASH_LOG        file receiving one line per counted call
 *   FSJOB_CRASH_KILL_AT    1-based k to interrupt; absent or 0 = count only
 *   FSJOB_CRASH_PGID       optional process group to kill; by default the first
 *                          process that maps the counter records its own group
 *                          there if it leads one (the driver spawns the program
 *                          as a group leader, and cannot know its pid earlier)
 *   FSJOB_CRASH_PAUSE_AT   1-based k: the process drawing it stops itself
 *                          (SIGSTOP) before performing the call; SIGCONT
 *                          resumes it and the call happens
 *   FSJOB_CRASH_PAUSE_OP, FSJOB_CRASH_PAUSE_PATH, FSJOB_CRASH_PAUSE_NTH
 *                          instead of a k: pause at the NTH (default 1) call
 *                          whose family is OP (link, rename, open, write,
 *                          fsync, ...; empty = any) and whose path or path2,
 *                          relative to the root, matches the glob PATH
 *                          (* and ?, both matching '/' too; empty = any)
 *   FSJOB_CRASH_PAUSE_READ an absolute-path glob (with FSJOB_CRASH_PAUSE_NTH):
 *                          pause at the NTH read-only open of a matching path,
 *                          inside the root or not (a judge's look at
 *                          /proc/<pid>/stat); that open alone is logged
 *   FSJOB_CRASH_TRACE, FSJOB_CRASH_TRACE_DATA
 *                          trace mode (interpose-trace.c)
 *
 * Log line, appended with O_APPEND before the call is performed:
 *   k \t pid \t op \t path \t path2 \t [interrupted|paused] \t flags \t mode \n
 * flags and mode are an open's (decimal flags, octal requested mode; for
 * mkstemp the flags glibc uses and 0600; for mkdir the mode), else empty.
 * op is the exact symbol called (openat64, renameat2, pwrite64, ...), path is
 * the absolute target (for rename/link: the source; path2 the destination;
 * for symlink: path is the link, path2 the literal link text). Backslash, tab
 * and newline inside paths are escaped as \\, \t and \n.
 *
 * Known limits:
 *   - Static binaries and programs issuing raw syscalls (Go) bypass LD_PRELOAD.
 *   - glibc's internal calls are invisible: libc functions reach the kernel
 *     through non-interposable internal aliases. fopen/freopen are wrapped
 *     themselves; stdio output is seen only at an explicit fflush/fclose that
 *     has buffered output (counted as the write it is about to do). Implicit
 *     flushes (newline on a line-buffered stream, full buffer, exit-time
 *     flush, fflush(NULL), unbuffered stderr) are not, so bash's builtin
 *     `echo y > f` shows up only as its open. mkstemp-family calls are
 *     counted with their XXXXXX template as the path.
 *   - libuv may do file I/O through io_uring; the driver sets
 *     UV_USE_IO_URING=0. Writes through shared mmaps are not seen either.
 *   - Processes that scrub their environment (env -i) or setsid() away from
 *     the group escape; any of them that makes a counted call after the kill
 *     point still dies before performing it.
 *   - In concurrent programs a call with k < KILL_AT may be logged but not yet
 *     performed when the group dies; for sequential programs the on-disk
 *     state is exactly the effect of calls 1..k-1.
 *   - Needs /proc for fd and directory resolution.
 */
#include "interpose.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

HIDDEN struct shared *g_shared;
static char g_root[PATH_MAX];
static size_t g_root_len;
static char g_log[PATH_MAX];
static uint64_t g_kill_at;
static long g_pgid_override;
static uint64_t g_pause_at;
static char g_pause_op[32];
static char g_pause_glob[PATH_MAX];
static uint64_t g_pause_nth;
static int g_pause_match; /* a pattern was given */
/* FSJOB_CRASH_PAUSE_READ: an absolute-path glob; the nth read-only open of a
 * matching path (anywhere, e.g. /proc/123/stat) pauses, and is logged as a
 * call so the driver can report it. Reads are never counted otherwise. */
static char g_pause_read[PATH_MAX];
/* FSJOB_CRASH_FAULT_*: a link or rename whose family and path match fails
 * with FAULT_ERRNO, before the call (not performed) or, with FAULT_AFTER,
 * after it succeeded (performed, then reported failed: a network client
 * whose reply was lost). FAULT_NTH picks one match (0: every match);
 * FAULT_UPTO takes the first UPTO matches only; FAULT_PLANT (an absolute
 * path) is hard-linked at a failing link's destination first, so that the
 * EEXIST is a race really lost to a rival whose record stands there. */
static char g_fault_op[32];
static char g_fault_glob[PATH_MAX];
static int g_fault_errno;
static int g_fault_after;
static uint64_t g_fault_nth;
static uint64_t g_fault_upto;
static char g_fault_plant[PATH_MAX];
/* The fault the calling thread's current call draws, for its wrapper. */
static __thread int t_fault_errno;
static __thread int t_fault_after;
static int g_trace;
static int g_enabled;
static int g_state; /* 0 = not initialised, 1 = initialising, 2 = ready */
static __thread int t_initialising;

HIDDEN int trace_init(void); /* interpose-trace.c */

/* ---------- small helpers that never touch intercepted functions ---------- */

static int copy_env(char *dst, size_t cap, const char *value) {
  size_t len = strlen(value);
  if (len == 0 || len >= cap) return 0;
  memcpy(dst, value, len + 1);
  return 1;
}

static uint64_t parse_u64(const char *s) {
  uint64_t v = 0;
  if (!s) return 0;
  for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (uint64_t)(*s - '0');
  return v;
}

static void do_init(void) {
  const char *root = getenv("FSJOB_CRASH_ROOT");
  const char *counter = getenv("FSJOB_CRASH_COUNTER");
  const char *log = getenv("FSJOB_CRASH_LOG");
  if (!root || !counter || !log || root[0] != '/') return;
  if (!copy_env(g_root, sizeof g_root, root) || !copy_env(g_log, sizeof g_log, log)) return;
  g_root_len = strlen(g_root);
  while (g_root_len > 1 && g_root[g_root_len - 1] == '/') g_root[--g_root_len] = '\0';
  g_kill_at = parse_u64(getenv("FSJOB_CRASH_KILL_AT"));
  g_pgid_override = (long)parse_u64(getenv("FSJOB_CRASH_PGID"));
  g_pause_at = parse_u64(getenv("FSJOB_CRASH_PAUSE_AT"));
  const char *pause_op = getenv("FSJOB_CRASH_PAUSE_OP");
  const char *pause_path = getenv("FSJOB_CRASH_PAUSE_PATH");
  if (pause_op && *pause_op) g_pause_match = copy_env(g_pause_op, sizeof g_pause_op, pause_op);
  if (pause_path && *pause_path) g_pause_match = copy_env(g_pause_glob, sizeof g_pause_glob, pause_path);
  const char *pause_read = getenv("FSJOB_CRASH_PAUSE_READ");
  if (pause_read && pause_read[0] == '/') copy_env(g_pause_read, sizeof g_pause_read, pause_read);
  g_pause_nth = parse_u64(getenv("FSJOB_CRASH_PAUSE_NTH"));
  const char *fault_op = getenv("FSJOB_CRASH_FAULT_OP");
  if (fault_op && *fault_op) copy_env(g_fault_op, sizeof g_fault_op, fault_op);
  const char *fault_path = getenv("FSJOB_CRASH_FAULT_PATH");
  if (fault_path && *fault_path) copy_env(g_fault_glob, sizeof g_fault_glob, fault_path);
  g_fault_errno = (int)parse_u64(getenv("FSJOB_CRASH_FAULT_ERRNO"));
  g_fault_after = parse_u64(getenv("FSJOB_CRASH_FAULT_AFTER")) != 0;
  g_fault_nth = parse_u64(getenv("FSJOB_CRASH_FAULT_NTH"));
  g_fault_upto = parse_u64(getenv("FSJOB_CRASH_FAULT_UPTO"));
  const char *fault_plant = getenv("FSJOB_CRASH_FAULT_PLANT");
  if (fault_plant && fault_plant[0] == '/') copy_env(g_fault_plant, sizeof g_fault_plant, fault_plant);
  if (g_pause_nth == 0) g_pause_nth = 1;

  int fd = (int)syscall(SYS_openat, AT_FDCWD, counter, O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  void *p = MAP_FAILED;
  /* A short file would turn the first increment into SIGBUS. */
  if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size >= (off_t)sizeof(struct shared))
    p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  syscall(SYS_close, fd);
  if (p == MAP_FAILED) return;
  g_shared = p;

  /* Only a group leader records its group, so a library loaded without the
   * driver's detached spawn can never kill some unrelated group. */
  long pid = syscall(SYS_getpid);
  long pgid = syscall(SYS_getpgid, 0);
  if (pgid == pid) {
    int64_t expected = 0;
    __atomic_compare_exchange_n(&g_shared->pgid, &expected, (int64_t)pgid, 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
  }
  g_trace = trace_init();
  g_enabled = 1;
}

static void init_once(void) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&g_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    t_initialising = 1;
    do_init();
    t_initialising = 0;
    __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
    return;
  }
  /* A signal handler interrupting our own initialisation must not spin. */
  if (t_initialising) return;
  while (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) syscall(SYS_sched_yield);
}

/* Calls made by other libraries' constructors can precede ours. */
__attribute__((constructor)) static void fsjob_crash_init(void) { init_once(); }

HIDDEN int enabled(void) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) init_once();
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == 2 && g_enabled;
}

HIDDEN int tracing(void) { return g_trace; }

HIDDEN void *next_symbol(void **slot, const char *name) {
  void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!fn) {
    fn = dlsym(RTLD_NEXT, name);
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

/* ------------------------------ path logic ------------------------------ */

static size_t put_str(char *dst, size_t pos, size_t cap, const char *s) {
  while (*s && pos + 1 < cap) dst[pos++] = *s++;
  dst[pos < cap ? pos : cap - 1] = '\0';
  return pos;
}

HIDDEN int fd_path(int fd, char *out, size_t cap) {
  if (fd == AT_FDCWD) {
    long n = syscall(SYS_getcwd, out, cap);
    return n > 0 && out[0] == '/'; /* "(unreachable)..." is not a path */
  }
  if (fd < 0) return 0;
  char proc[40] = "/proc/self/fd/";
  char digits[16];
  int nd = 0;
  unsigned v = (unsigned)fd;
  do digits[nd++] = (char)('0' + v % 10); while ((v /= 10) && nd < (int)sizeof digits);
  size_t pos = strlen(proc);
  while (nd) proc[pos++] = digits[--nd];
  proc[pos] = '\0';
  long n = syscall(SYS_readlink, proc, out, cap - 1);
  if (n <= 0) return 0;
  out[n] = '\0';
  return out[0] == '/'; /* pipe:[..], socket:[..], anon_inode:.. never count */
}

/* Append `rel` to the absolute `out`, folding "." and ".." lexically. Used
 * only when the parent directory cannot be opened (the call will then fail,
 * but it is still counted deterministically). */
static int lexical_join(char *out, size_t cap, const char *rel) {
  size_t len = strlen(out);
  const char *p = rel;
  while (*p) {
    while (*p == '/') p++;
    const char *start = p;
    while (*p && *p != '/') p++;
    size_t n = (size_t)(p - start);
    if (n == 0 || (n == 1 && start[0] == '.')) continue;
    if (n == 2 && start[0] == '.' && start[1] == '.') {
      while (len > 1 && out[len - 1] != '/') len--;
      if (len > 1) len--;
      out[len] = '\0';
      continue;
    }
    if (len + 1 + n + 1 > cap) return 0;
    if (len > 1) out[len++] = '/';
    memcpy(out + len, start, n);
    len += n;
    out[len] = '\0';
  }
  return 1;
}

/* Absolute path of what `path` (relative to dirfd) names: the real path of
 * its parent plus its last component, which is deliberately not followed. */
HIDDEN int resolve_at(int dirfd, const char *path, char *out, size_t cap) {
  if (!path || !*path) return fd_path(dirfd, out, cap); /* AT_EMPTY_PATH, utimensat(fd, NULL) */
  char buf[PATH_MAX];
  size_t len = strlen(path);
  if (len >= sizeof buf) return 0;
  memcpy(buf, path, len + 1);
  while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';

  char *slash = strrchr(buf, '/');
  const char *name = slash ? slash + 1 : buf;
  const char *parent;
  if (!strcmp(name, ".") || !strcmp(name, "..") || (slash && !*name)) {
    parent = buf; /* ".", "..", "/": the whole path is a directory */
    name = "";
  } else if (!slash) {
    parent = ".";
  } else if (slash == buf) {
    parent = "/";
  } else {
    *slash = '\0';
    parent = buf;
  }

  int ok;
  int pfd = (int)syscall(SYS_openat, dirfd, parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pfd >= 0) {
    ok = fd_path(pfd, out, cap);
    syscall(SYS_close, pfd);
  } else if (parent[0] == '/') {
    out[0] = '/';
    out[1] = '\0';
    ok = lexical_join(out, cap, parent);
  } else {
    ok = fd_path(dirfd, out, cap) && lexical_join(out, cap, parent);
  }
  if (!ok) return 0;
  if (*name) {
    size_t pos = strlen(out);
    if (pos > 1) pos = put_str(out, pos, cap, "/");
    put_str(out, pos, cap, name);
  }
  return 1;
}

static int in_root(const char *p) {
  if (g_root_len == 1) return p[0] == '/';
  return strncmp(p, g_root, g_root_len) == 0 && (p[g_root_len] == '\0' || p[g_root_len] == '/');
}

/* ------------------------------- pausing ------------------------------- */

/* The family of a libc symbol, as conformance/crash/run.ts callFamily()
 * names it. Order matters where one name prefixes another. */
static const char *family_of(const char *op) {
  static const char *const rules[][2] = {
      {"mkdtemp", "mktemp"},   {"mkstemp", "mktemp"},         {"mkostemp", "mktemp"},
      {"mkdir", "mkdir"},      {"mkfifo", "mknod"},           {"mknod", "mknod"},
      {"__xmknod", "mknod"},   {"rename", "rename"},          {"linkat", "link"},
      {"link", "link"},        {"symlink", "symlink"},        {"unlink", "unlink"},
      {"rmdir", "rmdir"},      {"remove", "remove"},          {"chmod", "chmod"},
      {"fchmod", "chmod"},     {"truncate", "truncate"},      {"ftruncate", "truncate"},
      {"fallocate", "fallocate"}, {"posix_fallocate", "fallocate"}, {"fsync", "fsync"},
      {"fdatasync", "fsync"},  {"sync_file_range", "fsync"},  {"syncfs", "fsync"},
      {"sync", "fsync"},       {"utimensat", "utime"},        {"futimens", "utime"},
      {"write", "write"},      {"pwrite", "write"},           {"copy_file_range", "write"},
      {"sendfile", "write"},   {"fflush", "write"},           {"fclose", "write"},
      {"open", "open"},        {"__open", "open"},            {"creat", "open"},
      {"fopen", "open"},       {"freopen", "open"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    size_t n = strlen(rules[i][0]);
    if (strncmp(op, rules[i][0], n) == 0) return rules[i][1];
  }
  return op;
}

/* Glob with * and ? (both match '/'), no classes: enough for paths of a
 * queue, and free of fnmatch's locale machinery. */
static int glob_match(const char *pattern, const char *text) {
  const char *star = NULL, *resume = NULL;
  while (*text) {
    if (*pattern == '*') {
      star = pattern++;
      resume = text;
    } else if (*pattern == '?' || *pattern == *text) {
      pattern++;
      text++;
    } else if (star) {
      pattern = star + 1;
      text = ++resume;
    } else {
      return 0;
    }
  }
  while (*pattern == '*') pattern++;
  return *pattern == '\0';
}

static const char *relative(const char *p) {
  if (!p || !in_root(p)) return NULL;
  if (g_root_len == 1) return p[1] ? p + 1 : ".";
  return p[g_root_len] == '/' ? p + g_root_len + 1 : ".";
}

static int pause_matches(const char *op, const char *path, const char *path2) {
  if (g_pause_op[0] && strcmp(family_of(op), g_pause_op) != 0) return 0;
  if (!g_pause_glob[0]) return 1;
  const char *a = relative(path), *b = relative(path2);
  return (a && glob_match(g_pause_glob, a)) || (b && glob_match(g_pause_glob, b));
}

/* Whether this call draws the fault; the counter of matches lives in the
 * shared page so that NTH counts across every process of the run. */
static void draw_fault(const char *op, const char *path, const char *path2) {
  t_fault_errno = 0;
  if (!g_fault_errno || !g_fault_op[0] || strcmp(family_of(op), g_fault_op) != 0) return;
  if (g_fault_glob[0]) {
    const char *a = relative(path), *b = relative(path2);
    if (!((a && glob_match(g_fault_glob, a)) || (b && glob_match(g_fault_glob, b)))) return;
  }
  uint64_t n = __atomic_add_fetch(&g_shared->fault_matches, 1, __ATOMIC_SEQ_CST);
  if (g_fault_nth && n != g_fault_nth) return;
  if (g_fault_upto && n > g_fault_upto) return;
  /* The rival's record takes the name first (the raw syscall: not counted, not interposed). */
  if (g_fault_plant[0] && path2 && !g_fault_after) syscall(SYS_linkat, AT_FDCWD, g_fault_plant, AT_FDCWD, path2, 0);
  t_fault_errno = g_fault_errno;
  t_fault_after = g_fault_after;
}

HIDDEN int take_fault(int *after) {
  int e = t_fault_errno;
  *after = t_fault_after;
  t_fault_errno = 0;
  return e;
}

static int should_pause(uint64_t k, const char *op, const char *path, const char *path2) {
  if (g_pause_at) return k == g_pause_at;
  if (!g_pause_match || !pause_matches(op, path, path2)) return 0;
  return __atomic_add_fetch(&g_shared->pause_matches, 1, __ATOMIC_SEQ_CST) == g_pause_nth;
}

/* ------------------------------- counting ------------------------------- */

__attribute__((noreturn)) static void die(void) {
  long pgid = g_pgid_override ? g_pgid_override : (long)__atomic_load_n(&g_shared->pgid, __ATOMIC_SEQ_CST);
  if (pgid > 1) syscall(SYS_kill, -pgid, SIGKILL);
  syscall(SYS_kill, syscall(SYS_getpid), SIGKILL);
  for (;;) syscall(SYS_pause);
}

static size_t put_escaped(char *dst, size_t pos, size_t cap, const char *s) {
  for (; s && *s && pos + 3 < cap; s++) {
    char c = *s;
    if (c == '\\' || c == '\t' || c == '\n') {
      dst[pos++] = '\\';
      dst[pos++] = c == '\\' ? '\\' : c == '\t' ? 't' : 'n';
    } else {
      dst[pos++] = c;
    }
  }
  return pos;
}

static size_t put_u64(char *dst, size_t pos, size_t cap, uint64_t v) {
  char digits[24];
  int nd = 0;
  do digits[nd++] = (char)('0' + v % 10); while ((v /= 10) && nd < (int)sizeof digits);
  while (nd && pos + 1 < cap) dst[pos++] = digits[--nd];
  return pos;
}

/* flags and mode: an open's flags and requested mode (mkdir: its mode), or
 * -1; logged after the marker field so that audits can check PUB-1, PUB-7.
 * read_pause: a read-only open chosen by FSJOB_CRASH_PAUSE_READ, which
 * pauses instead of the usual pause rules. */
static uint64_t count_call_as(const char *op, const char *path, const char *path2, long flags, long mode,
                              int read_pause) {
  uint64_t k = __atomic_add_fetch(&g_shared->counter, 1, __ATOMIC_SEQ_CST);
  /* Someone already reached the kill point: this call would happen after
   * the crash, so it must not happen at all. */
  if (g_kill_at && k > g_kill_at) die();
  int interrupted = g_kill_at && k == g_kill_at;
  int paused = !interrupted && (read_pause || (!g_pause_read[0] && should_pause(k, op, path, path2)));
  if (!interrupted) draw_fault(op, path, path2);

  char line[4 * PATH_CAP + 128];
  size_t cap = sizeof line - 32; /* room for the trailing marker and newline */
  size_t pos = put_u64(line, 0, cap, k);
  line[pos++] = '\t';
  long pid = syscall(SYS_getpid);
  pos = put_u64(line, pos, cap, (uint64_t)pid);
  line[pos++] = '\t';
  pos = put_escaped(line, pos, cap, op);
  line[pos++] = '\t';
  pos = put_escaped(line, pos, cap, path);
  line[pos++] = '\t';
  pos = put_escaped(line, pos, cap, path2);
  line[pos++] = '\t';
  if (interrupted) {
    memcpy(line + pos, "interrupted", 11);
    pos += 11;
  } else if (paused) {
    memcpy(line + pos, "paused", 6);
    pos += 6;
  }
  line[pos++] = '\t';
  if (flags >= 0) pos = put_u64(line, pos, cap, (uint64_t)flags);
  line[pos++] = '\t';
  if (mode >= 0) {
    line[pos++] = '0';
    for (int shift = 9; shift >= 0; shift -= 3) line[pos++] = (char)('0' + ((mode >> shift) & 7));
  }
  line[pos++] = '\n';

  int fd = (int)syscall(SYS_openat, AT_FDCWD, g_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    syscall(SYS_write, fd, line, pos);
    syscall(SYS_close, fd);
  }
  if (interrupted) die();
  if (paused) {
    /* The whole process stops (every thread), before the call: the driver
     * sees paused_pid, waits for state T, lets others run, then SIGCONTs.
     * The stop is sent to this thread (tgkill): it still stops every thread
     * of the process, and this one before it returns to the call. A stop
     * sent to the process (kill) is taken by whichever thread the kernel
     * picks (the main thread first), and a calling thread of a threaded
     * program could perform its call before it noticed the group stop. */
    __atomic_store_n(&g_shared->paused_k, k, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_shared->paused_pid, (int64_t)pid, __ATOMIC_SEQ_CST);
    syscall(SYS_tgkill, pid, syscall(SYS_gettid), SIGSTOP);
  }
  return k;
}

static uint64_t count_call(const char *op, const char *path, const char *path2, long flags, long mode) {
  return count_call_as(op, path, path2, flags, mode, 0);
}

/* The slow paths live out of line so uncounted calls (the vast majority:
 * pipes, ttys, files elsewhere) do not pay for their stack buffers. */
__attribute__((noinline)) static uint64_t track_fd_slow(const char *op, int fd) {
  char p[PATH_CAP];
  if (fd_path(fd, p, sizeof p) && in_root(p)) return count_call(op, p, "", -1, -1);
  return 0;
}

__attribute__((noinline)) static uint64_t track_at_slow(const char *op, int dirfd, const char *path, long flags,
                                                        long mode) {
  char p[PATH_CAP];
  if (resolve_at(dirfd, path, p, sizeof p) && in_root(p)) return count_call(op, p, "", flags, mode);
  return 0;
}

__attribute__((noinline)) static uint64_t track_pair_slow(const char *op, int d1, const char *p1, int d2,
                                                          const char *p2) {
  char a[PATH_CAP], b[PATH_CAP];
  int ra = resolve_at(d1, p1, a, sizeof a);
  int rb = resolve_at(d2, p2, b, sizeof b);
  if ((ra && in_root(a)) || (rb && in_root(b))) return count_call(op, ra ? a : "", rb ? b : "", -1, -1);
  return 0;
}

__attribute__((noinline)) static uint64_t track_symlink_slow(const char *op, const char *text, int dirfd,
                                                             const char *linkpath) {
  char p[PATH_CAP];
  if (resolve_at(dirfd, linkpath, p, sizeof p) && in_root(p)) return count_call(op, p, text, -1, -1);
  return 0;
}

/* errno must look untouched to the caller when the real call succeeds. */
#define TRACK(call)            \
  do {                         \
    if (!enabled()) return 0;  \
    int saved_ = errno;        \
    uint64_t k_ = call;        \
    errno = saved_;            \
    return k_;                 \
  } while (0)

HIDDEN uint64_t track_fd(const char *op, int fd) { TRACK(track_fd_slow(op, fd)); }
HIDDEN uint64_t track_at(const char *op, int dirfd, const char *path) { TRACK(track_at_slow(op, dirfd, path, -1, -1)); }
HIDDEN uint64_t track_open(const char *op, int dirfd, const char *path, long flags, long mode) {
  TRACK(track_at_slow(op, dirfd, path, flags, mode));
}
/* A read-only open: nothing unless FSJOB_CRASH_PAUSE_READ names it (the nth
 * match pauses; the others pass uncounted). */
__attribute__((noinline)) static uint64_t track_read_slow(const char *op, int dirfd, const char *path, long flags) {
  char p[PATH_CAP];
  if (!g_pause_read[0] || !resolve_at(dirfd, path, p, sizeof p) || !glob_match(g_pause_read, p)) return 0;
  if (__atomic_add_fetch(&g_shared->pause_matches, 1, __ATOMIC_SEQ_CST) != g_pause_nth) return 0;
  return count_call_as(op, p, "", flags, -1, 1);
}
HIDDEN uint64_t track_read_open(const char *op, int dirfd, const char *path, long flags) {
  TRACK(track_read_slow(op, dirfd, path, flags));
}
HIDDEN uint64_t track_pair(const char *op, int d1, const char *p1, int d2, const char *p2) {
  TRACK(track_pair_slow(op, d1, p1, d2, p2));
}
HIDDEN uint64_t track_symlink(const char *op, const char *text, int dirfd, const char *linkpath) {
  TRACK(track_symlink_slow(op, text, dirfd, linkpath));
}
/* sync(2) reaches every file, so it always counts, as a call on the root. */
HIDDEN uint64_t track_global(const char *op) { TRACK(count_call(op, g_root, "", -1, -1)); }
