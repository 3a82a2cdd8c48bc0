/*
 * fsjob crash injector: an LD_PRELOAD library that counts the mutating
 * filesystem calls a whole process tree makes inside one directory, and kills
 * the tree instead of performing the k-th one.
 *
 * It exists so the conformance suite can crash-test implementations written
 * in any language (sh, Python, Node, ...) identically: the only thing they
 * need in common is that they reach the kernel through glibc's dynamic
 * symbols.
 *
 * Environment (all set by conformance/crash/run.ts; with ROOT, COUNTER or LOG
 * unset the library is a transparent pass-through, because LD_PRELOAD is
 * inherited by every command the program runs):
 *   FSJOB_CRASH_ROOT     absolute real path; only calls targeting it or
 *                        something below it are counted
 *   FSJOB_CRASH_COUNTER  file of >= 16 zero bytes, mmap(MAP_SHARED) by every
 *                        process so k is global across the tree
 *   FSJOB_CRASH_LOG      file receiving one line per counted call
 *   FSJOB_CRASH_KILL_AT  1-based k to interrupt; absent or 0 = count only
 *   FSJOB_CRASH_PGID     optional process group to kill; by default the first
 *                        process that maps the counter records its own group
 *                        there if it leads one (the driver spawns the program
 *                        as a group leader, and cannot know its pid earlier)
 *
 * Log line, appended with O_APPEND before the call is performed:
 *   k \t pid \t op \t path \t path2 [\t interrupted] \n
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
 *
 * Everything below is async-signal-safe and thread-safe: the library's own
 * I/O uses syscall(2) directly so it never re-enters the wrappers.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* Fortify entry points and the pre-2.33 mknod ABI are not declared by the
 * headers we compile against, but binaries may still call them. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev);
int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev);

#define EXPORT __attribute__((visibility("default")))

struct shared {
  uint64_t counter;
  int64_t pgid;
};

static struct shared *g_shared;
static char g_root[PATH_MAX];
static size_t g_root_len;
static char g_log[PATH_MAX];
static uint64_t g_kill_at;
static long g_pgid_override;
static int g_enabled;
static int g_state; /* 0 = not initialised, 1 = initialising, 2 = ready */
static __thread int t_initialising;

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

static int enabled(void) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) init_once();
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == 2 && g_enabled;
}

static void *next_symbol(void **slot, const char *name) {
  void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!fn) {
    fn = dlsym(RTLD_NEXT, name);
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

/* Forward to the next definition; a symbol missing from this libc behaves
 * like an unsupported syscall rather than crashing. */
#define FORWARD(name, fail, ...)                                              \
  do {                                                                        \
    static void *slot_;                                                       \
    __typeof__(&name) fn_ = (__typeof__(&name))next_symbol(&slot_, #name);    \
    if (!fn_) {                                                               \
      errno = ENOSYS;                                                         \
      return fail;                                                            \
    }                                                                         \
    return fn_(__VA_ARGS__);                                                  \
  } while (0)

/* ------------------------------ path logic ------------------------------ */

enum { PATH_CAP = PATH_MAX + NAME_MAX + 2 };

static size_t put_str(char *dst, size_t pos, size_t cap, const char *s) {
  while (*s && pos + 1 < cap) dst[pos++] = *s++;
  dst[pos < cap ? pos : cap - 1] = '\0';
  return pos;
}

static int fd_path(int fd, char *out, size_t cap) {
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
static int resolve_at(int dirfd, const char *path, char *out, size_t cap) {
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

static void count_call(const char *op, const char *path, const char *path2) {
  uint64_t k = __atomic_add_fetch(&g_shared->counter, 1, __ATOMIC_SEQ_CST);
  /* Someone already reached the kill point: this call would happen after
   * the crash, so it must not happen at all. */
  if (g_kill_at && k > g_kill_at) die();
  int interrupted = g_kill_at && k == g_kill_at;

  char line[4 * PATH_CAP + 128];
  size_t cap = sizeof line - 32; /* room for the trailing marker and newline */
  size_t pos = put_u64(line, 0, cap, k);
  line[pos++] = '\t';
  pos = put_u64(line, pos, cap, (uint64_t)syscall(SYS_getpid));
  line[pos++] = '\t';
  pos = put_escaped(line, pos, cap, op);
  line[pos++] = '\t';
  pos = put_escaped(line, pos, cap, path);
  line[pos++] = '\t';
  pos = put_escaped(line, pos, cap, path2);
  if (interrupted) {
    memcpy(line + pos, "\tinterrupted", 12);
    pos += 12;
  }
  line[pos++] = '\n';

  int fd = (int)syscall(SYS_openat, AT_FDCWD, g_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    syscall(SYS_write, fd, line, pos);
    syscall(SYS_close, fd);
  }
  if (interrupted) die();
}

/* The slow paths live out of line so uncounted calls (the vast majority:
 * pipes, ttys, files elsewhere) do not pay for their stack buffers. */
__attribute__((noinline)) static void track_fd_slow(const char *op, int fd) {
  char p[PATH_CAP];
  if (fd_path(fd, p, sizeof p) && in_root(p)) count_call(op, p, "");
}

__attribute__((noinline)) static void track_at_slow(const char *op, int dirfd, const char *path) {
  char p[PATH_CAP];
  if (resolve_at(dirfd, path, p, sizeof p) && in_root(p)) count_call(op, p, "");
}

__attribute__((noinline)) static void track_pair_slow(const char *op, int d1, const char *p1, int d2,
                                                      const char *p2) {
  char a[PATH_CAP], b[PATH_CAP];
  int ra = resolve_at(d1, p1, a, sizeof a);
  int rb = resolve_at(d2, p2, b, sizeof b);
  if ((ra && in_root(a)) || (rb && in_root(b))) count_call(op, ra ? a : "", rb ? b : "");
}

__attribute__((noinline)) static void track_symlink_slow(const char *op, const char *text, int dirfd,
                                                         const char *linkpath) {
  char p[PATH_CAP];
  if (resolve_at(dirfd, linkpath, p, sizeof p) && in_root(p)) count_call(op, p, text);
}

/* errno must look untouched to the caller when the real call succeeds. */
#define TRACK(call)          \
  do {                       \
    if (enabled()) {         \
      int saved_ = errno;    \
      call;                  \
      errno = saved_;        \
    }                        \
  } while (0)

static void track_fd(const char *op, int fd) { TRACK(track_fd_slow(op, fd)); }
static void track_at(const char *op, int dirfd, const char *path) { TRACK(track_at_slow(op, dirfd, path)); }
static void track_pair(const char *op, int d1, const char *p1, int d2, const char *p2) {
  TRACK(track_pair_slow(op, d1, p1, d2, p2));
}
static void track_symlink(const char *op, const char *text, int dirfd, const char *linkpath) {
  TRACK(track_symlink_slow(op, text, dirfd, linkpath));
}

static int open_mutates(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
}

static int needs_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

#define TAKE_MODE(flags, last)       \
  mode_t mode = 0;                   \
  if (needs_mode(flags)) {           \
    va_list ap;                      \
    va_start(ap, last);              \
    mode = (mode_t)va_arg(ap, int);  \
    va_end(ap);                      \
  }

/* -------------------------------- opens -------------------------------- */

EXPORT int open(const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  if (open_mutates(flags)) track_at("open", AT_FDCWD, path);
  FORWARD(open, -1, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  if (open_mutates(flags)) track_at("open64", AT_FDCWD, path);
  FORWARD(open64, -1, path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  if (open_mutates(flags)) track_at("openat", dirfd, path);
  FORWARD(openat, -1, dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  if (open_mutates(flags)) track_at("openat64", dirfd, path);
  FORWARD(openat64, -1, dirfd, path, flags, mode);
}

EXPORT int __open_2(const char *path, int flags) {
  if (open_mutates(flags)) track_at("__open_2", AT_FDCWD, path);
  FORWARD(__open_2, -1, path, flags);
}

EXPORT int __open64_2(const char *path, int flags) {
  if (open_mutates(flags)) track_at("__open64_2", AT_FDCWD, path);
  FORWARD(__open64_2, -1, path, flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags) {
  if (open_mutates(flags)) track_at("__openat_2", dirfd, path);
  FORWARD(__openat_2, -1, dirfd, path, flags);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
  if (open_mutates(flags)) track_at("__openat64_2", dirfd, path);
  FORWARD(__openat64_2, -1, dirfd, path, flags);
}

EXPORT int creat(const char *path, mode_t mode) {
  track_at("creat", AT_FDCWD, path);
  FORWARD(creat, -1, path, mode);
}

EXPORT int creat64(const char *path, mode_t mode) {
  track_at("creat64", AT_FDCWD, path);
  FORWARD(creat64, -1, path, mode);
}

/* fopen opens through a glibc-internal alias, so it is seen only here. */
static int fopen_mutates(const char *mode) { return mode && strpbrk(mode, "wa+") != NULL; }

EXPORT FILE *fopen(const char *path, const char *mode) {
  if (fopen_mutates(mode)) track_at("fopen", AT_FDCWD, path);
  FORWARD(fopen, NULL, path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode) {
  if (fopen_mutates(mode)) track_at("fopen64", AT_FDCWD, path);
  FORWARD(fopen64, NULL, path, mode);
}

/* freopen(NULL, ...) only changes the mode of the stream's current file. */
EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp) {
  if (path && fopen_mutates(mode)) track_at("freopen", AT_FDCWD, path);
  FORWARD(freopen, NULL, path, mode, fp);
}

EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp) {
  if (path && fopen_mutates(mode)) track_at("freopen64", AT_FDCWD, path);
  FORWARD(freopen64, NULL, path, mode, fp);
}

/* mkstemp and friends open through glibc-internal aliases, so the template
 * (whose parent is the target directory) is the only thing we can see. */
#define TEMPFILE(name, fail, ...)        \
  track_at(#name, AT_FDCWD, tmpl);       \
  FORWARD(name, fail, __VA_ARGS__)

EXPORT int mkstemp(char *tmpl) { TEMPFILE(mkstemp, -1, tmpl); }
EXPORT int mkstemp64(char *tmpl) { TEMPFILE(mkstemp64, -1, tmpl); }
EXPORT int mkostemp(char *tmpl, int flags) { TEMPFILE(mkostemp, -1, tmpl, flags); }
EXPORT int mkostemp64(char *tmpl, int flags) { TEMPFILE(mkostemp64, -1, tmpl, flags); }
EXPORT int mkstemps(char *tmpl, int suffixlen) { TEMPFILE(mkstemps, -1, tmpl, suffixlen); }
EXPORT int mkstemps64(char *tmpl, int suffixlen) { TEMPFILE(mkstemps64, -1, tmpl, suffixlen); }
EXPORT int mkostemps(char *tmpl, int suffixlen, int flags) { TEMPFILE(mkostemps, -1, tmpl, suffixlen, flags); }
EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags) {
  TEMPFILE(mkostemps64, -1, tmpl, suffixlen, flags);
}
EXPORT char *mkdtemp(char *tmpl) { TEMPFILE(mkdtemp, NULL, tmpl); }

/* --------------------------- namespace changes --------------------------- */

EXPORT int mkdir(const char *path, mode_t mode) {
  track_at("mkdir", AT_FDCWD, path);
  FORWARD(mkdir, -1, path, mode);
}

EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) {
  track_at("mkdirat", dirfd, path);
  FORWARD(mkdirat, -1, dirfd, path, mode);
}

EXPORT int rename(const char *from, const char *to) {
  track_pair("rename", AT_FDCWD, from, AT_FDCWD, to);
  FORWARD(rename, -1, from, to);
}

EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to) {
  track_pair("renameat", fromfd, from, tofd, to);
  FORWARD(renameat, -1, fromfd, from, tofd, to);
}

EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
  track_pair("renameat2", fromfd, from, tofd, to);
  FORWARD(renameat2, -1, fromfd, from, tofd, to, flags);
}

EXPORT int link(const char *from, const char *to) {
  track_pair("link", AT_FDCWD, from, AT_FDCWD, to);
  FORWARD(link, -1, from, to);
}

EXPORT int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
  track_pair("linkat", fromfd, from, tofd, to);
  FORWARD(linkat, -1, fromfd, from, tofd, to, flags);
}

EXPORT int symlink(const char *text, const char *linkpath) {
  track_symlink("symlink", text, AT_FDCWD, linkpath);
  FORWARD(symlink, -1, text, linkpath);
}

EXPORT int symlinkat(const char *text, int dirfd, const char *linkpath) {
  track_symlink("symlinkat", text, dirfd, linkpath);
  FORWARD(symlinkat, -1, text, dirfd, linkpath);
}

EXPORT int unlink(const char *path) {
  track_at("unlink", AT_FDCWD, path);
  FORWARD(unlink, -1, path);
}

EXPORT int unlinkat(int dirfd, const char *path, int flags) {
  track_at("unlinkat", dirfd, path);
  FORWARD(unlinkat, -1, dirfd, path, flags);
}

EXPORT int rmdir(const char *path) {
  track_at("rmdir", AT_FDCWD, path);
  FORWARD(rmdir, -1, path);
}

EXPORT int remove(const char *path) {
  track_at("remove", AT_FDCWD, path);
  FORWARD(remove, -1, path);
}

EXPORT int mknod(const char *path, mode_t mode, dev_t dev) {
  track_at("mknod", AT_FDCWD, path);
  FORWARD(mknod, -1, path, mode, dev);
}

EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev) {
  track_at("mknodat", dirfd, path);
  FORWARD(mknodat, -1, dirfd, path, mode, dev);
}

EXPORT int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev) {
  track_at("__xmknod", AT_FDCWD, path);
  FORWARD(__xmknod, -1, ver, path, mode, dev);
}

EXPORT int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev) {
  track_at("__xmknodat", dirfd, path);
  FORWARD(__xmknodat, -1, ver, dirfd, path, mode, dev);
}

EXPORT int mkfifo(const char *path, mode_t mode) {
  track_at("mkfifo", AT_FDCWD, path);
  FORWARD(mkfifo, -1, path, mode);
}

EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode) {
  track_at("mkfifoat", dirfd, path);
  FORWARD(mkfifoat, -1, dirfd, path, mode);
}

/* ------------------------------- metadata ------------------------------- */

EXPORT int chmod(const char *path, mode_t mode) {
  track_at("chmod", AT_FDCWD, path);
  FORWARD(chmod, -1, path, mode);
}

EXPORT int fchmod(int fd, mode_t mode) {
  track_fd("fchmod", fd);
  FORWARD(fchmod, -1, fd, mode);
}

EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags) {
  track_at("fchmodat", dirfd, path);
  FORWARD(fchmodat, -1, dirfd, path, mode, flags);
}

EXPORT int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags) {
  track_at("utimensat", dirfd, path);
  FORWARD(utimensat, -1, dirfd, path, times, flags);
}

EXPORT int futimens(int fd, const struct timespec times[2]) {
  track_fd("futimens", fd);
  FORWARD(futimens, -1, fd, times);
}

/* ------------------------------ file sizes ------------------------------ */

EXPORT int truncate(const char *path, off_t length) {
  track_at("truncate", AT_FDCWD, path);
  FORWARD(truncate, -1, path, length);
}

EXPORT int truncate64(const char *path, off64_t length) {
  track_at("truncate64", AT_FDCWD, path);
  FORWARD(truncate64, -1, path, length);
}

EXPORT int ftruncate(int fd, off_t length) {
  track_fd("ftruncate", fd);
  FORWARD(ftruncate, -1, fd, length);
}

EXPORT int ftruncate64(int fd, off64_t length) {
  track_fd("ftruncate64", fd);
  FORWARD(ftruncate64, -1, fd, length);
}

EXPORT int fallocate(int fd, int mode, off_t offset, off_t len) {
  track_fd("fallocate", fd);
  FORWARD(fallocate, -1, fd, mode, offset, len);
}

EXPORT int fallocate64(int fd, int mode, off64_t offset, off64_t len) {
  track_fd("fallocate64", fd);
  FORWARD(fallocate64, -1, fd, mode, offset, len);
}

/* posix_fallocate reports errors as its return value, not through errno. */
EXPORT int posix_fallocate(int fd, off_t offset, off_t len) {
  track_fd("posix_fallocate", fd);
  FORWARD(posix_fallocate, ENOSYS, fd, offset, len);
}

EXPORT int posix_fallocate64(int fd, off64_t offset, off64_t len) {
  track_fd("posix_fallocate64", fd);
  FORWARD(posix_fallocate64, ENOSYS, fd, offset, len);
}

/* -------------------------------- writes -------------------------------- */

EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  track_fd("write", fd);
  FORWARD(write, -1, fd, buf, n);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
  track_fd("pwrite", fd);
  FORWARD(pwrite, -1, fd, buf, n, offset);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t offset) {
  track_fd("pwrite64", fd);
  FORWARD(pwrite64, -1, fd, buf, n, offset);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  track_fd("writev", fd);
  FORWARD(writev, -1, fd, iov, iovcnt);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
  track_fd("pwritev", fd);
  FORWARD(pwritev, -1, fd, iov, iovcnt, offset);
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off64_t offset) {
  track_fd("pwritev64", fd);
  FORWARD(pwritev64, -1, fd, iov, iovcnt, offset);
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags) {
  track_fd("pwritev2", fd);
  FORWARD(pwritev2, -1, fd, iov, iovcnt, offset, flags);
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t offset, int flags) {
  track_fd("pwritev64v2", fd);
  FORWARD(pwritev64v2, -1, fd, iov, iovcnt, offset, flags);
}

EXPORT ssize_t copy_file_range(int infd, off64_t *inoff, int outfd, off64_t *outoff, size_t n,
                               unsigned int flags) {
  track_fd("copy_file_range", outfd);
  FORWARD(copy_file_range, -1, infd, inoff, outfd, outoff, n, flags);
}

EXPORT ssize_t sendfile(int outfd, int infd, off_t *offset, size_t n) {
  track_fd("sendfile", outfd);
  FORWARD(sendfile, -1, outfd, infd, offset, n);
}

EXPORT ssize_t sendfile64(int outfd, int infd, off64_t *offset, size_t n) {
  track_fd("sendfile64", outfd);
  FORWARD(sendfile64, -1, outfd, infd, offset, n);
}

/* stdio writes reach the kernel through glibc-internal aliases, but its
 * explicit flush points are public: count a flush or close that has buffered
 * output for a file in the root as the write it is about to perform. This is
 * what makes bash's builtin echo/printf > file and coreutils' exit-time
 * fclose(stdout) visible. */
static int stdio_pending(FILE *fp) { return fp && fp->_IO_write_ptr > fp->_IO_write_base; }

EXPORT int fflush(FILE *fp) {
  if (stdio_pending(fp)) track_fd("fflush", fp->_fileno);
  FORWARD(fflush, EOF, fp);
}

EXPORT int fflush_unlocked(FILE *fp) {
  if (stdio_pending(fp)) track_fd("fflush_unlocked", fp->_fileno);
  FORWARD(fflush_unlocked, EOF, fp);
}

EXPORT int fclose(FILE *fp) {
  if (stdio_pending(fp)) track_fd("fclose", fp->_fileno);
  FORWARD(fclose, EOF, fp);
}

/* ------------------------------ durability ------------------------------ */

EXPORT int fsync(int fd) {
  track_fd("fsync", fd);
  FORWARD(fsync, -1, fd);
}

EXPORT int fdatasync(int fd) {
  track_fd("fdatasync", fd);
  FORWARD(fdatasync, -1, fd);
}

EXPORT int sync_file_range(int fd, off64_t offset, off64_t n, unsigned int flags) {
  track_fd("sync_file_range", fd);
  FORWARD(sync_file_range, -1, fd, offset, n, flags);
}
