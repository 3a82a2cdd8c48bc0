/*
 * Trace mode: after each counted call, one record of what it did, so that
 * conformance/crash/power-*.ts can replay the calls on a model of the queue
 * and build the states a power loss could leave (which calls' effects were
 * durable). The count log says what was attempted, before the call; the
 * trace says what happened.
 *
 * Environment:
 *   FSJOB_CRASH_TRACE       file receiving one record per counted call
 *   FSJOB_CRASH_TRACE_DATA  file receiving the bytes each write put in a file
 *
 * Record, appended with O_APPEND after the call returned:
 *   k \t done \t pid \t op \t ret \t errno \t dev:ino \t mode \t size \t flags
 *     \t off \t len \t blob \t path \t path2 \n
 * done is the counter when the call returned: every call with k <= done had
 * started by then (for an fsync: what it made durable is durable from any
 * crash point after done). dev:ino, mode (st_mode in octal, type bits
 * included) and size describe the object after the call: the fd's file, the
 * created or renamed-to name (not followed); "-" when there is none. off and
 * len say where the written bytes went in the file, blob where they are in
 * the data file. path and path2 are as in the count log, resolved after the
 * call (for mkstemp: the name it chose). Numbers are decimal; "-" = none.
 */
#include "interpose.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char g_trace_file[PATH_MAX];
static char g_data_file[PATH_MAX];

HIDDEN int trace_init(void) {
  const char *trace = getenv("FSJOB_CRASH_TRACE");
  const char *data = getenv("FSJOB_CRASH_TRACE_DATA");
  if (!trace || !data || !*trace || !*data) return 0;
  size_t a = strlen(trace), b = strlen(data);
  if (a >= sizeof g_trace_file || b >= sizeof g_data_file) return 0;
  memcpy(g_trace_file, trace, a + 1);
  memcpy(g_data_file, data, b + 1);
  return 1;
}

HIDDEN void effect_init(struct effect *e, uint64_t k, const char *op) {
  memset(e, 0, sizeof *e);
  e->k = k;
  e->op = op;
  e->fd = -1;
  e->dirfd = AT_FDCWD;
  e->name_dirfd = AT_FDCWD;
  e->name2_dirfd = AT_FDCWD;
  e->off = -1;
}

static size_t put_char(char *dst, size_t pos, size_t cap, char c) {
  if (pos + 1 < cap) dst[pos++] = c;
  return pos;
}

static size_t put_dec(char *dst, size_t pos, size_t cap, int64_t v) {
  char digits[24];
  int nd = 0;
  uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
  do digits[nd++] = (char)('0' + u % 10); while ((u /= 10) && nd < (int)sizeof digits);
  if (v < 0) pos = put_char(dst, pos, cap, '-');
  while (nd) pos = put_char(dst, pos, cap, digits[--nd]);
  return pos;
}

static size_t put_oct(char *dst, size_t pos, size_t cap, uint64_t v) {
  char digits[24];
  int nd = 0;
  do digits[nd++] = (char)('0' + (v & 7)); while ((v >>= 3) && nd < (int)sizeof digits);
  while (nd) pos = put_char(dst, pos, cap, digits[--nd]);
  return pos;
}

static size_t put_field(char *dst, size_t pos, size_t cap, const char *s) {
  pos = put_char(dst, pos, cap, '\t');
  for (; s && *s; s++) {
    char c = *s;
    if (c == '\\' || c == '\t' || c == '\n') {
      pos = put_char(dst, pos, cap, '\\');
      pos = put_char(dst, pos, cap, c == '\\' ? '\\' : c == '\t' ? 't' : 'n');
    } else {
      pos = put_char(dst, pos, cap, c);
    }
  }
  return pos;
}

static size_t put_num_field(char *dst, size_t pos, size_t cap, int known, int64_t v) {
  pos = put_char(dst, pos, cap, '\t');
  return known ? put_dec(dst, pos, cap, v) : put_char(dst, pos, cap, '-');
}

static void write_all(int fd, const char *buf, size_t n, int64_t at) {
  while (n > 0) {
    long w = syscall(SYS_pwrite64, fd, buf, n, at);
    if (w <= 0) return;
    buf += w;
    n -= (size_t)w;
    at += w;
  }
}

/* Copies the written bytes into the data file at a range reserved for this
 * call alone, so concurrent writers never interleave. Returns the blob
 * offset, or -1. */
static int64_t store_bytes(const struct effect *e, int64_t file_off, size_t len) {
  if (len == 0) return -1;
  int64_t at = (int64_t)__atomic_fetch_add(&g_shared->blob, (uint64_t)len, __ATOMIC_SEQ_CST);
  int out = (int)syscall(SYS_openat, AT_FDCWD, g_data_file, O_WRONLY | O_CLOEXEC);
  if (out < 0) return -1;
  if (e->data) {
    write_all(out, e->data, len, at);
  } else if (e->iov) {
    size_t left = len;
    int64_t pos = at;
    for (int i = 0; i < e->iovcnt && left > 0; i++) {
      size_t n = e->iov[i].iov_len < left ? e->iov[i].iov_len : left;
      write_all(out, e->iov[i].iov_base, n, pos);
      pos += (int64_t)n;
      left -= n;
    }
  } else if (e->readback && e->fd >= 0 && file_off >= 0) {
    /* The bytes came from another descriptor (copy_file_range, sendfile) or
     * a stdio buffer: read them back from the file, through a descriptor of
     * our own since the caller's may be write-only. */
    char proc[40] = "/proc/self/fd/";
    char tail[16];
    size_t pos = strlen(proc);
    size_t tl = put_dec(tail, 0, sizeof tail, e->fd);
    memcpy(proc + pos, tail, tl);
    proc[pos + tl] = '\0';
    int in = (int)syscall(SYS_openat, AT_FDCWD, proc, O_RDONLY | O_CLOEXEC);
    if (in >= 0) {
      char chunk[8192];
      size_t done = 0;
      while (done < len) {
        size_t want = len - done < sizeof chunk ? len - done : sizeof chunk;
        long r = syscall(SYS_pread64, in, chunk, want, file_off + (int64_t)done);
        if (r <= 0) break;
        write_all(out, chunk, (size_t)r, at + (int64_t)done);
        done += (size_t)r;
      }
      syscall(SYS_close, in);
    }
  }
  syscall(SYS_close, out);
  return at;
}

static int is_write_op(const struct effect *e) {
  return e->data || e->iov || e->readback;
}

HIDDEN void trace_effect(struct effect *e) {
  int saved = errno;
  uint64_t done = __atomic_load_n(&g_shared->counter, __ATOMIC_SEQ_CST);

  struct stat st;
  int have_stat = 0;
  if (e->pre) {
    st = *e->pre;
    have_stat = 1;
  } else if (e->fd >= 0) {
    have_stat = syscall(SYS_fstat, e->fd, &st) == 0;
  } else if (e->path) {
    have_stat = syscall(SYS_newfstatat, e->dirfd, e->path, &st, AT_SYMLINK_NOFOLLOW) == 0;
  }

  int64_t off = -1;
  size_t len = 0;
  int64_t blob = -1;
  if (is_write_op(e) && e->ret > 0) {
    len = (size_t)e->ret;
    off = e->off;
    if (off < 0 && e->fd >= 0) {
      long cur = syscall(SYS_lseek, e->fd, 0, SEEK_CUR);
      if (cur >= (long)len) off = cur - (int64_t)len;
    }
    blob = store_bytes(e, off, len);
  }

  char name[PATH_CAP], name2[PATH_CAP];
  name[0] = name2[0] = '\0';
  if (e->name && !resolve_at(e->name_dirfd, e->name, name, sizeof name)) name[0] = '\0';
  if (!e->name && e->fd >= 0 && !fd_path(e->fd, name, sizeof name)) name[0] = '\0';
  if (e->name2 && !resolve_at(e->name2_dirfd, e->name2, name2, sizeof name2)) name2[0] = '\0';

  char line[3 * PATH_CAP + 256];
  size_t cap = sizeof line - 1;
  size_t pos = put_dec(line, 0, cap, (int64_t)e->k);
  pos = put_num_field(line, pos, cap, 1, (int64_t)done);
  pos = put_num_field(line, pos, cap, 1, (int64_t)syscall(SYS_getpid));
  pos = put_field(line, pos, cap, e->op);
  pos = put_num_field(line, pos, cap, 1, e->ret);
  pos = put_num_field(line, pos, cap, 1, e->err);
  pos = put_char(line, pos, cap, '\t');
  if (have_stat) {
    pos = put_dec(line, pos, cap, (int64_t)st.st_dev);
    pos = put_char(line, pos, cap, ':');
    pos = put_dec(line, pos, cap, (int64_t)st.st_ino);
    pos = put_char(line, pos, cap, '\t');
    pos = put_oct(line, pos, cap, (uint64_t)st.st_mode);
  } else {
    pos = put_char(line, pos, cap, '-');
    pos = put_field(line, pos, cap, "-");
  }
  pos = put_num_field(line, pos, cap, have_stat, have_stat ? (int64_t)st.st_size : 0);
  pos = put_num_field(line, pos, cap, 1, e->flags);
  pos = put_num_field(line, pos, cap, off >= 0, off);
  pos = put_num_field(line, pos, cap, 1, (int64_t)len);
  pos = put_num_field(line, pos, cap, blob >= 0, blob);
  pos = put_field(line, pos, cap, name);
  pos = put_field(line, pos, cap, e->text ? e->text : name2);
  line[pos++] = '\n';

  int fd = (int)syscall(SYS_openat, AT_FDCWD, g_trace_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    syscall(SYS_write, fd, line, pos);
    syscall(SYS_close, fd);
  }
  errno = saved;
}
