/* The intermediary without authentication (loopback): content modes,
 * batches, every error status of the request path, 202 only after the
 * event is durable, 503 on refusal and during drain, the webhook
 * handshake, a large request head under the default connection_memory,
 * and its metrics. */
#include "hin_harness.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const BINARY_HDRS[] = {
    "ce-specversion: 1.0",
    "ce-id: b1",
    "ce-source: urn:nld:oin:00000001:test",
    "ce-type: nl.edu.test.created",
    "Content-Type: application/json",
    NULL};
static const char *const STRUCT_HDRS[] = {
    "Content-Type: application/cloudevents+json; charset=utf-8", NULL};
static const char *const BATCH_HDRS[] = {
    "Content-Type: application/cloudevents-batch+json", NULL};

#define EVENT(id, extra)                                                       \
  "{\"specversion\":\"1.0\",\"id\":\"" id "\",\"source\":\"urn:test\","        \
  "\"type\":\"nl.edu.test\"" extra "}"

static void test_modes(hin_env *e) {
  hin_resp r = hin_post(e, BINARY_HDRS, "{\"student\":42}");
  CHECK_INT(r.status, 202);
  CHECK(hin_json_str(&r, "status", "accepted"));
  CHECK(strstr(r.body, "\"b1\"") != NULL);
  hin_resp_free(&r);
  ceb_event *ev = ceb_fake_event(e->fake, 0);
  CHECK(ev != NULL);
  if (ev) {
    CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.test.created");
    CHECK_STR(ceb_event_get(ev, "datacontenttype"), "application/json");
    size_t len = 0;
    const void *d = ceb_event_data(ev, &len);
    CHECK(d && len == 14 && memcmp(d, "{\"student\":42}", 14) == 0);
    ceb_event_unref(ev);
  }

  r = hin_post(e, STRUCT_HDRS,
               EVENT("s1", ",\"datacontenttype\":\"application/json\","
                           "\"data\":{\"x\":1}"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  ev = ceb_fake_event(e->fake, 1);
  CHECK(ev && strcmp(ceb_event_get(ev, "id"), "s1") == 0);
  ceb_event_unref(ev);

  r = hin_post(e, BATCH_HDRS, "[" EVENT("m1", "") "," EVENT("m2", "") "]");
  CHECK_INT(r.status, 202);
  CHECK(strstr(r.body, "\"accepted\":2") != NULL);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 4);

  /* chunked transfer encoding */
  const char *body = EVENT("c1", ",\"data\":\"chunked\"");
  r = hin_request(e->url, "POST", STRUCT_HDRS, body, strlen(body), 1);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 5);
}

static void test_client_errors(hin_env *e) {
  char h[256];
  size_t before = ceb_fake_event_count(e->fake);
  /* one malformed event in a batch: the whole batch is refused and the
   * problem names its index */
  hin_resp r = hin_post(
      e, BATCH_HDRS,
      "[" EVENT("x1", "") "," EVENT(
          "x2", ",\"data\":1,\"data_base64\":\"AA==\"") "," EVENT("x3",
                                                                  "") "]");
  CHECK_INT(r.status, 400);
  CHECK(hin_json_str(&r, "code", "event.malformed"));
  CHECK_INT(hin_errors_count(&r), 1);
  CHECK_INT(hin_error_index(&r, 0), 1);
  CHECK_STR(hin_header(&r, "Content-Type", h, sizeof h),
            "application/problem+json");
  hin_resp_free(&r);

  /* rule violations of two events are listed with their indexes */
  r = hin_post(
      e, BATCH_HDRS,
      "[" EVENT("v1", ",\"time\":\"yesterday\"") "," EVENT("v2", "") "," EVENT(
          "v3", ",\"dataschema\":\"::not a uri\"") "]");
  CHECK_INT(r.status, 422);
  CHECK(hin_json_str(&r, "code", "event.invalid"));
  CHECK_INT(hin_errors_count(&r), 2);
  CHECK_INT(hin_error_index(&r, 0), 0);
  CHECK_INT(hin_error_index(&r, 1), 2);
  hin_resp_free(&r);

  r = hin_post(e, BATCH_HDRS, "[]");
  CHECK_INT(r.status, 400);
  CHECK(hin_json_str(&r, "code", "batch.empty"));
  hin_resp_free(&r);

  r = hin_post(e, STRUCT_HDRS, "{\"specversion\":");
  CHECK_INT(r.status, 400);
  CHECK(hin_json_str(&r, "code", "event.malformed"));
  hin_resp_free(&r);

  static const char *const plain[] = {"Content-Type: text/plain", NULL};
  r = hin_post(e, plain, "hello");
  CHECK_INT(r.status, 415);
  CHECK(hin_json_str(&r, "code", "media_type.not_cloudevent"));
  hin_resp_free(&r);
  static const char *const xml[] = {"Content-Type: application/cloudevents+xml",
                                    NULL};
  r = hin_post(e, xml, "<event/>");
  CHECK_INT(r.status, 415);
  hin_resp_free(&r);

  char url[160];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/other", e->port);
  r = hin_request(url, "POST", STRUCT_HDRS, "{}", 2, 0);
  CHECK_INT(r.status, 404);
  hin_resp_free(&r);
  r = hin_request(e->url, "GET", NULL, NULL, 0, 0);
  CHECK_INT(r.status, 405);
  CHECK(hin_header(&r, "Allow", h, sizeof h) && strstr(h, "POST"));
  hin_resp_free(&r);

  /* max_body is 4KiB here: announced and chunked bodies over it */
  size_t big = 10000;
  char *huge = malloc(big + 1);
  memset(huge, 'a', big);
  huge[big] = '\0';
  r = hin_request(e->url, "POST", BINARY_HDRS, huge, big, 0);
  CHECK_INT(r.status, 413);
  CHECK(hin_json_str(&r, "code", "too_large"));
  hin_resp_free(&r);
  r = hin_request(e->url, "POST", BINARY_HDRS, huge, 6000, 1);
  CHECK_INT(r.status, 413);
  hin_resp_free(&r);
  free(huge);
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

static void set_mode(hin_env *e, ceb_fake_submit_mode m, int refuse) {
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = m;
  e->fake->refuse_status = refuse;
  pthread_mutex_unlock(&e->fake->lock);
}

static void test_refusals(hin_env *e) {
  char h[64];
  set_mode(e, CEB_FAKE_REFUSE, CEB_EBUSY);
  hin_resp r = hin_post(e, BINARY_HDRS, "{}");
  CHECK_INT(r.status, 503);
  CHECK(hin_json_str(&r, "code", "backpressure"));
  CHECK_STR(hin_header(&r, "Retry-After", h, sizeof h), "7");
  hin_resp_free(&r);
  set_mode(e, CEB_FAKE_REFUSE, CEB_ESHUTDOWN);
  r = hin_post(e, BINARY_HDRS, "{}");
  CHECK_INT(r.status, 503);
  CHECK(hin_header(&r, "Retry-After", h, sizeof h) != NULL);
  hin_resp_free(&r);
  set_mode(e, CEB_FAKE_REFUSE, CEB_EVALIDATION);
  r = hin_post(e, BINARY_HDRS, "{}");
  CHECK_INT(r.status, 422);
  CHECK(hin_json_str(&r, "code", "event.invalid"));
  hin_resp_free(&r);
  set_mode(e, CEB_FAKE_REFUSE, CEB_ETOOLARGE);
  r = hin_post(e, BINARY_HDRS, "{}");
  CHECK_INT(r.status, 413);
  hin_resp_free(&r);
  set_mode(e, CEB_FAKE_COMMIT_NOW, CEB_EBUSY);
  /* the host says it is not accepting: refused before the body is read */
  pthread_mutex_lock(&e->fake->lock);
  e->fake->accepting = 0;
  pthread_mutex_unlock(&e->fake->lock);
  size_t before = ceb_fake_event_count(e->fake);
  r = hin_post(e, BINARY_HDRS, "{}");
  CHECK_INT(r.status, 503);
  CHECK(hin_json_str(&r, "code", "backpressure"));
  CHECK_STR(hin_header(&r, "Retry-After", h, sizeof h), "7");
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before);
  pthread_mutex_lock(&e->fake->lock);
  e->fake->accepting = 1;
  pthread_mutex_unlock(&e->fake->lock);
}

typedef struct count_arg {
  ceb_fake_host *f;
  size_t n;
} count_arg;

static int events_at_least(void *arg) {
  count_arg *c = arg;
  return ceb_fake_event_count(c->f) >= c->n;
}

static void test_durable_first(hin_env *e) {
  set_mode(e, CEB_FAKE_COMMIT_HOLD, 0);
  size_t before = ceb_fake_event_count(e->fake);
  hin_async *a = hin_post_async(e, BINARY_HDRS, "{\"held\":true}");
  count_arg c = {e->fake, before + 1};
  CHECK(ceb_test_wait(events_at_least, &c, 5000));
  /* submitted but not durable: no response may have been sent */
  CHECK(!hin_async_wait(a, 300));
  ceb_fake_commit(e->fake, CEB_OK);
  CHECK(hin_async_wait(a, 5000));
  hin_resp r;
  hin_async_free(a, &r);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);

  /* the commit fails: 503, never 202 */
  a = hin_post_async(e, BINARY_HDRS, "{\"held\":2}");
  c.n = before + 2;
  CHECK(ceb_test_wait(events_at_least, &c, 5000));
  CHECK(!hin_async_wait(a, 100));
  ceb_fake_commit(e->fake, CEB_EIO);
  CHECK(hin_async_wait(a, 5000));
  hin_async_free(a, &r);
  CHECK_INT(r.status, 503);
  CHECK(hin_json_str(&r, "code", "not_durable"));
  hin_resp_free(&r);
  set_mode(e, CEB_FAKE_COMMIT_NOW, 0);
}

static void test_handshake(hin_env *e) {
  char h[128];
  static const char *const ok[] = {
      "WebHook-Request-Origin: eventemitter.example.com", NULL};
  hin_resp r = hin_request(e->url, "OPTIONS", ok, NULL, 0, 0);
  CHECK_INT(r.status, 200);
  CHECK_STR(hin_header(&r, "WebHook-Allowed-Origin", h, sizeof h),
            "eventemitter.example.com");
  CHECK_STR(hin_header(&r, "WebHook-Allowed-Rate", h, sizeof h), "*");
  hin_resp_free(&r);
  static const char *const sub[] = {"WebHook-Request-Origin: Hooks.Partner.NL",
                                    NULL};
  r = hin_request(e->url, "OPTIONS", sub, NULL, 0, 0);
  CHECK_INT(r.status, 200);
  CHECK_STR(hin_header(&r, "WebHook-Allowed-Origin", h, sizeof h),
            "Hooks.Partner.NL");
  hin_resp_free(&r);
  static const char *const bad[] = {"WebHook-Request-Origin: evil.example.org",
                                    NULL};
  r = hin_request(e->url, "OPTIONS", bad, NULL, 0, 0);
  CHECK_INT(r.status, 403);
  CHECK(hin_header(&r, "WebHook-Allowed-Origin", h, sizeof h) == NULL);
  hin_resp_free(&r);
}

typedef struct drain_arg {
  hin_env *e;
  int status;
  atomic_int done;
} drain_arg;

/* The default connection_memory holds a 22 KiB request head (a large
 * token and many headers): more headers than the request record keeps
 * inline, ce-* ones among the last, and an id the 202 must escape. */
static void test_large_head(hin_env *e) {
  enum { NPAD = 20, PAD = 700 };
  char *pads[NPAD];
  const char *hdrs[NPAD + 8];
  size_t k = 0;
  char *token = malloc(8192 + 32);
  CHECK(token != NULL);
  if (!token) return;
  memcpy(token, "X-Token: ", 9);
  memset(token + 9, 't', 8192);
  token[9 + 8192] = '\0';
  hdrs[k++] = token;
  for (int i = 0; i < NPAD; i++) {
    pads[i] = malloc(PAD + 32);
    CHECK(pads[i] != NULL);
    if (!pads[i]) return;
    int n = snprintf(pads[i], 32, "X-Pad-%02d: ", i);
    memset(pads[i] + n, 'p', PAD);
    pads[i][n + PAD] = '\0';
    hdrs[k++] = pads[i];
  }
  hdrs[k++] = "ce-specversion: 1.0";
  hdrs[k++] = "ce-id: big\\head\"1";
  hdrs[k++] = "ce-source: urn:nld:oin:00000001:test";
  hdrs[k++] = "ce-type: nl.edu.test.created";
  hdrs[k++] = "ce-edulast: last-header";
  hdrs[k++] = "Content-Type: application/json";
  hdrs[k] = NULL;
  set_mode(e, CEB_FAKE_COMMIT_NOW, 0);
  size_t before = ceb_fake_event_count(e->fake);
  hin_resp r = hin_post(e, hdrs, "{\"big\":true}");
  CHECK_INT(r.status, 202);
  json_t *j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
  CHECK_STR(json_string_value(json_array_get(json_object_get(j, "ids"), 0)),
            "big\\head\"1");
  json_decref(j);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before + 1);
  ceb_event *ev = ceb_fake_event(e->fake, before);
  CHECK(ev != NULL);
  if (ev) {
    CHECK_STR(ceb_event_get(ev, "id"), "big\\head\"1");
    CHECK_STR(ceb_event_get(ev, "edulast"), "last-header");
    ceb_event_unref(ev);
  }
  for (int i = 0; i < NPAD; i++)
    free(pads[i]);
  free(token);
}

static void *drain_main(void *arg) {
  drain_arg *d = arg;
  d->status = d->e->plugin->drain(
      d->e->state, d->e->fake->host.now_ms(&d->e->fake->inst) + 10000);
  atomic_store(&d->done, 1);
  return NULL;
}

static int drain_done(void *arg) {
  return atomic_load(&((drain_arg *)arg)->done);
}

static void test_drain(hin_env *e) {
  set_mode(e, CEB_FAKE_COMMIT_HOLD, 0);
  size_t before = ceb_fake_event_count(e->fake);
  hin_async *a = hin_post_async(e, BINARY_HDRS, "{\"last\":1}");
  count_arg c = {e->fake, before + 1};
  CHECK(ceb_test_wait(events_at_least, &c, 5000));
  drain_arg d = {e, -100, 0};
  pthread_t t;
  pthread_create(&t, NULL, drain_main, &d);
  /* new requests get 503 once draining (bounded polling; a request that
   * arrives before the flag is a 400 here, never a submit) */
  int got503 = 0;
  char h[32];
  for (int i = 0; i < 200 && !got503; i++) {
    hin_resp r = hin_post(e, STRUCT_HDRS, "not json");
    if (r.status == 503) {
      got503 = 1;
      CHECK(hin_json_str(&r, "code", "draining"));
      CHECK(hin_header(&r, "Retry-After", h, sizeof h) != NULL);
    } else {
      CHECK_INT(r.status, 400);
    }
    hin_resp_free(&r);
  }
  CHECK(got503);
  /* the held request is still answered, after its commit */
  CHECK(!drain_done(&d));
  ceb_fake_commit(e->fake, CEB_OK);
  CHECK(hin_async_wait(a, 5000));
  hin_resp r;
  hin_async_free(a, &r);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  CHECK(ceb_test_wait(drain_done, &d, 10000));
  pthread_join(t, NULL);
  CHECK_INT(d.status, CEB_OK);
  CHECK_INT(ceb_fake_event_count(e->fake), before + 1);
}

typedef struct metric_arg {
  ceb_metrics *m;
  const char *name, *labels;
  double want;
} metric_arg;

static int metric_reached(void *arg) {
  metric_arg *a = arg;
  return ceb_metrics_get(a->m, a->name, a->labels) >= a->want;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  static const char *const cfg[] = {"auth=none",
                                    "max_body=4KiB",
                                    "retry_after=7s",
                                    "threads=2",
                                    "webhook.allowed_origins="
                                    "eventemitter.example.com *.partner.nl",
                                    NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    CHECK(e->plugin->roles & CEB_ROLE_SOURCE);
    CHECK_STR(e->plugin->name, "http");
    test_modes(e);
    test_client_errors(e);
    test_refusals(e);
    test_durable_first(e);
    test_handshake(e);
    test_large_head(e);
    /* metrics are recorded when MHD completes a request, which may be just
     * after the client read its response */
    metric_arg m202 = {e->fake->metrics, "cebridge_http_requests_total",
                       "code=\"202\"", 5};
    metric_arg m413 = {e->fake->metrics, "cebridge_http_requests_total",
                       "code=\"413\"", 2};
    metric_arg mlat = {e->fake->metrics,
                       "cebridge_http_request_duration_seconds", NULL, 10};
    CHECK(ceb_test_wait(metric_reached, &m202, 5000));
    CHECK(ceb_test_wait(metric_reached, &m413, 5000));
    CHECK(ceb_test_wait(metric_reached, &mlat, 5000));
    test_drain(e);
    hin_stop(e);
  }
  /* auth = none is refused on a non-loopback address */
  static const char *const open_cfg[] = {"auth=none", "listen=0.0.0.0:0", NULL};
  CHECK_INT(hin_init_status(open_cfg), CEB_ECONFIG);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_modes");
}
