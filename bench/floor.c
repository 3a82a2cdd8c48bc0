/*
 * The floor: exactly the filesystem calls that one durable fsjob payload job
 * needs (spec/writing.md, spec/producer.md, spec/claim.md and spec/running.md), and nothing else. No
 * JSON, no reads, no status derivation, no identity checks: whatever fsjob
 * spends beyond this is the implementation's, not the disk's.
 *
 * Per job (ids as LAYOUT-4, a ready entry as LAYOUT-7):
 *   enqueue  mkdir tmp/<id>; create+write+fsync tmp/<id>/spec.json;
 *            fsync tmp/<id>; create ready/1000-<id> (empty, not fsynced: a
 *            hint, READY-4); rename tmp/<id> -> jobs/<id>; fsync jobs/
 *   claim    create+write+fsync jobs/<id>/.claim.1.json.<r>; link to
 *            claim.1.json; unlink the temp; fsync jobs/<id>
 *   exec     the same for exec.1.json
 *   receipt  the same for receipt.json; then unlink the ready entry
 * That is 9 fsyncs, 6 creates, 1 mkdir, 1 rename, 3 links, 4 unlinks per job.
 *
 * Usage: floor <queue-root> <jobs> <threads> [full|enqueue]
 *        floor probe <scratch-dir>
 * probe measures the disk itself: fsync after overwriting 600 bytes of an
 * existing file, fsync with nothing dirty, fsync of a new 600-byte file, and
 * the kernel time of an exclusive create (which tells the "after deletes"
 * state of ext4 without a journal from the clean one).
 * With several threads each takes every n-th job (disjoint jobs, one queue),
 * so the figure shows what concurrent fsyncs buy on this disk. Prints one JSON
 * object: wall time, jobs/s, per-job latency percentiles, and the time spent
 * in each kind of call summed over threads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { K_MKDIR, K_CREATE, K_CREATE_READY, K_WRITE, K_FSYNC_FILE, K_FSYNC_DIR, K_RENAME, K_LINK, K_UNLINK, K_CLOSE, K_N };
static const char *KIND_NAMES[K_N] = {"mkdir", "create", "create_ready", "write", "fsync_file", "fsync_dir", "rename", "link", "unlink", "close"};

static const char *root;
static int njobs, nthreads, enqueue_only;
static char spec_buf[640], claim_buf[320], exec_buf[200], receipt_buf[640];
static uint64_t *lat_ns;

struct worker {
  int index;
  uint64_t kind_ns[K_N];
  uint64_t kind_n[K_N];
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "floor: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

#define TIMED(w, kind, expr)                 \
  do {                                       \
    uint64_t t0_ = now_ns();                 \
    expr;                                    \
    (w)->kind_ns[kind] += now_ns() - t0_;    \
    (w)->kind_n[kind] += 1;                  \
  } while (0)

static void fsync_dir(struct worker *w, const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) die("open dir", path);
  int rc;
  TIMED(w, K_FSYNC_DIR, rc = fsync(fd));
  if (rc != 0) die("fsync dir", path);
  close(fd);
}

/* Create exclusively, write, fsync, close (PUB-1, PUB-2, PUB-7). */
static void create_write_fsync(struct worker *w, const char *path, const char *buf, size_t len) {
  int fd;
  TIMED(w, K_CREATE, fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600));
  if (fd < 0) die("create", path);
  ssize_t n;
  TIMED(w, K_WRITE, n = write(fd, buf, len));
  if (n != (ssize_t)len) die("write", path);
  int rc;
  TIMED(w, K_FSYNC_FILE, rc = fsync(fd));
  if (rc != 0) die("fsync", path);
  TIMED(w, K_CLOSE, close(fd));
}

/* Publish by link (PUB-1..PUB-5). */
static void publish_link(struct worker *w, const char *dir, const char *name, const char *buf, size_t len, unsigned salt) {
  char tmp[4096], target[4096];
  snprintf(tmp, sizeof tmp, "%s/.%s.%08x", dir, name, salt);
  snprintf(target, sizeof target, "%s/%s", dir, name);
  create_write_fsync(w, tmp, buf, len);
  int rc;
  TIMED(w, K_LINK, rc = link(tmp, target));
  if (rc != 0) die("link", target);
  TIMED(w, K_UNLINK, rc = unlink(tmp));
  if (rc != 0) die("unlink", tmp);
  fsync_dir(w, dir);
}

static void one_job(struct worker *w, int i) {
  char id[64], staging[4000], spec[4096], ready[4096], job[4096], jobs[4096];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t wall = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  snprintf(id, sizeof id, "%019llu-%08x%08x", (unsigned long long)wall, (unsigned)getpid(), (unsigned)i);
  snprintf(staging, sizeof staging, "%s/tmp/%s", root, id);
  snprintf(spec, sizeof spec, "%s/spec.json", staging);
  snprintf(ready, sizeof ready, "%s/ready/1000-%s", root, id);
  snprintf(job, sizeof job, "%s/jobs/%s", root, id);
  snprintf(jobs, sizeof jobs, "%s/jobs", root);
  int rc;

  /* Enqueue: ENQ-1..ENQ-4. */
  TIMED(w, K_MKDIR, rc = mkdir(staging, 0700));
  if (rc != 0) die("mkdir", staging);
  create_write_fsync(w, spec, spec_buf, sizeof spec_buf);
  fsync_dir(w, staging);
  int fd;
  TIMED(w, K_CREATE_READY, fd = open(ready, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600));
  if (fd < 0) die("create", ready);
  TIMED(w, K_CLOSE, close(fd));
  TIMED(w, K_RENAME, rc = rename(staging, job));
  if (rc != 0) die("rename", job);
  fsync_dir(w, jobs);
  if (enqueue_only) return;

  /* Claim (CLAIM-5), exec record (EXEC-3), receipt (RCPT-3), ready entry (READY-2). */
  publish_link(w, job, "claim.1.json", claim_buf, sizeof claim_buf, (unsigned)i * 3u);
  publish_link(w, job, "exec.1.json", exec_buf, sizeof exec_buf, (unsigned)i * 3u + 1u);
  publish_link(w, job, "receipt.json", receipt_buf, sizeof receipt_buf, (unsigned)i * 3u + 2u);
  TIMED(w, K_UNLINK, rc = unlink(ready));
  if (rc != 0) die("unlink", ready);
}

static void *run(void *arg) {
  struct worker *w = arg;
  for (int i = w->index; i < njobs; i += nthreads) {
    uint64_t t0 = now_ns();
    one_job(w, i);
    lat_ns[i] = now_ns() - t0;
  }
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void fill(char *buf, size_t len) {
  /* A record-shaped line: JSON-ish bytes and a final line feed (REC-1). */
  for (size_t i = 0; i < len; i++) buf[i] = (char)('a' + i % 26);
  buf[0] = '{';
  buf[len - 2] = '}';
  buf[len - 1] = '\n';
}

static double avg_us(uint64_t ns, int n) { return ns / 1000.0 / n; }

static int probe(const char *dir) {
  char path[4096], buf[600];
  memset(buf, 'x', sizeof buf);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) die("mkdir", dir);
  const int n = 100;
  uint64_t t, overwrite = 0, clean = 0, fresh = 0, create = 0;
  snprintf(path, sizeof path, "%s/overwrite", dir);
  int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || fsync(fd) != 0) die("probe", path);
  for (int i = 0; i < n; i++) {
    if (pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) die("pwrite", path);
    t = now_ns();
    if (fsync(fd) != 0) die("fsync", path);
    overwrite += now_ns() - t;
    t = now_ns();
    if (fsync(fd) != 0) die("fsync", path);
    clean += now_ns() - t;
  }
  close(fd);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/new.%d.%d", dir, (int)getpid(), i);
    t = now_ns();
    fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
    create += now_ns() - t;
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) die("create", path);
    t = now_ns();
    if (fsync(fd) != 0) die("fsync", path);
    fresh += now_ns() - t;
    close(fd);
  }
  printf("{\"fsync_overwrite_us\":%.1f,\"fsync_clean_us\":%.1f,\"fsync_new_file_us\":%.1f,\"create_us\":%.1f}\n",
         avg_us(overwrite, n), avg_us(clean, n), avg_us(fresh, n), avg_us(create, n));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "probe") == 0) return probe(argv[2]);
  if (argc < 4) {
    fprintf(stderr, "usage: floor <queue-root> <jobs> <threads> [full|enqueue]\n");
    return 2;
  }
  root = argv[1];
  njobs = atoi(argv[2]);
  nthreads = atoi(argv[3]);
  enqueue_only = argc > 4 && strcmp(argv[4], "enqueue") == 0;
  if (njobs < 1 || nthreads < 1 || nthreads > 64) return 2;
  fill(spec_buf, sizeof spec_buf);
  fill(claim_buf, sizeof claim_buf);
  fill(exec_buf, sizeof exec_buf);
  fill(receipt_buf, sizeof receipt_buf);
  const char *dirs[] = {"", "/tmp", "/jobs", "/ready"};
  for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
    char p[4096];
    snprintf(p, sizeof p, "%s%s", root, dirs[d]);
    if (mkdir(p, 0700) != 0 && errno != EEXIST) die("mkdir", p);
  }
  lat_ns = calloc((size_t)njobs, sizeof *lat_ns);
  struct worker *workers = calloc((size_t)nthreads, sizeof *workers);
  pthread_t *threads = calloc((size_t)nthreads, sizeof *threads);
  uint64_t t0 = now_ns();
  for (int t = 0; t < nthreads; t++) {
    workers[t].index = t;
    if (pthread_create(&threads[t], NULL, run, &workers[t]) != 0) return 1;
  }
  for (int t = 0; t < nthreads; t++) pthread_join(threads[t], NULL);
  uint64_t wall = now_ns() - t0;
  // The CPU the filesystem calls themselves cost (almost all of it system
  // time): the least CPU per job any implementation of the protocol can have.
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  uint64_t cpu_ns = ((uint64_t)usage.ru_utime.tv_sec + (uint64_t)usage.ru_stime.tv_sec) * 1000000000ull +
                    ((uint64_t)usage.ru_utime.tv_usec + (uint64_t)usage.ru_stime.tv_usec) * 1000ull;
  qsort(lat_ns, (size_t)njobs, sizeof *lat_ns, cmp_u64);
  printf("{\"jobs\":%d,\"threads\":%d,\"mode\":\"%s\",\"wall_ns\":%llu,\"jobs_per_s\":%.1f,", njobs, nthreads,
         enqueue_only ? "enqueue" : "full", (unsigned long long)wall, njobs / (wall / 1e9));
  printf("\"p50_ns\":%llu,\"p99_ns\":%llu,\"calls\":{", (unsigned long long)lat_ns[njobs / 2],
         (unsigned long long)lat_ns[(size_t)((njobs - 1) * 0.99)]);
  for (int k = 0; k < K_N; k++) {
    uint64_t ns = 0, n = 0;
    for (int t = 0; t < nthreads; t++) {
      ns += workers[t].kind_ns[k];
      n += workers[t].kind_n[k];
    }
    printf("%s\"%s\":{\"n\":%llu,\"ns\":%llu}", k ? "," : "", KIND_NAMES[k], (unsigned long long)n, (unsigned long long)ns);
  }
  printf("},\"cpu_ns\":%llu}\n", (unsigned long long)cpu_ns);
  return 0;
}
