/* host->submit_mapped_batch (ABI 1.3) through the runtime and the real
 * mapping workers: one batch of input documents holding good ones, one the
 * program throws on, one whose event the route filter skips, one whose
 * event is not a valid CloudEvent, one that loops (its worker is killed at
 * mapping.timeout in the middle of the batch and the rest runs on the
 * replacement), one whose event the route filter fails on, and one that is
 * not JSON. Each document gets its exact outcome; the good and the
 * filtered ones are journaled as one unit (one callback, one count of
 * received events, no second count for the retries that took the refused
 * ones out), the good ones reach the sink in document order per key, and
 * every document is accounted for. Then a worker killed from outside
 * (SIGKILL) while it runs an item of a batch: that item fails with the
 * signal, the items before and after it are taken, nothing is lost. */
#include "harness.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "map = if .loop then (def f: f; f) elif .boom then error(\"bad: \" + "
    ".boom) else {specversion: \"1.0\", id: .id, type: (.type // "
    "\"nl.edu.ok\"), partitionkey: .key} + (if .nosource then {} else "
    "{source: \"urn:x:batch\"} end) end\n"
    "[sink out]\nplugin = testsink\n"
    "[route r]\nfrom = in\nto = out\norder_by = partitionkey\n"
    "filter = if .type == \"nl.edu.err\" then error(\"filter boom\") "
    "else .type != \"nl.edu.skip\" end\n";

typedef struct waiter {
  pthread_mutex_t lock;
  int calls;
  ceb_submit_result res;
} waiter;

static void on_durable(void *arg, const ceb_submit_result *r) {
  waiter *w = arg;
  pthread_mutex_lock(&w->lock);
  w->res = *r;
  w->calls++;
  pthread_mutex_unlock(&w->lock);
}

static int called(void *arg) {
  waiter *w = arg;
  pthread_mutex_lock(&w->lock);
  int n = w->calls;
  pthread_mutex_unlock(&w->lock);
  return n > 0;
}

/* ---- a worker killed mid-batch ---- */

static const char *k_conf_kill =
    "[source in]\nplugin = testsource\n"
    "map = if .spin then last(range(1e18)) else {specversion: \"1.0\", id: "
    ".id, type: \"nl.edu.ok\", source: \"urn:x:batch\", partitionkey: "
    ".key} end\n"
    "[sink out]\nplugin = testsink\n"
    "[route r]\nfrom = in\nto = out\norder_by = partitionkey\n";

/* CPU ticks (utime + stime) of this process's child pid, or -1. */
static long long child_ticks(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* after the command name */
  int ppid = 0;
  unsigned long long ut = 0, st = 0;
  if (!p ||
      sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ppid, &ut, &st) != 3 ||
      ppid != (int)getpid())
    return -1;
  return (long long)(ut + st);
}

typedef struct spin_arg {
  pid_t pid; /* out: the child that spins */
} spin_arg;

/* A child of this process named cebridge-mapper that has used 30 ticks
 * (0.3 s) of CPU: the one running the endless item (the others idle). */
static int find_spinning(void *arg) {
  spin_arg *a = arg;
  DIR *d = opendir("/proc");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) && !a->pid) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 0) continue;
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
    fclose(f);
    if (strncmp(comm, "cebridge-mapper", 15) == 0 && child_ticks(pid) >= 30)
      a->pid = pid;
  }
  closedir(d);
  return a->pid != 0;
}

typedef struct batch_call {
  const ceb_host *host;
  ceb_instance *inst;
  ceb_mapped_doc *docs;
  size_t n;
  waiter *w;
  int rc;
} batch_call;

static void *call_batch(void *arg) {
  batch_call *c = arg;
  ceb_submit_opts o = {.struct_size = sizeof o};
  c->rc = c->host->submit_mapped_batch(c->inst, c->docs, c->n, &o, on_durable,
                                       c->w);
  return NULL;
}

static void test_killed_worker(void) {
  harness h;
  if (harness_open(&h, "mapkill", "mapping.timeout = 60s\nmapping.workers = 2",
                   k_conf_kill) != 0)
    return;
  testsink *out = harness_sink(&h, "out");
  testsource *src = harness_source(&h, "in");
  static const char *const texts[] = {
      "{\"id\":\"k-1\",\"key\":\"a\"}", "{\"id\":\"k-2\",\"key\":\"b\"}",
      "{\"spin\":true}", "{\"id\":\"k-3\",\"key\":\"a\"}",
      "{\"id\":\"k-4\",\"key\":\"b\"}"};
  enum { N = sizeof texts / sizeof texts[0] };
  ceb_mapped_doc docs[N];
  for (size_t i = 0; i < N; i++)
    docs[i] = (ceb_mapped_doc){.struct_size = sizeof docs[i],
                               .doc = texts[i],
                               .len = strlen(texts[i])};
  waiter w = {.calls = 0};
  pthread_mutex_init(&w.lock, NULL);
  batch_call c = {
      testsource_host(src), testsource_instance(src), docs, N, &w, -1};
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, call_batch, &c), 0);
  /* the worker that runs the endless item, found by its CPU time, and
   * killed in the middle of the batch */
  spin_arg a = {0};
  CHECK(ceb_test_wait(find_spinning, &a, 30000));
  if (a.pid) kill(a.pid, SIGKILL);
  pthread_join(t, NULL);
  CHECK_INT(c.rc, CEB_OK);
  for (size_t i = 0; i < N; i++)
    CHECK_MSG(docs[i].status == (i == 2 ? CEB_EMAPPING : CEB_OK),
              "doc %zu: %d (%s)", i, docs[i].status, docs[i].reason);
  CHECK_MSG(strstr(docs[2].reason, "the mapping worker died running this "
                                   "item (signal 9"),
            "%s", docs[2].reason);
  CHECK(ceb_test_wait(called, &w, 30000));
  pthread_mutex_lock(&w.lock);
  CHECK_INT(w.calls, 1);
  CHECK_INT(w.res.accepted, 4);
  pthread_mutex_unlock(&w.lock);
  CHECK(harness_wait_count(out, 4));
  static const char *const ids[] = {"k-1", "k-2", "k-3", "k-4"};
  for (size_t i = 0; i < 4; i++)
    CHECK_INT(testsink_count_id(out, ids[i]), 1);
  /* in order per key */
  size_t at[4] = {0};
  for (size_t i = 0; i < testsink_count(out); i++) {
    testsink_seen seen;
    for (size_t k = 0; testsink_get(out, i, &seen) && k < 4; k++)
      if (strcmp(seen.id, ids[k]) == 0) at[k] = i;
  }
  CHECK(at[0] < at[2] && at[1] < at[3]);
  pthread_mutex_destroy(&w.lock);
  harness_close(&h);
}

int main(void) {
  test_killed_worker();
  harness h;
  if (harness_open(&h, "mapbatch",
                   "mapping.timeout = 150ms\nmapping.workers = 2", k_conf) != 0)
    return ceb_test_done("integration_core_mapping_batch");
  testsink *out = harness_sink(&h, "out");
  testsource *src = harness_source(&h, "in");
  const ceb_host *host = testsource_host(src);
  CHECK(CEB_HOST_HAS(host, submit_mapped_batch));

  static const char *const texts[] = {
      "{\"id\":\"g-1\",\"key\":\"a\"}",
      "{\"id\":\"g-2\",\"key\":\"b\"}",
      "{\"boom\":\"x\"}",
      "{\"id\":\"s-1\",\"key\":\"a\",\"type\":\"nl.edu.skip\"}",
      "{\"id\":\"n-1\",\"nosource\":true}",
      "{\"loop\":true}",
      "{\"id\":\"g-3\",\"key\":\"a\"}",
      "{\"id\":\"e-1\",\"key\":\"b\",\"type\":\"nl.edu.err\"}",
      "{\"id\":\"g-4\",\"key\":\"b\"}",
      "{\"id\":",
  };
  enum { N = sizeof texts / sizeof texts[0] };
  ceb_mapped_doc docs[N];
  for (size_t i = 0; i < N; i++)
    docs[i] = (ceb_mapped_doc){.struct_size = sizeof docs[i],
                               .doc = texts[i],
                               .len = strlen(texts[i]),
                               .status = -12345};
  waiter w = {.calls = 0};
  pthread_mutex_init(&w.lock, NULL);
  ceb_submit_opts o = {.struct_size = sizeof o};
  CHECK_INT(host->submit_mapped_batch(testsource_instance(src), docs, N, &o,
                                      on_durable, &w),
            CEB_OK);
  CHECK(ceb_test_wait(called, &w, 30000));

  /* each document's own outcome */
  static const int want[N] = {
      CEB_OK,       CEB_OK, CEB_EMAPPING,    CEB_OK, CEB_EVALIDATION,
      CEB_EMAPPING, CEB_OK, CEB_EVALIDATION, CEB_OK, CEB_EMAPPING};
  for (size_t i = 0; i < N; i++) {
    CHECK_MSG(docs[i].status == want[i], "doc %zu: status %d, want %d (%s)", i,
              docs[i].status, want[i], docs[i].reason);
    CHECK_MSG((docs[i].status == CEB_OK) == (docs[i].nevents == 1),
              "doc %zu: %zu events", i, docs[i].nevents);
  }
  CHECK_STR(docs[2].reason, "mapping: bad: x");
  CHECK_MSG(strncmp(docs[4].reason, "refused: ", 9) == 0 &&
                strstr(docs[4].reason, "source"),
            "%s", docs[4].reason);
  CHECK_STR(docs[5].reason, "mapping: mapping timed out after 150 ms");
  CHECK_MSG(strstr(docs[7].reason, "route.filter") &&
                strstr(docs[7].reason, "filter boom"),
            "%s", docs[7].reason);
  CHECK_MSG(strstr(docs[9].reason, "input is not JSON"), "%s", docs[9].reason);

  /* one unit: one callback for the five taken (the skipped one too) */
  pthread_mutex_lock(&w.lock);
  CHECK_INT(w.calls, 1);
  CHECK_INT(w.res.status, CEB_OK);
  CHECK_INT(w.res.accepted, 5);
  pthread_mutex_unlock(&w.lock);

  /* the good ones delivered, each once, in document order per key; the
   * skipped one journaled without the route, the refused ones nowhere */
  CHECK(harness_wait_count(out, 4));
  const char *order_a[] = {"g-1", "g-3"}, *order_b[] = {"g-2", "g-4"};
  size_t ka = 0, kb = 0;
  for (size_t i = 0; i < testsink_count(out); i++) {
    testsink_seen seen;
    if (!testsink_get(out, i, &seen)) continue;
    if (ka < 2 && strcmp(seen.id, order_a[ka]) == 0)
      ka++;
    else if (kb < 2 && strcmp(seen.id, order_b[kb]) == 0)
      kb++;
    else
      CHECK_MSG(0, "delivery %zu: %s out of order or unexpected", i, seen.id);
  }
  CHECK_INT(ka + kb, 4);
  char buf[32];
  CHECK_STR(harness_state(&h, "s-1", "r", buf, sizeof buf), "");
  CHECK_INT(testsink_count_id(out, "s-1"), 0);
  CHECK_INT(testsink_count_id(out, "n-1"), 0);
  CHECK_INT(testsink_count_id(out, "e-1"), 0);

  /* received once each (7 events were mapped: the retries that took the
   * refused ones out do not count them again); the worker replaced */
  CHECK_INT(harness_metric(&h, "cebridge_events_received_total{role=\"source\","
                               "plugin=\"testsource\",instance=\"in\"}"),
            7);
  CHECK_INT(
      harness_metric(&h, "cebridge_mapping_failures_total{reason=\"timeout\"}"),
      1);
  CHECK(harness_metric(&h, "\ncebridge_mapping_worker_starts_total ") >= 3);

  /* a source without documents, or a document too old to write into */
  CHECK_INT(host->submit_mapped_batch(testsource_instance(src), docs, 0, &o,
                                      on_durable, &w),
            CEB_EINVAL);
  docs[0].struct_size = 8;
  CHECK_INT(host->submit_mapped_batch(testsource_instance(src), docs, 1, &o,
                                      on_durable, &w),
            CEB_EINVAL);
  pthread_mutex_lock(&w.lock);
  CHECK_INT(w.calls, 1);
  pthread_mutex_unlock(&w.lock);
  pthread_mutex_destroy(&w.lock);
  harness_close(&h);
  return ceb_test_done("integration_core_mapping_batch");
}
