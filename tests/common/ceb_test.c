#include "ceb_test.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int ceb_test_failures = 0;
int ceb_test_checks = 0;

/* The temp dirs this test made: removed when it passes, kept (and named)
 * when it fails, or always with CEB_TEST_KEEP=1. */
static char **g_tmpdirs;
static size_t g_ntmpdirs;
static pthread_mutex_t g_tmplock = PTHREAD_MUTEX_INITIALIZER;

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void ceb_test_rmtree(const char *path) {
  nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmpdirs_settle(int passed) {
  const char *keep = getenv("CEB_TEST_KEEP");
  int rm = passed && !(keep && *keep && strcmp(keep, "0") != 0);
  pthread_mutex_lock(&g_tmplock);
  for (size_t i = 0; i < g_ntmpdirs; i++) {
    if (rm)
      ceb_test_rmtree(g_tmpdirs[i]);
    else
      fprintf(stderr, "kept %s\n", g_tmpdirs[i]);
    free(g_tmpdirs[i]);
  }
  free(g_tmpdirs);
  g_tmpdirs = NULL;
  g_ntmpdirs = 0;
  pthread_mutex_unlock(&g_tmplock);
}

int ceb_test_done(const char *name) {
  if (ceb_test_checks == 0) {
    fprintf(stderr, "%s: no check ran\n", name);
    tmpdirs_settle(0);
    return 1;
  }
  printf("%s: %d checks, %d failed\n", name, ceb_test_checks,
         ceb_test_failures);
  tmpdirs_settle(ceb_test_failures == 0);
  return ceb_test_failures ? 1 : 0;
}

int64_t ceb_test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ceb_test_wait(int (*cond)(void *arg), void *arg, int64_t timeout_ms) {
  int64_t end = ceb_test_now_ms() + timeout_ms;
  for (;;) {
    if (cond(arg)) return 1;
    if (ceb_test_now_ms() >= end) return 0;
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

char *ceb_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (cap - n - 1 == 0) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      } else {
        buf = nb;
      }
    }
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

void ceb_test_print_tail(const char *path, size_t max_bytes) {
  size_t len = 0;
  char *t = ceb_test_read_file(path, &len);
  if (!t) return;
  const char *from = len > max_bytes ? t + len - max_bytes : t;
  fprintf(stderr, "--- tail of %s ---\n%s\n---\n", path, from);
  free(t);
}

char *ceb_test_tmpdir(const char *tag) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  size_t sz = strlen(base) + strlen(tag) + 32;
  char *p = malloc(sz);
  if (!p) return NULL;
  snprintf(p, sz, "%s/ceb-%s-XXXXXX", base, tag);
  if (!mkdtemp(p)) {
    free(p);
    return NULL;
  }
  pthread_mutex_lock(&g_tmplock);
  char **grown = realloc(g_tmpdirs, (g_ntmpdirs + 1) * sizeof *grown);
  char *copy = strdup(p);
  if (grown && copy) {
    g_tmpdirs = grown;
    g_tmpdirs[g_ntmpdirs++] = copy;
  } else {
    if (grown) g_tmpdirs = grown;
    free(copy); /* out of memory in a test: the dir is just not removed */
  }
  pthread_mutex_unlock(&g_tmplock);
  return p;
}

void ceb_test_need_data(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0) return;
  fprintf(stderr,
          "test data missing: %s (%s); tests/data/ holds every third-party "
          "file the tests read, see tests/data/README.md\n",
          path, strerror(errno));
  exit(1);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

size_t ceb_test_max_in_window(const int64_t *t, size_t n, int64_t window_ms) {
  int64_t s[4096];
  if (n > sizeof s / sizeof *s) n = sizeof s / sizeof *s;
  memcpy(s, t, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_i64);
  size_t most = 0;
  for (size_t i = 0, j = 0; i < n; i++) {
    while (j < n && s[j] - s[i] < window_ms)
      j++;
    if (j - i > most) most = j - i;
  }
  return most;
}
