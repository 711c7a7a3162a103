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
 * every document is accounted for. */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>

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

static long long metric(harness *h, const char *needle) {
  char *text = ceb_metrics_render(h->metrics);
  long long v = -1;
  const char *p = text ? strstr(text, needle) : NULL;
  if (p) v = atoll(strchr(p, ' ') + 1);
  free(text);
  return v;
}

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

int main(void) {
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
  CHECK_INT(metric(&h, "cebridge_events_received_total{role=\"source\","
                       "plugin=\"testsource\",instance=\"in\"}"),
            7);
  CHECK_INT(metric(&h, "cebridge_mapping_failures_total{reason=\"timeout\"}"),
            1);
  CHECK(metric(&h, "\ncebridge_mapping_worker_starts_total ") >= 3);

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
