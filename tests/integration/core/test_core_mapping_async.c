/* host->submit_mapped_async (ABI 1.4) through the runtime and the real
 * mapping workers: the call returns at once and the outcome comes in the
 * callback, exactly once: durable for a document the program maps; refused
 * (refused = 1, nothing taken) with the program's error, the timeout, or
 * the validation's violations; a source without map is refused by the call
 * itself and its callback never runs. Three threads submitting 150
 * documents at once, bad ones among them: every callback once, exactly the
 * good events delivered. At close, documents still queued or being mapped
 * each get their callback (durable or refused with CEB_ESHUTDOWN). */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "map = if .kind == \"boom\" then error(\"bad kind: \" + .kind) "
    "elif .kind == \"loop\" then (def f: f; f) else "
    "{specversion: \"1.0\", id: .key, "
    "source: \"urn:nld:oin:00000001234567890000:systeem:test\", "
    "type: (\"nl.edu.\" + .kind)} end\n"
    "[source raw]\nplugin = testsource\nmap = .x\n"
    "[source plain]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\n"
    "[route r]\nfrom = in, raw, plain\nto = out\n";

/* One call's outcome, filled by its callback. */
typedef struct outcome {
  int calls, status, refused;
  size_t accepted;
  char reason[512];
  char violation[64]; /* the first violation's attribute */
} outcome;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;

static void on_outcome(void *arg, const ceb_submit_result *r) {
  outcome *o = arg;
  pthread_mutex_lock(&g_lock);
  o->calls++;
  o->status = r->status;
  o->refused = r->refused;
  o->accepted = r->accepted;
  snprintf(o->reason, sizeof o->reason, "%s", r->reason ? r->reason : "");
  if (r->violations && r->violations->count)
    snprintf(o->violation, sizeof o->violation, "%s",
             r->violations->items[0].attribute);
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

static int submit_async(harness *h, const char *src, const char *doc,
                        outcome *o) {
  testsource *s = harness_source(h, src);
  const ceb_host *host = testsource_host(s);
  if (!CEB_HOST_HAS(host, submit_mapped_async)) return CEB_EUNSUPPORTED;
  ceb_submit_opts opts = {.struct_size = sizeof opts, .client = "c-1"};
  return host->submit_mapped_async(testsource_instance(s), doc, strlen(doc),
                                   &opts, on_outcome, o);
}

/* Waits (bounded, 20 s) until every outcome of os[0..n) has a call. */
static int wait_all(outcome *os, size_t n) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 20;
  pthread_mutex_lock(&g_lock);
  size_t i = 0;
  while (i < n) {
    if (os[i].calls) {
      i++;
      continue;
    }
    if (pthread_cond_timedwait(&g_cond, &g_lock, &until) != 0) break;
  }
  pthread_mutex_unlock(&g_lock);
  return i == n;
}

static int calls_of(outcome *o) {
  pthread_mutex_lock(&g_lock);
  int n = o->calls;
  pthread_mutex_unlock(&g_lock);
  return n;
}

/* ---- three threads at once ---- */

#define PER_THREAD 50

typedef struct burst {
  harness *h;
  int t;
  outcome os[PER_THREAD];
  int rc[PER_THREAD];
} burst;

/* Every 10th document throws. */
static void *burst_main(void *arg) {
  burst *b = arg;
  for (int i = 0; i < PER_THREAD; i++) {
    char doc[128];
    snprintf(doc, sizeof doc, "{\"key\":\"t%d-%d\",\"kind\":\"%s\"}", b->t, i,
             i % 10 == 3 ? "boom" : "created");
    b->rc[i] = submit_async(b->h, "in", doc, &b->os[i]);
  }
  return NULL;
}

int main(void) {
  harness h;
  if (harness_open(&h, "mapping_async",
                   "mapping.timeout = 150ms\nmapping.workers = 2", k_conf) != 0)
    return ceb_test_done("integration_core_mapping_async");
  testsink *out = harness_sink(&h, "out");

  /* good, throws, not a CloudEvent object, invalid, loops */
  outcome os[5] = {0};
  CHECK_INT(
      submit_async(&h, "in", "{\"key\":\"a-1\",\"kind\":\"created\"}", &os[0]),
      CEB_OK);
  CHECK_INT(
      submit_async(&h, "in", "{\"key\":\"a-2\",\"kind\":\"boom\"}", &os[1]),
      CEB_OK);
  CHECK_INT(submit_async(&h, "raw", "{\"x\":42}", &os[2]), CEB_OK);
  CHECK_INT(submit_async(&h, "raw",
                         "{\"x\":{\"specversion\":\"1.0\",\"id\":\"a-4\","
                         "\"type\":\"t\"}}",
                         &os[3]),
            CEB_OK);
  CHECK_INT(
      submit_async(&h, "in", "{\"key\":\"a-5\",\"kind\":\"loop\"}", &os[4]),
      CEB_OK);
  CHECK(wait_all(os, 5));
  CHECK_INT(os[0].status, CEB_OK);
  CHECK_INT(os[0].refused, 0);
  CHECK_INT(os[0].accepted, 1);
  CHECK(harness_wait_id(out, "a-1", 1));
  CHECK_INT(os[1].status, CEB_EMAPPING);
  CHECK_INT(os[1].refused, 1);
  CHECK_STR(os[1].reason, "mapping: bad kind: boom");
  CHECK_INT(os[2].status, CEB_EMAPPING);
  CHECK_MSG(strstr(os[2].reason, "output 1 is not a JSON object"), "%s",
            os[2].reason);
  CHECK_INT(os[3].status, CEB_EVALIDATION);
  CHECK_INT(os[3].refused, 1);
  CHECK_MSG(strstr(os[3].reason, "event 1 of the mapping"), "%s", os[3].reason);
  CHECK_STR(os[3].violation, "source");
  CHECK_INT(os[4].status, CEB_EMAPPING);
  CHECK_STR(os[4].reason, "mapping: mapping timed out after 150 ms");
  /* a source without map: refused by the call, no callback */
  outcome none = {0};
  CHECK_INT(submit_async(&h, "plain", "{}", &none), CEB_EINVAL);

  /* three threads at once */
  burst bs[3];
  pthread_t th[3];
  for (int t = 0; t < 3; t++) {
    bs[t] = (burst){.h = &h, .t = t};
    pthread_create(&th[t], NULL, burst_main, &bs[t]);
  }
  for (int t = 0; t < 3; t++)
    pthread_join(th[t], NULL);
  size_t good = 0;
  for (int t = 0; t < 3; t++) {
    for (int i = 0; i < PER_THREAD; i++)
      CHECK_INT(bs[t].rc[i], CEB_OK);
    CHECK(wait_all(bs[t].os, PER_THREAD));
    for (int i = 0; i < PER_THREAD; i++) {
      outcome *o = &bs[t].os[i];
      if (i % 10 == 3) {
        CHECK_INT(o->status, CEB_EMAPPING);
        CHECK_INT(o->refused, 1);
      } else {
        CHECK_INT(o->status, CEB_OK);
        CHECK_INT(o->accepted, 1);
        good++;
      }
    }
  }
  CHECK_INT(good, 135);
  CHECK(harness_wait_count(out, 1 + good));
  CHECK_INT(testsink_count_id(out, "t0-3"), 0);
  CHECK_INT(testsink_count_id(out, "t2-49"), 1);
  CHECK_INT(none.calls, 0);

  /* close with documents in flight: a loop holds one mapping thread for
   * the timeout, twenty more queue behind and on the other thread */
  outcome late[21] = {0};
  CHECK_INT(
      submit_async(&h, "in", "{\"key\":\"z-0\",\"kind\":\"loop\"}", &late[0]),
      CEB_OK);
  for (int i = 1; i < 21; i++) {
    char doc[96];
    snprintf(doc, sizeof doc, "{\"key\":\"z-%d\",\"kind\":\"created\"}", i);
    CHECK_INT(submit_async(&h, "in", doc, &late[i]), CEB_OK);
  }
  harness_close(&h);
  for (int i = 0; i < 21; i++) {
    CHECK_INT(calls_of(&late[i]), 1);
    CHECK_MSG(late[i].status == CEB_OK || late[i].status == CEB_ESHUTDOWN ||
                  (i == 0 && late[i].status == CEB_EMAPPING),
              "document %d: %s (%s)", i, ceb_strerror(late[i].status),
              late[i].reason);
  }
  return ceb_test_done("integration_core_mapping_async");
}
