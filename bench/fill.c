/*
 * Builds a deep queue fast, for the scale measurements: writes job
 * directories straight into jobs/ (no staging, no fsync: one `sync` at the
 * end makes them durable), from record templates that bench/lib/fixtures.ts
 * made with the reference encoder, so every record is valid. Each template
 * holds the placeholder id 1111111111111111111-aaaaaaaaaaaaaaaa, replaced by
 * each job's id.
 *
 * Usage: fill <queue-root> <n> <finished|queued> <templates-dir> <first-id-ns>
 *   finished: jobs/<id>/{spec.json,claim.1.json,exec.1.json,stdout.1,stderr.1,receipt.json}
 *   queued:   jobs/<id>/spec.json and ready/1000-<id>
 * Ids are <first-id-ns + i> (19 digits) and 16 hex digits, in creation order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLACEHOLDER "1111111111111111111-aaaaaaaaaaaaaaaa"
#define ID_LEN 36

struct tmpl {
  const char *name;
  char *bytes;
  size_t len;
  size_t at[8];
  int nat;
};

static void die(const char *what, const char *path) {
  fprintf(stderr, "fill: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

static void load(struct tmpl *t, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, t->name);
  FILE *f = fopen(path, "rb");
  if (!f) die("open", path);
  t->bytes = malloc(1 << 20);
  t->len = fread(t->bytes, 1, 1 << 20, f);
  fclose(f);
  t->nat = 0;
  for (char *p = t->bytes; (p = memmem(p, t->len - (size_t)(p - t->bytes), PLACEHOLDER, ID_LEN)) != NULL; p += ID_LEN) {
    if (t->nat < 8) t->at[t->nat++] = (size_t)(p - t->bytes);
  }
}

static void put(const char *path, struct tmpl *t, const char *id) {
  for (int k = 0; k < t->nat; k++) memcpy(t->bytes + t->at[k], id, ID_LEN);
  int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) die("create", path);
  if (t->len > 0 && write(fd, t->bytes, t->len) != (ssize_t)t->len) die("write", path);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: fill <queue-root> <n> <finished|queued> <templates-dir> <first-id-ns>\n");
    return 2;
  }
  const char *root = argv[1];
  long n = atol(argv[2]);
  int finished = strcmp(argv[3], "finished") == 0;
  unsigned long long base = strtoull(argv[5], NULL, 10);
  struct tmpl t[6] = {{.name = "spec.json"}, {.name = "claim.1.json"}, {.name = "exec.1.json"},
                      {.name = "stdout.1"},  {.name = "stderr.1"},     {.name = "receipt.json"}};
  int nt = finished ? 6 : 1;
  for (int k = 0; k < nt; k++) load(&t[k], argv[4]);
  char id[ID_LEN + 1], path[4096];
  for (long i = 0; i < n; i++) {
    snprintf(id, sizeof id, "%019llu-%08x%08lx", base + (unsigned long long)i, (unsigned)getpid(), (unsigned long)i);
    snprintf(path, sizeof path, "%s/jobs/%s", root, id);
    if (mkdir(path, 0700) != 0) die("mkdir", path);
    for (int k = 0; k < nt; k++) {
      snprintf(path, sizeof path, "%s/jobs/%s/%s", root, id, t[k].name);
      put(path, &t[k], id);
    }
    if (!finished) {
      snprintf(path, sizeof path, "%s/ready/1000-%s", root, id);
      int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0) die("create", path);
      close(fd);
    }
  }
  sync();
  printf("{\"jobs\":%ld,\"kind\":\"%s\"}\n", n, finished ? "finished" : "queued");
  return 0;
}
