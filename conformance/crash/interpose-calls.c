/*
 * The libc wrappers of the crash injector. Each counts its call when the
 * target is inside the root (interpose.c: which may kill or pause here),
 * performs it, and in trace mode records its effect (interpose-trace.c).
 *
 * Counting rules: opens count only if they can modify (O_WRONLY, O_RDWR,
 * O_CREAT or O_TRUNC; fopen modes w, a, +); path calls when their target is
 * inside the root (either side for rename and link); fd calls when the fd's
 * /proc/self/fd link resolves inside it. See crash/README.md.
 */
#include "interpose.h"

#include <stdarg.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Fortify entry points and the pre-2.33 mknod ABI are not declared by the
 * headers we compile against, but binaries may still call them. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev);
int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev);

/* After the real call: in trace mode, record its effect. `r_` is the call's
 * result (negative = failed, errno says why); the trailing arguments fill
 * the effect `e_` (see struct effect). errno is left as the call set it. */
#define AFTER(k_, op_, r_, ...)                       \
  do {                                                \
    if ((k_) && tracing()) {                          \
      int saved_ = errno;                             \
      struct effect e_;                               \
      effect_init(&e_, (k_), (op_));                  \
      e_.ret = (long)(r_);                            \
      e_.err = (r_) < 0 ? saved_ : 0;                 \
      __VA_ARGS__;                                    \
      trace_effect(&e_);                              \
      errno = saved_;                                 \
    }                                                 \
  } while (0)

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

#define OPEN_AT(op, d_, p_, f_, m_, call)                                 \
  uint64_t k = open_mutates(f_) ? track_open(#op, d_, p_, f_, needs_mode(f_) ? (long)(m_) : -1) : track_read_open(#op, d_, p_, f_); \
  NEXT(op, -1);                                                           \
  int r = call;                                                           \
  AFTER(k, #op, r, e_.fd = r, e_.name_dirfd = d_, e_.name = p_, e_.flags = f_); \
  return r

EXPORT int open(const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  OPEN_AT(open, AT_FDCWD, path, flags, mode, fn_(path, flags, mode));
}

EXPORT int open64(const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  OPEN_AT(open64, AT_FDCWD, path, flags, mode, fn_(path, flags, mode));
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  OPEN_AT(openat, dirfd, path, flags, mode, fn_(dirfd, path, flags, mode));
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
  TAKE_MODE(flags, flags);
  OPEN_AT(openat64, dirfd, path, flags, mode, fn_(dirfd, path, flags, mode));
}

EXPORT int __open_2(const char *path, int flags) { OPEN_AT(__open_2, AT_FDCWD, path, flags, 0, fn_(path, flags)); }
EXPORT int __open64_2(const char *path, int flags) { OPEN_AT(__open64_2, AT_FDCWD, path, flags, 0, fn_(path, flags)); }
EXPORT int __openat_2(int dirfd, const char *path, int flags) {
  OPEN_AT(__openat_2, dirfd, path, flags, 0, fn_(dirfd, path, flags));
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
  OPEN_AT(__openat64_2, dirfd, path, flags, 0, fn_(dirfd, path, flags));
}

EXPORT int creat(const char *path, mode_t mode) {
  OPEN_AT(creat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, fn_(path, mode));
}

EXPORT int creat64(const char *path, mode_t mode) {
  OPEN_AT(creat64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, fn_(path, mode));
}

/* fopen opens through a glibc-internal alias, so it is seen only here. */
static int fopen_mutates(const char *mode) { return mode && strpbrk(mode, "wa+") != NULL; }

static long fopen_flags(const char *mode) {
  long flags = strchr(mode, '+') ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
  if (mode[0] == 'w') flags |= O_CREAT | O_TRUNC;
  if (mode[0] == 'a') flags |= O_CREAT | O_APPEND;
  if (strchr(mode, 'x')) flags |= O_EXCL;
  return flags;
}

#define FOPEN(op, p_, m_, call)                                                        \
  uint64_t k = !p_ ? 0 : fopen_mutates(m_) ? track_open(#op, AT_FDCWD, p_, fopen_flags(m_), -1) : track_read_open(#op, AT_FDCWD, p_, O_RDONLY); \
  NEXT(op, NULL);                                                                     \
  FILE *fp = call;                                                                    \
  int r = fp ? fileno(fp) : -1;                                                       \
  AFTER(k, #op, r, e_.fd = r, e_.name = p_, e_.flags = fopen_flags(m_));              \
  return fp

EXPORT FILE *fopen(const char *path, const char *mode) { FOPEN(fopen, path, mode, fn_(path, mode)); }
EXPORT FILE *fopen64(const char *path, const char *mode) { FOPEN(fopen64, path, mode, fn_(path, mode)); }
/* freopen(NULL, ...) only changes the mode of the stream's current file. */
EXPORT FILE *freopen(const char *path, const char *mode, FILE *old) { FOPEN(freopen, path, mode, fn_(path, mode, old)); }
EXPORT FILE *freopen64(const char *path, const char *mode, FILE *old) {
  FOPEN(freopen64, path, mode, fn_(path, mode, old));
}

/* mkstemp and friends open through glibc-internal aliases, so the template
 * (whose parent is the target directory) is all the count log can show; the
 * trace names the file chosen, which the template holds afterwards. */
#define TEMPFILE(op, extra, ...)                                                    \
  uint64_t k = track_open(#op, AT_FDCWD, tmpl, O_CREAT | O_EXCL | O_RDWR | (extra), 0600); \
  NEXT(op, -1);                                                                    \
  int r = fn_(__VA_ARGS__);                                                        \
  AFTER(k, #op, r, e_.fd = r, e_.name = tmpl, e_.flags = O_CREAT | O_EXCL | O_RDWR); \
  return r

EXPORT int mkstemp(char *tmpl) { TEMPFILE(mkstemp, 0, tmpl); }
EXPORT int mkstemp64(char *tmpl) { TEMPFILE(mkstemp64, 0, tmpl); }
EXPORT int mkostemp(char *tmpl, int flags) { TEMPFILE(mkostemp, flags, tmpl, flags); }
EXPORT int mkostemp64(char *tmpl, int flags) { TEMPFILE(mkostemp64, flags, tmpl, flags); }
EXPORT int mkstemps(char *tmpl, int suffixlen) { TEMPFILE(mkstemps, 0, tmpl, suffixlen); }
EXPORT int mkstemps64(char *tmpl, int suffixlen) { TEMPFILE(mkstemps64, 0, tmpl, suffixlen); }
EXPORT int mkostemps(char *tmpl, int suffixlen, int flags) { TEMPFILE(mkostemps, flags, tmpl, suffixlen, flags); }
EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags) { TEMPFILE(mkostemps64, flags, tmpl, suffixlen, flags); }

EXPORT char *mkdtemp(char *tmpl) {
  uint64_t k = track_open("mkdtemp", AT_FDCWD, tmpl, -1, 0700);
  NEXT(mkdtemp, NULL);
  char *r = fn_(tmpl);
  AFTER(k, "mkdtemp", r ? 0 : -1, e_.path = tmpl, e_.name = tmpl);
  return r;
}

/* --------------------------- namespace changes --------------------------- */

/* A call on one name: count it, perform it, record it (and lstat the name
 * afterwards when `statted`: what it created or changed). */
#define AT_CALL(op, d_, p_, statted, f_, call)                                           \
  uint64_t k = track_at(#op, d_, p_);                                                    \
  NEXT(op, -1);                                                                          \
  int r = call;                                                                          \
  AFTER(k, #op, r, e_.dirfd = d_, e_.path = (statted) ? p_ : NULL, e_.name_dirfd = d_,   \
        e_.name = p_, e_.flags = (f_));                                                  \
  return r

/* rename and link: the destination is what exists afterwards. */
#define PAIR_CALL(op, d1, p1, d2, p2, flags_, call)                                     \
  uint64_t k = track_pair(#op, d1, p1, d2, p2);                                        \
  int after_ = 0, fault_ = k ? take_fault(&after_) : 0;                                \
  NEXT(op, -1);                                                                        \
  int r = fault_ && !after_ ? -1 : call;                                               \
  if (fault_ && (!after_ || r == 0)) {                                                 \
    r = -1;                                                                            \
    errno = fault_;                                                                    \
  }                                                                                    \
  AFTER(k, #op, r, e_.dirfd = d2, e_.path = p2, e_.name_dirfd = d1, e_.name = p1,      \
        e_.name2_dirfd = d2, e_.name2 = p2, e_.flags = (flags_));                      \
  return r

#define MKDIR_CALL(op, d_, p_, m_, call)                                                 \
  uint64_t k = track_open(#op, d_, p_, -1, (long)(m_));                                  \
  NEXT(op, -1);                                                                          \
  int r = call;                                                                          \
  AFTER(k, #op, r, e_.dirfd = d_, e_.path = p_, e_.name_dirfd = d_, e_.name = p_);        \
  return r

EXPORT int mkdir(const char *path, mode_t mode) { MKDIR_CALL(mkdir, AT_FDCWD, path, mode, fn_(path, mode)); }
EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) {
  MKDIR_CALL(mkdirat, dirfd, path, mode, fn_(dirfd, path, mode));
}

EXPORT int rename(const char *from, const char *to) { PAIR_CALL(rename, AT_FDCWD, from, AT_FDCWD, to, 0, fn_(from, to)); }
EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to) {
  PAIR_CALL(renameat, fromfd, from, tofd, to, 0, fn_(fromfd, from, tofd, to));
}
EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
  PAIR_CALL(renameat2, fromfd, from, tofd, to, flags, fn_(fromfd, from, tofd, to, flags));
}

EXPORT int link(const char *from, const char *to) { PAIR_CALL(link, AT_FDCWD, from, AT_FDCWD, to, 0, fn_(from, to)); }
EXPORT int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
  PAIR_CALL(linkat, fromfd, from, tofd, to, flags, fn_(fromfd, from, tofd, to, flags));
}

#define SYMLINK_CALL(op, t_, d_, p_, call)                                                  \
  uint64_t k = track_symlink(#op, t_, d_, p_);                                              \
  NEXT(op, -1);                                                                             \
  int r = call;                                                                             \
  AFTER(k, #op, r, e_.dirfd = d_, e_.path = p_, e_.name_dirfd = d_, e_.name = p_, e_.text = t_); \
  return r

EXPORT int symlink(const char *text, const char *linkpath) {
  SYMLINK_CALL(symlink, text, AT_FDCWD, linkpath, fn_(text, linkpath));
}
EXPORT int symlinkat(const char *text, int dirfd, const char *linkpath) {
  SYMLINK_CALL(symlinkat, text, dirfd, linkpath, fn_(text, dirfd, linkpath));
}

EXPORT int unlink(const char *path) { AT_CALL(unlink, AT_FDCWD, path, 0, 0, fn_(path)); }
EXPORT int unlinkat(int dirfd, const char *path, int flags) {
  AT_CALL(unlinkat, dirfd, path, 0, flags, fn_(dirfd, path, flags));
}
EXPORT int rmdir(const char *path) { AT_CALL(rmdir, AT_FDCWD, path, 0, AT_REMOVEDIR, fn_(path)); }
/* remove() is unlink or rmdir; which one happened is not known afterwards. */
EXPORT int remove(const char *path) { AT_CALL(remove, AT_FDCWD, path, 0, 0, fn_(path)); }

EXPORT int mknod(const char *path, mode_t mode, dev_t dev) { AT_CALL(mknod, AT_FDCWD, path, 1, 0, fn_(path, mode, dev)); }
EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev) {
  AT_CALL(mknodat, dirfd, path, 1, 0, fn_(dirfd, path, mode, dev));
}
EXPORT int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev) {
  AT_CALL(__xmknod, AT_FDCWD, path, 1, 0, fn_(ver, path, mode, dev));
}
EXPORT int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev) {
  AT_CALL(__xmknodat, dirfd, path, 1, 0, fn_(ver, dirfd, path, mode, dev));
}
EXPORT int mkfifo(const char *path, mode_t mode) { AT_CALL(mkfifo, AT_FDCWD, path, 1, 0, fn_(path, mode)); }
EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode) {
  AT_CALL(mkfifoat, dirfd, path, 1, 0, fn_(dirfd, path, mode));
}

/* ------------------------------- metadata ------------------------------- */

/* A call on a descriptor: count, perform, record (fstat afterwards). */
#define FD_CALL(op, fd_, fail, type, call)               \
  uint64_t k = track_fd(#op, fd_);                       \
  NEXT(op, fail);                                        \
  type r = call;                                         \
  AFTER(k, #op, r, e_.fd = fd_);                         \
  return r

EXPORT int chmod(const char *path, mode_t mode) { AT_CALL(chmod, AT_FDCWD, path, 1, 0, fn_(path, mode)); }
EXPORT int fchmod(int fd, mode_t mode) { FD_CALL(fchmod, fd, -1, int, fn_(fd, mode)); }
EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags) {
  AT_CALL(fchmodat, dirfd, path, 1, flags, fn_(dirfd, path, mode, flags));
}
EXPORT int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags) {
  AT_CALL(utimensat, dirfd, path, 1, flags, fn_(dirfd, path, times, flags));
}
EXPORT int futimens(int fd, const struct timespec times[2]) { FD_CALL(futimens, fd, -1, int, fn_(fd, times)); }

/* ------------------------------ file sizes ------------------------------ */

EXPORT int truncate(const char *path, off_t length) { AT_CALL(truncate, AT_FDCWD, path, 1, 0, fn_(path, length)); }
EXPORT int truncate64(const char *path, off64_t length) { AT_CALL(truncate64, AT_FDCWD, path, 1, 0, fn_(path, length)); }
EXPORT int ftruncate(int fd, off_t length) { FD_CALL(ftruncate, fd, -1, int, fn_(fd, length)); }
EXPORT int ftruncate64(int fd, off64_t length) { FD_CALL(ftruncate64, fd, -1, int, fn_(fd, length)); }
EXPORT int fallocate(int fd, int mode, off_t offset, off_t len) { FD_CALL(fallocate, fd, -1, int, fn_(fd, mode, offset, len)); }
EXPORT int fallocate64(int fd, int mode, off64_t offset, off64_t len) {
  FD_CALL(fallocate64, fd, -1, int, fn_(fd, mode, offset, len));
}

/* posix_fallocate reports errors as its return value, not through errno. */
#define POSIX_FALLOCATE(op, call)                                 \
  uint64_t k = track_fd(#op, fd);                                 \
  NEXT(op, ENOSYS);                                               \
  int r = call;                                                   \
  if (r) errno = r;                                               \
  AFTER(k, #op, r ? -1 : 0, e_.fd = fd);                          \
  return r

EXPORT int posix_fallocate(int fd, off_t offset, off_t len) { POSIX_FALLOCATE(posix_fallocate, fn_(fd, offset, len)); }
EXPORT int posix_fallocate64(int fd, off64_t offset, off64_t len) {
  POSIX_FALLOCATE(posix_fallocate64, fn_(fd, offset, len));
}

/* -------------------------------- writes -------------------------------- */

/* A write: the trace keeps the bytes, and where in the file they landed
 * (at_ >= 0: that offset; -1: the fd's offset afterwards minus what was
 * written, right for plain and O_APPEND writes alike). */
#define WRITE_CALL(op, fd_, at_, fill, call)                     \
  uint64_t k = track_fd(#op, fd_);                               \
  NEXT(op, -1);                                                  \
  ssize_t r = call;                                              \
  AFTER(k, #op, r, e_.fd = fd_, e_.off = (at_), fill);           \
  return r

EXPORT ssize_t write(int fd, const void *buf, size_t n) { WRITE_CALL(write, fd, -1, e_.data = buf, fn_(fd, buf, n)); }
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
  WRITE_CALL(pwrite, fd, offset, e_.data = buf, fn_(fd, buf, n, offset));
}
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t offset) {
  WRITE_CALL(pwrite64, fd, offset, e_.data = buf, fn_(fd, buf, n, offset));
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  WRITE_CALL(writev, fd, -1, (e_.iov = iov, e_.iovcnt = iovcnt), fn_(fd, iov, iovcnt));
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
  WRITE_CALL(pwritev, fd, offset, (e_.iov = iov, e_.iovcnt = iovcnt), fn_(fd, iov, iovcnt, offset));
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off64_t offset) {
  WRITE_CALL(pwritev64, fd, offset, (e_.iov = iov, e_.iovcnt = iovcnt), fn_(fd, iov, iovcnt, offset));
}
/* An offset of -1 means the current offset, as for writev. */
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags) {
  WRITE_CALL(pwritev2, fd, offset, (e_.iov = iov, e_.iovcnt = iovcnt), fn_(fd, iov, iovcnt, offset, flags));
}
EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t offset, int flags) {
  WRITE_CALL(pwritev64v2, fd, offset, (e_.iov = iov, e_.iovcnt = iovcnt), fn_(fd, iov, iovcnt, offset, flags));
}

/* The bytes come from another descriptor: the trace reads them back from
 * the output file. */
EXPORT ssize_t copy_file_range(int infd, off64_t *inoff, int outfd, off64_t *outoff, size_t n, unsigned int flags) {
  WRITE_CALL(copy_file_range, outfd, outoff && r > 0 ? *outoff - r : -1, e_.readback = 1,
             fn_(infd, inoff, outfd, outoff, n, flags));
}
EXPORT ssize_t sendfile(int outfd, int infd, off_t *offset, size_t n) {
  WRITE_CALL(sendfile, outfd, -1, e_.readback = 1, fn_(outfd, infd, offset, n));
}
EXPORT ssize_t sendfile64(int outfd, int infd, off64_t *offset, size_t n) {
  WRITE_CALL(sendfile64, outfd, -1, e_.readback = 1, fn_(outfd, infd, offset, n));
}

/* stdio writes reach the kernel through glibc-internal aliases, but its
 * explicit flush points are public: count a flush or close that has buffered
 * output for a file in the root as the write it is about to perform. This is
 * what makes bash's builtin echo/printf > file and coreutils' exit-time
 * fclose(stdout) visible. */
static int stdio_pending(FILE *fp) { return fp && fp->_IO_write_ptr > fp->_IO_write_base; }

/* Where a flush of `fp` will land its bytes: the end for O_APPEND, else the
 * kernel offset (stdio's own position is ahead of it by the buffer). */
static int64_t flush_offset(int fd) {
  long fl = syscall(SYS_fcntl, fd, F_GETFL);
  if (fl >= 0 && (fl & O_APPEND)) {
    struct stat st;
    return syscall(SYS_fstat, fd, &st) == 0 ? (int64_t)st.st_size : -1;
  }
  return (int64_t)syscall(SYS_lseek, fd, 0, SEEK_CUR);
}

#define FLUSH_CALL(op, flush)                                                                  \
  uint64_t k = stdio_pending(fp) ? track_fd(#op, fp->_fileno) : 0;                            \
  long pending_ = k ? (long)(fp->_IO_write_ptr - fp->_IO_write_base) : 0;                     \
  int64_t at_ = k && tracing() ? flush_offset(fp->_fileno) : -1;                             \
  int fd_ = fp ? fp->_fileno : -1;                                                            \
  int r = flush;                                                                              \
  AFTER(k, #op, r == 0 ? pending_ : -1, e_.fd = fd_, e_.off = at_, e_.readback = 1)

EXPORT int fflush(FILE *fp) {
  NEXT(fflush, EOF);
  FLUSH_CALL(fflush, fn_(fp));
  return r;
}

EXPORT int fflush_unlocked(FILE *fp) {
  NEXT(fflush_unlocked, EOF);
  FLUSH_CALL(fflush_unlocked, fn_(fp));
  return r;
}

/* In trace mode the buffer is flushed first, while the descriptor is still
 * open to read the bytes back; the close then has nothing left to write. */
EXPORT int fclose(FILE *fp) {
  static void *slot_flush;
  __typeof__(&fflush) flush_ = (__typeof__(&fflush))next_symbol(&slot_flush, "fflush");
  NEXT(fclose, EOF);
  int closed = 0;
  int result = 0;
  {
    FLUSH_CALL(fclose, (tracing() && flush_) ? flush_(fp) : (closed = 1, result = fn_(fp)));
    (void)r;
  }
  return closed ? result : fn_(fp);
}

/* ------------------------------ durability ------------------------------ */

EXPORT int fsync(int fd) { FD_CALL(fsync, fd, -1, int, fn_(fd)); }
EXPORT int fdatasync(int fd) { FD_CALL(fdatasync, fd, -1, int, fn_(fd)); }
EXPORT int sync_file_range(int fd, off64_t offset, off64_t n, unsigned int flags) {
  FD_CALL(sync_file_range, fd, -1, int, fn_(fd, offset, n, flags));
}
EXPORT int syncfs(int fd) { FD_CALL(syncfs, fd, -1, int, fn_(fd)); }

/* sync(2) flushes everything: a durability point for every file. */
EXPORT void sync(void) {
  uint64_t k = track_global("sync");
  static void *slot_sync;
  __typeof__(&sync) fn_ = (__typeof__(&sync))next_symbol(&slot_sync, "sync");
  if (fn_) fn_();
  AFTER(k, "sync", 0, (void)0);
}
