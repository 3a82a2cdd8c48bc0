/*
 * A measurement's addon, never shipped (spec/design-native-floor.md): the
 * system calls of a payload job on held directory descriptors, as Node would
 * make them if it had openat, linkat, unlinkat, fstatat, mkdirat, renameat and
 * getdents64 on a descriptor. Compiled by native-floor.mjs with
 * `cc -O2 -shared -fPIC -I<node's headers>` and cached; no node-gyp.
 *
 * Two layers. The calls: one thin wrapper per system call, synchronous,
 * throwing an Error with code (ENOENT...), errno and syscall on failure.
 * The steps: one native call for a sequence between two of the job's
 * decisions (enqueueAt, openJobAt, publishAt, finishAt), the least a Node
 * process could pay if its records' system calls were batched.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NAME_MAX_BYTES 1024
#define TEXT_STACK 4096
#define CREATE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)

/* The pending JavaScript exception, if any, is the answer: every wrapper returns NULL after one. */
static napi_value throw_errno(napi_env env, int err, const char *syscall, const char *name) {
  char message[NAME_MAX_BYTES + 160];
  const char *code = strerrorname_np(err);
  char fallback[16];
  if (code == NULL) {
    snprintf(fallback, sizeof fallback, "E%d", err);
    code = fallback;
  }
  snprintf(message, sizeof message, "%s: %s, %s '%s'", code, strerror(err), syscall, name == NULL ? "" : name);
  napi_value error, code_value, msg_value, errno_value, syscall_value;
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_value);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg_value);
  napi_create_error(env, code_value, msg_value, &error);
  napi_create_int32(env, -err, &errno_value);
  napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &syscall_value);
  napi_set_named_property(env, error, "errno", errno_value);
  napi_set_named_property(env, error, "syscall", syscall_value);
  napi_throw(env, error);
  return NULL;
}

static napi_value throw_check(napi_env env, const char *what, const char *name) {
  char message[NAME_MAX_BYTES + 80];
  snprintf(message, sizeof message, "%s: %s", name, what);
  napi_throw_error(env, "ECHECK", message);
  return NULL;
}

static int32_t int_arg(napi_env env, napi_value value) {
  int32_t out = -1;
  napi_get_value_int32(env, value, &out);
  return out;
}

/* A name argument into `out`; 0 when it is not a string or too long (an exception is then pending). */
static int name_arg(napi_env env, napi_value value, char *out) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, value, out, NAME_MAX_BYTES, &len) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "a name must be a string");
    return 0;
  }
  if (len >= NAME_MAX_BYTES - 1) {
    napi_throw_range_error(env, "ENAMETOOLONG", "a name is too long");
    return 0;
  }
  return 1;
}

/* The bytes of a string or a Buffer argument: a string is encoded into `stack` or a malloc'd block (*owned). */
static int bytes_arg(napi_env env, napi_value value, char *stack, char **data, size_t *len, char **owned) {
  napi_valuetype type;
  napi_typeof(env, value, &type);
  *owned = NULL;
  if (type == napi_string) {
    size_t need = 0;
    napi_get_value_string_utf8(env, value, NULL, 0, &need);
    char *into = need < TEXT_STACK ? stack : (*owned = malloc(need + 1));
    if (into == NULL) return 0;
    napi_get_value_string_utf8(env, value, into, need + 1, len);
    *data = into;
    return 1;
  }
  void *buffer;
  if (napi_get_buffer_info(env, value, &buffer, len) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "bytes must be a string or a Buffer");
    return 0;
  }
  *data = buffer;
  return 1;
}

static napi_value number(napi_env env, double value) {
  napi_value out;
  napi_create_double(env, value, &out);
  return out;
}

static napi_value undefined(napi_env env) {
  napi_value out;
  napi_get_undefined(env, &out);
  return out;
}

#define ARGS(n)                  \
  size_t argc = n;               \
  napi_value argv[n];            \
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL)

/* ---- the calls: one system call each ---- */

static napi_value js_openat(napi_env env, napi_callback_info info) {
  ARGS(4);
  char name[NAME_MAX_BYTES];
  if (!name_arg(env, argv[1], name)) return NULL;
  int fd = openat(int_arg(env, argv[0]), name, int_arg(env, argv[2]), (mode_t)(argc > 3 ? int_arg(env, argv[3]) : 0));
  if (fd < 0) return throw_errno(env, errno, "openat", name);
  return number(env, fd);
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  ARGS(1);
  if (close(int_arg(env, argv[0])) != 0) return throw_errno(env, errno, "close", NULL);
  return undefined(env);
}

static napi_value js_fsync(napi_env env, napi_callback_info info) {
  ARGS(1);
  if (fsync(int_arg(env, argv[0])) != 0) return throw_errno(env, errno, "fsync", NULL);
  return undefined(env);
}

static napi_value js_fchmod(napi_env env, napi_callback_info info) {
  ARGS(2);
  if (fchmod(int_arg(env, argv[0]), (mode_t)int_arg(env, argv[1])) != 0) return throw_errno(env, errno, "fchmod", NULL);
  return undefined(env);
}

static napi_value js_mkdirat(napi_env env, napi_callback_info info) {
  ARGS(3);
  char name[NAME_MAX_BYTES];
  if (!name_arg(env, argv[1], name)) return NULL;
  if (mkdirat(int_arg(env, argv[0]), name, (mode_t)int_arg(env, argv[2])) != 0) return throw_errno(env, errno, "mkdirat", name);
  return undefined(env);
}

static napi_value js_unlinkat(napi_env env, napi_callback_info info) {
  ARGS(3);
  char name[NAME_MAX_BYTES];
  if (!name_arg(env, argv[1], name)) return NULL;
  if (unlinkat(int_arg(env, argv[0]), name, argc > 2 ? int_arg(env, argv[2]) : 0) != 0) return throw_errno(env, errno, "unlinkat", name);
  return undefined(env);
}

static napi_value js_linkat(napi_env env, napi_callback_info info) {
  ARGS(4);
  char from[NAME_MAX_BYTES], to[NAME_MAX_BYTES];
  if (!name_arg(env, argv[1], from) || !name_arg(env, argv[3], to)) return NULL;
  if (linkat(int_arg(env, argv[0]), from, int_arg(env, argv[2]), to, 0) != 0) return throw_errno(env, errno, "linkat", to);
  return undefined(env);
}

static napi_value js_renameat(napi_env env, napi_callback_info info) {
  ARGS(4);
  char from[NAME_MAX_BYTES], to[NAME_MAX_BYTES];
  if (!name_arg(env, argv[1], from) || !name_arg(env, argv[3], to)) return NULL;
  if (renameat(int_arg(env, argv[0]), from, int_arg(env, argv[2]), to) != 0) return throw_errno(env, errno, "renameat", to);
  return undefined(env);
}

/* A stat's fields into the caller's Float64Array (as Node's own binding fills one): dev, ino, mode, nlink, uid, gid, size, mtime ms. */
static int fill_stat(napi_env env, napi_value array, const struct stat *st) {
  napi_typedarray_type type;
  size_t length;
  void *data;
  if (napi_get_typedarray_info(env, array, &type, &length, &data, NULL, NULL) != napi_ok || type != napi_float64_array || length < 8) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "stats go into a Float64Array of 8");
    return 0;
  }
  double *out = data;
  out[0] = (double)st->st_dev;
  out[1] = (double)st->st_ino;
  out[2] = st->st_mode;
  out[3] = (double)st->st_nlink;
  out[4] = st->st_uid;
  out[5] = st->st_gid;
  out[6] = (double)st->st_size;
  out[7] = (double)st->st_mtim.tv_sec * 1e3 + st->st_mtim.tv_nsec / 1e6;
  return 1;
}

static napi_value js_fstat(napi_env env, napi_callback_info info) {
  ARGS(2);
  struct stat st;
  if (fstat(int_arg(env, argv[0]), &st) != 0) return throw_errno(env, errno, "fstat", NULL);
  if (!fill_stat(env, argv[1], &st)) return NULL;
  return undefined(env);
}

/* fstatat(dirfd, name, flags, out): true, or false for a missing name (Node's throwIfNoEntry: false). */
static napi_value js_fstatat(napi_env env, napi_callback_info info) {
  ARGS(4);
  char name[NAME_MAX_BYTES];
  if (!name_arg(env, argv[1], name)) return NULL;
  struct stat st;
  napi_value out;
  if (fstatat(int_arg(env, argv[0]), name, &st, int_arg(env, argv[2])) != 0) {
    if (errno != ENOENT) return throw_errno(env, errno, "fstatat", name);
    napi_get_boolean(env, false, &out);
    return out;
  }
  if (!fill_stat(env, argv[3], &st)) return NULL;
  napi_get_boolean(env, true, &out);
  return out;
}

/* write(fd, bytes, position): pwrite at position, write where it is -1; the count written. */
static napi_value js_write(napi_env env, napi_callback_info info) {
  ARGS(3);
  char stack[TEXT_STACK], *data, *owned;
  size_t len;
  if (!bytes_arg(env, argv[1], stack, &data, &len, &owned)) return NULL;
  int64_t position = -1;
  if (argc > 2) napi_get_value_int64(env, argv[2], &position);
  int fd = int_arg(env, argv[0]);
  ssize_t n = position < 0 ? write(fd, data, len) : pwrite(fd, data, len, position);
  int err = errno;
  free(owned);
  if (n < 0) return throw_errno(env, err, position < 0 ? "write" : "pwrite", NULL);
  return number(env, (double)n);
}

/* read(fd, buffer, position): pread at position, read where it is -1; the count read. */
static napi_value js_read(napi_env env, napi_callback_info info) {
  ARGS(3);
  void *data;
  size_t len;
  if (napi_get_buffer_info(env, argv[1], &data, &len) != napi_ok) return throw_check(env, "not a Buffer", "read");
  int64_t position = -1;
  if (argc > 2) napi_get_value_int64(env, argv[2], &position);
  int fd = int_arg(env, argv[0]);
  ssize_t n = position < 0 ? read(fd, data, len) : pread(fd, data, len, position);
  if (n < 0) return throw_errno(env, errno, position < 0 ? "read" : "pread", NULL);
  return number(env, (double)n);
}

/* The names in the directory held by fd ("." and ".." left out): lseek to 0, getdents64 until it answers 0. */
static int list_names(napi_env env, int fd, napi_value *out) {
  char buf[32768];
  uint32_t count = 0;
  napi_create_array(env, out);
  if (lseek(fd, 0, SEEK_SET) < 0) {
    throw_errno(env, errno, "lseek", NULL);
    return 0;
  }
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0) {
      throw_errno(env, errno, "getdents64", NULL);
      return 0;
    }
    if (n == 0) return 1;
    for (long at = 0; at < n;) {
      struct dirent64 *entry = (struct dirent64 *)(buf + at);
      at += entry->d_reclen;
      const char *name = entry->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      napi_value value;
      napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &value);
      napi_set_element(env, *out, count++, value);
    }
  }
}

static napi_value js_readdir(napi_env env, napi_callback_info info) {
  ARGS(1);
  napi_value out;
  if (!list_names(env, int_arg(env, argv[0]), &out)) return NULL;
  return out;
}

/* ---- the steps: one native call for what lies between two of the job's decisions ---- */

static int create_write(napi_env env, int dirfd, const char *name, const char *data, size_t len) {
  int fd = openat(dirfd, name, CREATE_FLAGS, 0600);
  if (fd < 0) return throw_errno(env, errno, "openat", name), 0;
  if (write(fd, data, len) != (ssize_t)len) return throw_errno(env, errno, "write", name), close(fd), 0;
  if (fsync(fd) != 0) return throw_errno(env, errno, "fsync", name), close(fd), 0;
  if (close(fd) != 0) return throw_errno(env, errno, "close", name), 0;
  return 1;
}

/* PUB-1..PUB-6 in the directory held by dirfd: temp file, write, fsync, close, link, unlink, fsync of the directory. */
static int publish(napi_env env, int dirfd, const char *temp, const char *name, const char *data, size_t len) {
  if (!create_write(env, dirfd, temp, data, len)) return 0;
  if (linkat(dirfd, temp, dirfd, name, 0) != 0) return throw_errno(env, errno, "linkat", name), 0;
  if (unlinkat(dirfd, temp, 0) != 0) return throw_errno(env, errno, "unlinkat", temp), 0;
  if (fsync(dirfd) != 0) return throw_errno(env, errno, "fsync", name), 0;
  return 1;
}

/* -1 when none of the names (an array) exists in dirfd, else the first present one's index. */
static int first_present(napi_env env, int dirfd, napi_value names) {
  bool is_array = false;
  napi_is_array(env, names, &is_array);
  if (!is_array) return -1;
  uint32_t count;
  napi_get_array_length(env, names, &count);
  for (uint32_t i = 0; i < count; i++) {
    napi_value value;
    char name[NAME_MAX_BYTES];
    napi_get_element(env, names, i, &value);
    if (!name_arg(env, value, name)) return -2;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return (int)i;
    if (errno != ENOENT) return throw_errno(env, errno, "fstatat", name), -2;
  }
  return -1;
}

/* enqueueAt(tmpFd, jobsFd, readyFd, id, specText, readyName): ENQ-1..ENQ-4 as node-floor.mjs makes them, in one call. */
static napi_value js_enqueue_at(napi_env env, napi_callback_info info) {
  ARGS(6);
  char id[NAME_MAX_BYTES], entry[NAME_MAX_BYTES], stack[TEXT_STACK], *data, *owned;
  size_t len;
  int tmp = int_arg(env, argv[0]), jobs = int_arg(env, argv[1]), ready = int_arg(env, argv[2]);
  if (!name_arg(env, argv[3], id) || !name_arg(env, argv[5], entry)) return NULL;
  if (!bytes_arg(env, argv[4], stack, &data, &len, &owned)) return NULL;
  napi_value result = NULL;
  struct stat st;
  int staged = -1, fd;
  if (mkdirat(tmp, id, 0700) != 0) { throw_errno(env, errno, "mkdirat", id); goto out; }
  if ((staged = openat(tmp, id, DIR_FLAGS)) < 0) { throw_errno(env, errno, "openat", id); goto out; }
  if (fstat(staged, &st) != 0) { throw_errno(env, errno, "fstat", id); goto out; }
  if (!S_ISDIR(st.st_mode)) { throw_check(env, "not a directory", id); goto out; }
  if (fchmod(staged, 0700) != 0) { throw_errno(env, errno, "fchmod", id); goto out; }
  if (!create_write(env, staged, "spec.json", data, len)) goto out;
  if (fsync(staged) != 0) { throw_errno(env, errno, "fsync", id); goto out; }
  if ((fd = openat(ready, entry, CREATE_FLAGS, 0600)) < 0) { throw_errno(env, errno, "openat", entry); goto out; }
  close(fd);
  if (fstatat(jobs, id, &st, AT_SYMLINK_NOFOLLOW) == 0) { throw_check(env, "taken", id); goto out; }
  if (errno != ENOENT) { throw_errno(env, errno, "fstatat", id); goto out; }
  if (renameat(tmp, id, jobs, id) != 0) { throw_errno(env, errno, "renameat", id); goto out; }
  if (close(staged) != 0) { staged = -1; throw_errno(env, errno, "close", id); goto out; }
  staged = -1;
  if (fsync(tmp) != 0) { throw_errno(env, errno, "fsync", "tmp"); goto out; }
  if (fsync(jobs) != 0) { throw_errno(env, errno, "fsync", "jobs"); goto out; }
  result = undefined(env);
out:
  if (staged >= 0) close(staged);
  free(owned);
  return result;
}

/*
 * openJobAt(rootFd, jobsFd, id): null while pause.json exists; else [jobFd, spec text, names]: the job
 * directory opened and checked (a directory, not group or world writable), spec.json read (open, fstat,
 * pread of size + 1, close) and the directory listed, as node-floor.mjs's consume begins.
 */
static napi_value js_open_job_at(napi_env env, napi_callback_info info) {
  ARGS(3);
  char id[NAME_MAX_BYTES], stack[TEXT_STACK];
  if (!name_arg(env, argv[2], id)) return NULL;
  int root = int_arg(env, argv[0]), jobs = int_arg(env, argv[1]);
  struct stat st;
  if (fstatat(root, "pause.json", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    napi_value none;
    napi_get_null(env, &none);
    return none;
  }
  if (errno != ENOENT) return throw_errno(env, errno, "fstatat", "pause.json");
  int job = openat(jobs, id, DIR_FLAGS);
  if (job < 0) return throw_errno(env, errno, "openat", id);
  napi_value result = NULL, text, names, fd_value;
  char *bytes = stack;
  int file = -1;
  if (fstat(job, &st) != 0) { throw_errno(env, errno, "fstat", id); goto fail; }
  if (!S_ISDIR(st.st_mode) || (st.st_mode & 022) != 0) { throw_check(env, "not a private directory", id); goto fail; }
  if ((file = openat(job, "spec.json", READ_FLAGS)) < 0) { throw_errno(env, errno, "openat", "spec.json"); goto fail; }
  if (fstat(file, &st) != 0) { throw_errno(env, errno, "fstat", "spec.json"); goto fail; }
  size_t size = (size_t)st.st_size;
  if (size + 1 > TEXT_STACK && (bytes = malloc(size + 1)) == NULL) { throw_check(env, "out of memory", id); goto fail; }
  ssize_t got = pread(file, bytes, size + 1, 0);
  if (got < 0) { throw_errno(env, errno, "pread", "spec.json"); goto fail; }
  close(file);
  file = -1;
  if ((size_t)got != size || got == 0) { throw_check(env, "spec.json changed size", id); goto fail; }
  napi_create_string_utf8(env, bytes, (size_t)got - 1, &text);
  if (!list_names(env, job, &names)) goto fail;
  napi_create_array_with_length(env, 3, &result);
  napi_create_int32(env, job, &fd_value);
  napi_set_element(env, result, 0, fd_value);
  napi_set_element(env, result, 1, text);
  napi_set_element(env, result, 2, names);
  if (bytes != stack) free(bytes);
  return result;
fail:
  if (bytes != stack) free(bytes);
  if (file >= 0) close(file);
  close(job);
  return NULL;
}

/* publishAt(dirfd, temp, name, text, after): PUB-1..PUB-6, then -1 when none of `after` exists, else the first present one's index. */
static napi_value js_publish_at(napi_env env, napi_callback_info info) {
  ARGS(5);
  char temp[NAME_MAX_BYTES], name[NAME_MAX_BYTES], stack[TEXT_STACK], *data, *owned;
  size_t len;
  if (!name_arg(env, argv[1], temp) || !name_arg(env, argv[2], name)) return NULL;
  if (!bytes_arg(env, argv[3], stack, &data, &len, &owned)) return NULL;
  int dirfd = int_arg(env, argv[0]);
  int ok = publish(env, dirfd, temp, name, data, len);
  free(owned);
  if (!ok) return NULL;
  int present = argc > 4 ? first_present(env, dirfd, argv[4]) : -1;
  return present == -2 ? NULL : number(env, present);
}

/*
 * finishAt(jobFd, temp, text, readyFd, entry): claim.2.json must be absent (CLAIM-7), then receipt.json
 * published, the ready entry removed and the job directory closed; false (nothing done but the close) when
 * claim.2.json exists.
 */
static napi_value js_finish_at(napi_env env, napi_callback_info info) {
  ARGS(5);
  char temp[NAME_MAX_BYTES], entry[NAME_MAX_BYTES], stack[TEXT_STACK], *data, *owned;
  size_t len;
  if (!name_arg(env, argv[1], temp) || !name_arg(env, argv[4], entry)) return NULL;
  if (!bytes_arg(env, argv[2], stack, &data, &len, &owned)) return NULL;
  int job = int_arg(env, argv[0]), ready = int_arg(env, argv[3]);
  napi_value result = NULL;
  struct stat st;
  if (fstatat(job, "claim.2.json", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    napi_get_boolean(env, false, &result);
  } else if (errno != ENOENT) {
    throw_errno(env, errno, "fstatat", "claim.2.json");
  } else if (publish(env, job, temp, "receipt.json", data, len)) {
    if (unlinkat(ready, entry, 0) != 0) throw_errno(env, errno, "unlinkat", entry);
    else napi_get_boolean(env, true, &result);
  }
  free(owned);
  if (close(job) != 0 && result != NULL) return throw_errno(env, errno, "close", NULL);
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  static const struct { const char *name; napi_callback fn; } table[] = {
      {"openat", js_openat},     {"close", js_close},         {"fsync", js_fsync},
      {"fchmod", js_fchmod},     {"mkdirat", js_mkdirat},     {"unlinkat", js_unlinkat},
      {"linkat", js_linkat},     {"renameat", js_renameat},   {"fstat", js_fstat},
      {"fstatat", js_fstatat},   {"write", js_write},         {"read", js_read},
      {"readdir", js_readdir},   {"enqueueAt", js_enqueue_at}, {"openJobAt", js_open_job_at},
      {"publishAt", js_publish_at}, {"finishAt", js_finish_at},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    napi_value fn;
    napi_create_function(env, table[i].name, NAPI_AUTO_LENGTH, table[i].fn, NULL, &fn);
    napi_set_named_property(env, exports, table[i].name, fn);
  }
  return exports;
}

NAPI_MODULE(fsat, init)
