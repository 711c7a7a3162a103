/* Webhook sink delivery: binary, structured and batch mode on a local
 * receiver, with the CloudEvents headers, static headers, User-Agent,
 * Idempotency-Key stable across attempts, Standard Webhooks signatures (two
 * secrets during rotation) checked with our verifier, and URL templates. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "http_idem.h"
#include "http_out.h"
#include "http_webhook_sig.h"
#include "ceb_test_rx.h"
#include "sink_fixture.h"

#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"

typedef struct script {
  int status; /* answer for every request */
  const char *retry_after;
} script;

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)req;
  (void)index;
  script *s = arg;
  resp->status = s->status;
  if (s->retry_after)
    ceb_headers_add(&resp->headers, "Retry-After", s->retry_after,
                    strlen(s->retry_after));
}

/* The signature the sink sent verifies with each secret alone, now. */
static void check_signature(const rx_request *r) {
  const char *id = ceb_headers_get(&r->headers, "webhook-id");
  const char *ts = ceb_headers_get(&r->headers, "webhook-timestamp");
  const char *sig = ceb_headers_get(&r->headers, "webhook-signature");
  CHECK(id && ts && sig);
  CHECK(sig && strchr(sig, ' ') != NULL); /* two secrets: two signatures */
  const char *a = SECRET_A, *b = SECRET_B,
             *other = "whsec_b3RoZXIga2V5LCAyNCBieXRlcyBsb25n";
  http_webhook_keys *ka = NULL, *kb = NULL, *ko = NULL;
  CHECK_INT(http_webhook_keys_new(&a, 1, &ka, NULL), CEB_OK);
  CHECK_INT(http_webhook_keys_new(&b, 1, &kb, NULL), CEB_OK);
  CHECK_INT(http_webhook_keys_new(&other, 1, &ko, NULL), CEB_OK);
  struct timespec ts_now; /* the sink signs with the wall clock */
  clock_gettime(CLOCK_REALTIME, &ts_now);
  CHECK_INT(
      http_webhook_verify(ka, id, ts, sig, r->body, r->len, ts_now.tv_sec, 300),
      CEB_OK);
  CHECK_INT(
      http_webhook_verify(kb, id, ts, sig, r->body, r->len, ts_now.tv_sec, 300),
      CEB_OK);
  CHECK_INT(
      http_webhook_verify(ko, id, ts, sig, r->body, r->len, ts_now.tv_sec, 300),
      CEB_EAUTH);
  http_webhook_keys_free(ka);
  http_webhook_keys_free(kb);
  http_webhook_keys_free(ko);
}

static void test_binary(void) {
  script sc = {200, NULL};
  rx_server *rx = rx_start(respond, &sc);
  CHECK(rx != NULL);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/hook"),
                      "allow_insecure_http",
                      "true",
                      "webhook.secrets",
                      SECRET_A " " SECRET_B,
                      "headers.x-partner-ref",
                      "edu 42",
                      "user_agent",
                      "cebridge-test/9",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-1", "{\"name\":\"Ada\"}");
  ceb_delivery *d = fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(st.info.status_code, 200);
  CHECK_STR(st.event_id, "evt-1");
  CHECK_INT(rx_count(rx), 1);
  const rx_request *r = rx_get(rx, 0);
  if (r) {
    CHECK_STR(r->method, "POST");
    CHECK_STR(r->path, "/hook");
    CHECK_STR(ceb_headers_get(&r->headers, "ce-id"), "evt-1");
    CHECK_STR(ceb_headers_get(&r->headers, "ce-specversion"), "1.0");
    CHECK_STR(ceb_headers_get(&r->headers, "ce-type"), "nl.edu.test.created");
    /* percent-encoded per the binding: the space */
    CHECK_STR(ceb_headers_get(&r->headers, "ce-subject"), "student%2042/a");
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"), "application/json");
    CHECK_STR(r->body, "{\"name\":\"Ada\"}");
    CHECK_STR(ceb_headers_get(&r->headers, "Idempotency-Key"),
              d->idempotency_key);
    CHECK_STR(ceb_headers_get(&r->headers, "webhook-id"), d->idempotency_key);
    CHECK_STR(ceb_headers_get(&r->headers, "X-Partner-Ref"), "edu 42");
    CHECK_STR(ceb_headers_get(&r->headers, "User-Agent"), "cebridge-test/9");
    CHECK(ceb_headers_get(&r->headers, "Authorization") == NULL);
    check_signature(r);
  }
  /* An event without data: no body and no invented Content-Type. */
  ceb_event *bare = fx_event("evt-bare", NULL);
  fx_deliver(&fx, bare, 1, NULL);
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  r = rx_get(rx, 1);
  if (r) {
    CHECK_INT(r->len, 0);
    CHECK(ceb_headers_get(&r->headers, "Content-Type") == NULL);
    CHECK_STR(ceb_headers_get(&r->headers, "ce-id"), "evt-bare");
  }
  double acks =
      ceb_metrics_get(fx.fake->metrics, "cebridge_http_sink_deliveries_total",
                      "outcome=\"ack\",code=\"200\"");
  CHECK(acks == 2.0);
  fx_free(&fx);
  ceb_event_unref(ev);
  ceb_event_unref(bare);
  rx_stop(rx);
}

static void test_structured(void) {
  script sc = {202, NULL};
  rx_server *rx = rx_start(respond, &sc);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/s"),
                      "allow_insecure_http",
                      "yes",
                      "mode",
                      "structured",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-s", "{\"n\":1}");
  fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(st.info.status_code, 202);
  const rx_request *r = rx_get(rx, 0);
  CHECK(r != NULL);
  if (r) {
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"),
              "application/cloudevents+json");
    CHECK(ceb_headers_get(&r->headers, "ce-id") == NULL);
    CHECK(ceb_headers_get(&r->headers, "webhook-signature") == NULL);
    ceb_event *got = NULL;
    CHECK_INT(ceb_json_decode(r->body, r->len, &got, NULL), CEB_OK);
    if (got) {
      CHECK_STR(ceb_event_get(got, "id"), "evt-s");
      CHECK_STR(ceb_event_get(got, "subject"), "student 42/a");
      size_t n = 0;
      const char *data = ceb_event_data(got, &n);
      CHECK(data && n == 7 && memcmp(data, "{\"n\":1}", 7) == 0);
      ceb_event_unref(got);
    }
  }
  /* ABI 1.1: the host's journaled bytes (ceb_delivery.encoded) go out as
   * they are, not encoded again; bytes ceb_json_encode would not write
   * (spaces) prove it. A delivery as a 1.0 host builds it (shorter
   * struct_size) is encoded, whatever lies past its end. */
  static const char journal[] =
      "{ \"specversion\": \"1.0\", \"id\": \"evt-j\", \"source\": "
      "\"urn:nld:oin:00000001234567890000:systeem:test\", \"type\": "
      "\"nl.edu.test\" }";
  ceb_delivery *d = ceb_fake_delivery_new(fx.fake, ev, "partners-out", NULL, 1);
  fx.ds[fx.nds++] = d;
  d->encoded = journal;
  d->encoded_len = sizeof journal - 1;
  CHECK_INT(http_sink_deliver(fx.state, d), CEB_OK);
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  r = rx_get(rx, 1);
  CHECK(r != NULL);
  if (r) {
    CHECK_INT(r->len, sizeof journal - 1);
    CHECK_STR(r->body, journal);
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"),
              "application/cloudevents+json");
  }
  d = ceb_fake_delivery_new(fx.fake, ev, "partners-out", NULL, 1);
  fx.ds[fx.nds++] = d;
  d->struct_size = CEB_DELIVERY_SIZE_1_0;
  d->encoded = journal;
  d->encoded_len = sizeof journal - 1;
  CHECK_INT(http_sink_deliver(fx.state, d), CEB_OK);
  CHECK(fx_settle(&fx, 2, &st, 5000));
  r = rx_get(rx, 2);
  CHECK(r != NULL);
  if (r) {
    ceb_event *got = NULL;
    CHECK_INT(ceb_json_decode(r->body, r->len, &got, NULL), CEB_OK);
    CHECK_STR(got ? ceb_event_get(got, "id") : "", "evt-s");
    ceb_event_unref(got);
  }
  fx_free(&fx);
  ceb_event_unref(ev);
  rx_stop(rx);
}

static void test_batch(void) {
  script sc = {200, NULL};
  rx_server *rx = rx_start(respond, &sc);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/b"),
                      "allow_insecure_http",
                      "true",
                      "mode",
                      "batch",
                      "batch.max",
                      "3",
                      "batch.wait",
                      "300ms",
                      "webhook.secrets",
                      SECRET_A "," SECRET_B,
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *evs[5];
  char id[16];
  /* Three fill a batch at once; two more go out when batch.wait passes. */
  for (int i = 0; i < 5; i++) {
    snprintf(id, sizeof(id), "b-%d", i);
    evs[i] = fx_event(id, "{\"k\":true}");
    fx_deliver(&fx, evs[i], 1, NULL);
  }
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 4, &st, 5000));
  CHECK_INT(rx_count(rx), 2);
  size_t sizes[2] = {0, 0};
  char batch_keys[2][64];
  for (size_t i = 0; i < 2; i++) {
    const rx_request *r = rx_get(rx, i);
    if (!r) continue;
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"),
              "application/cloudevents-batch+json");
    ceb_event **got = NULL;
    CHECK_INT(ceb_batch_decode(r->body, r->len, &got, &sizes[i], NULL), CEB_OK);
    if (got && sizes[i] == 3) CHECK_STR(ceb_event_get(got[2], "id"), "b-2");
    ceb_events_free(got, sizes[i]);
    check_signature(r);
    /* The receiver's own parser (Idempotency-Key annex: a UUID v4) takes
     * the batch's key; webhook-id is the same value. */
    const char *key = ceb_headers_get(&r->headers, "Idempotency-Key");
    char parsed[HTTP_IDEM_KEY_LEN + 1];
    CHECK_MSG(key && http_idem_key_parse(key, parsed) == CEB_OK, "key %s",
              key ? key : "(none)");
    CHECK_STR(ceb_headers_get(&r->headers, "webhook-id"), key);
    snprintf(batch_keys[i], sizeof(batch_keys[i]), "%s", key ? key : "");
  }
  CHECK_INT(sizes[0], 3);
  CHECK_INT(sizes[1], 2);
  CHECK(strcmp(batch_keys[0], batch_keys[1]) != 0);
  for (size_t i = 0; i < 5; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, i, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
  }
  /* A failing batch settles every member by its result. */
  sc.status = 503;
  sc.retry_after = "3";
  for (int i = 0; i < 3; i++)
    fx_deliver(&fx, evs[i], 2, NULL);
  CHECK(fx_settle(&fx, 7, &st, 5000));
  for (size_t i = 5; i < 8; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, i, &st));
    CHECK_INT(st.info.outcome, CEB_RETRY);
    CHECK_INT(st.info.retry_after_ms, 3000);
    CHECK_STR(st.reason, "http.503");
  }
  CHECK_INT(rx_count(rx), 3);
  /* The same members again: the same key, so the receiver knows the retry. */
  const rx_request *again = rx_get(rx, 2);
  CHECK(again != NULL);
  if (again)
    CHECK_STR(ceb_headers_get(&again->headers, "Idempotency-Key"),
              batch_keys[0]);
  fx_free(&fx);
  for (int i = 0; i < 5; i++)
    ceb_event_unref(evs[i]);
  rx_stop(rx);
}

/* Idempotency-Key and webhook-id are the same on the first attempt (503)
 * and the second (200); the signature timestamp is fresh each time. */
static void test_idempotency_across_attempts(void) {
  script sc = {503, "7"};
  rx_server *rx = rx_start(respond, &sc);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/i"),
                      "allow_insecure_http",
                      "true",
                      "webhook.secrets",
                      SECRET_A " " SECRET_B,
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-idem", "{}");
  fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_INT(st.info.retry_after_ms, 7000);
  CHECK_INT(st.info.status_code, 503);
  CHECK_STR(st.reason, "http.503");
  sc.status = 200;
  sc.retry_after = NULL;
  fx_deliver(&fx, ev, 2, NULL);
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(st.attempt, 2);
  const rx_request *a = rx_get(rx, 0), *b = rx_get(rx, 1);
  CHECK(a && b);
  if (a && b) {
    const char *ka = ceb_headers_get(&a->headers, "Idempotency-Key");
    CHECK(ka && *ka);
    CHECK_STR(ceb_headers_get(&b->headers, "Idempotency-Key"), ka);
    CHECK_STR(ceb_headers_get(&b->headers, "webhook-id"),
              ceb_headers_get(&a->headers, "webhook-id"));
    check_signature(a);
    check_signature(b);
  }
  fx_free(&fx);
  ceb_event_unref(ev);
  rx_stop(rx);
}

static void test_url_template(void) {
  script sc = {200, NULL};
  rx_server *rx = rx_start(respond, &sc);
  char url[128];
  const char *kv[] = {
      "url", fx_url(url, sizeof(url), rx_port(rx), "/t/${type}/${subject}"),
      "allow_insecure_http", "true", NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-t", "{}");
  fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  const rx_request *r = rx_get(rx, 0);
  /* MHD hands over the decoded path; the '/' inside the value stayed one
   * segment on the wire (checked by the request reaching this path). */
  CHECK(r != NULL);
  if (r) CHECK_STR(r->path, "/t/nl.edu.test.created/student 42/a");
  /* An event without the attribute cannot be routed: permanent. */
  ceb_event *nosub = fx_event("evt-nosub", "{}");
  ceb_event_set(nosub, "subject", NULL);
  fx_deliver(&fx, nosub, 1, NULL);
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_STR(st.reason, "url.attribute");
  CHECK_INT(rx_count(rx), 1);
  fx_free(&fx);
  ceb_event_unref(ev);
  ceb_event_unref(nosub);
  rx_stop(rx);
}

/* Keep-alive: sequential deliveries share one connection; with
 * max_connections = 2 at most two requests are in flight at once. */
typedef struct gate {
  pthread_mutex_t lock;
  int inflight, peak;
  int hold_ms;
} gate;

static void respond_counting(void *arg, const rx_request *req, size_t index,
                             rx_response *resp) {
  (void)req;
  (void)index;
  gate *g = arg;
  pthread_mutex_lock(&g->lock);
  g->inflight++;
  if (g->inflight > g->peak) g->peak = g->inflight;
  pthread_mutex_unlock(&g->lock);
  if (g->hold_ms) {
    struct timespec ts = {0, (long)g->hold_ms * 1000000L};
    nanosleep(&ts, NULL); /* the server is slow on purpose */
  }
  pthread_mutex_lock(&g->lock);
  g->inflight--;
  pthread_mutex_unlock(&g->lock);
  resp->status = 200;
}

static void test_connections(void) {
  gate g = {.hold_ms = 0};
  pthread_mutex_init(&g.lock, NULL);
  rx_server *rx = rx_start(respond_counting, &g);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/k"),
                      "allow_insecure_http",
                      "true",
                      "max_connections",
                      "2",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-k", "{}");
  ceb_fake_settle st;
  for (size_t i = 0; i < 4; i++) {
    fx_deliver(&fx, ev, 1, NULL);
    CHECK(fx_settle(&fx, i, &st, 5000));
    CHECK_INT(st.info.outcome, CEB_ACK);
  }
  int port = rx_get(rx, 0) ? rx_get(rx, 0)->client_port : -1;
  CHECK(port > 0);
  for (size_t i = 1; i < 4; i++)
    CHECK_MSG(rx_get(rx, i) && rx_get(rx, i)->client_port == port,
              "request %zu came on a new connection", i);
  CHECK(ceb_metrics_get(fx.fake->metrics, "cebridge_http_sink_delivery_seconds",
                        NULL) == 4.0);

  g.hold_ms = 100;
  for (size_t i = 0; i < 8; i++)
    fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 11, &st, 10000));
  for (size_t i = 4; i < 12; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, i, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
  }
  CHECK_MSG(g.peak == 2, "peak concurrency %d, want 2", g.peak);
  fx_free(&fx);
  ceb_event_unref(ev);
  rx_stop(rx);
  pthread_mutex_destroy(&g.lock);
}

int main(void) {
  test_binary();
  test_structured();
  test_batch();
  test_idempotency_across_attempts();
  test_url_template();
  test_connections();
  return ceb_test_done("plugin_http_out_delivery");
}
