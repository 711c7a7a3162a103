/* Concurrency and shutdown of the intermediary: many parallel requests
 * through the thread pool (each answered 202 exactly once, each event
 * submitted once), and a drain whose deadline passes while a submit is
 * still held: drain reports CEB_ETIMEOUT, the instance is destroyed, and the
 * late durability callback must then be harmless (checked under ASan). */
#include "hin_harness.h"

#include <curl/curl.h>
#include <stdlib.h>

#define NREQ 200

static size_t discard(char *p, size_t size, size_t n, void *arg) {
  (void)p;
  (void)arg;
  return size * n;
}
#define PARALLEL 32

static const char *const STRUCT_HDR =
    "Content-Type: application/cloudevents+json";

typedef struct metric_arg {
  ceb_metrics *m;
  const char *name, *labels;
  double want;
} metric_arg;

static int metric_reached(void *arg) {
  metric_arg *a = arg;
  return ceb_metrics_get(a->m, a->name, a->labels) >= a->want;
}

static void test_parallel(void) {
  static const char *const cfg[] = {"auth=none", "threads=4", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  CURLM *multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)PARALLEL);
  struct curl_slist *hl = curl_slist_append(NULL, STRUCT_HDR);
  static char bodies[NREQ][160];
  CURL *easy[NREQ];
  for (int i = 0; i < NREQ; i++) {
    snprintf(bodies[i], sizeof bodies[i],
             "{\"specversion\":\"1.0\",\"id\":\"p%d\",\"source\":\"urn:t\","
             "\"type\":\"nl.edu.load\",\"data\":%d}",
             i, i);
    easy[i] = curl_easy_init();
    curl_easy_setopt(easy[i], CURLOPT_URL, e->url);
    curl_easy_setopt(easy[i], CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(easy[i], CURLOPT_POSTFIELDS, bodies[i]);
    curl_easy_setopt(easy[i], CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy[i], CURLOPT_NOSIGNAL, 1L);
    curl_multi_add_handle(multi, easy[i]);
  }
  /* bounded: every transfer has a 30s timeout */
  int running = 1;
  while (running) {
    curl_multi_perform(multi, &running);
    if (running) curl_multi_poll(multi, NULL, 0, 100, NULL);
  }
  int ok = 0;
  for (int i = 0; i < NREQ; i++) {
    long code = 0;
    curl_easy_getinfo(easy[i], CURLINFO_RESPONSE_CODE, &code);
    ok += code == 202;
    curl_multi_remove_handle(multi, easy[i]);
    curl_easy_cleanup(easy[i]);
  }
  curl_multi_cleanup(multi);
  curl_slist_free_all(hl);
  CHECK_INT(ok, NREQ);
  CHECK_INT(ceb_fake_event_count(e->fake), NREQ);
  CHECK_INT(ceb_fake_committed_count(e->fake), NREQ);
  /* the metric is recorded when MHD completes the request, which may be
   * just after the client read its response */
  metric_arg m = {e->fake->metrics, "cebridge_http_requests_total",
                  "code=\"202\"", NREQ};
  CHECK(ceb_test_wait(metric_reached, &m, 5000));
  CHECK(ceb_metrics_get(e->fake->metrics, "cebridge_http_requests_total",
                        "code=\"202\"") == NREQ);
  hin_stop(e);
}

typedef struct count_arg {
  ceb_fake_host *f;
  size_t n;
} count_arg;

static int events_at_least(void *arg) {
  count_arg *c = arg;
  return ceb_fake_event_count(c->f) >= c->n;
}

static void test_drain_timeout(void) {
  static const char *const cfg[] = {"auth=none", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_COMMIT_HOLD;
  pthread_mutex_unlock(&e->fake->lock);
  const char *const hdrs[] = {STRUCT_HDR, NULL};
  hin_async *a = hin_post_async(
      e, hdrs,
      "{\"specversion\":\"1.0\",\"id\":\"late\",\"source\":\"urn:t\","
      "\"type\":\"nl.edu.late\"}");
  count_arg c = {e->fake, 1};
  CHECK(ceb_test_wait(events_at_least, &c, 5000));
  int64_t now = e->fake->host.now_ms(&e->fake->inst);
  CHECK_INT(e->plugin->drain(e->state, now + 200), CEB_ETIMEOUT);
  /* the held client got an answer (or its connection closed), never 202 */
  CHECK(hin_async_wait(a, 10000));
  hin_resp r;
  hin_async_free(a, &r);
  CHECK(r.status != 202);
  hin_resp_free(&r);
  e->plugin->destroy(e->state);
  e->destroyed = 1;
  /* the durability callback arrives after destroy */
  ceb_fake_commit(e->fake, CEB_OK);
  CHECK_INT(ceb_fake_committed_count(e->fake), 1);
  hin_stop(e);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test_parallel();
  test_drain_timeout();
  curl_global_cleanup();
  return ceb_test_done("test_http_in_load");
}
