/* End to end through the real `cebridge run` binary: POST to the http
 * intermediary (source) -> journal -> route -> http webhook sink -> a local
 * receiver. Deliveries arrive signed (verified here) with an Idempotency-Key
 * that stays the same across the route's retry after a 503 + Retry-After;
 * a 400 lands in the store DLQ with reason http.400 (read through the admin
 * API); SIGTERM drains and exits 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"
#include "http_webhook_sig.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SRC "urn:nld:oin:00000001234567890000:systeem:e2e"
#define ADMIN_TOKEN "http-out-e2e-admin-token"

typedef struct partner {
  pthread_mutex_t lock;
  int retry_seen; /* e2e-retry answered 503 once */
} partner;

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)index;
  partner *p = arg;
  const char *id = ceb_headers_get(&req->headers, "ce-id");
  resp->status = 200;
  if (id && strcmp(id, "e2e-bad") == 0) {
    resp->status = 400;
    resp->len = (size_t)snprintf(resp->body, sizeof(resp->body),
                                 "unknown student number");
  } else if (id && strcmp(id, "e2e-retry") == 0) {
    pthread_mutex_lock(&p->lock);
    if (!p->retry_seen) {
      p->retry_seen = 1;
      resp->status = 503;
      ceb_headers_add(&resp->headers, "Retry-After", "1", 1);
    }
    pthread_mutex_unlock(&p->lock);
  }
}

static size_t discard(char *p, size_t s, size_t n, void *u) {
  (void)p;
  (void)u;
  return s * n;
}

typedef struct buf {
  char data[65536];
  size_t len;
} buf;

static size_t collect(char *p, size_t s, size_t n, void *u) {
  buf *b = u;
  size_t take = s * n;
  if (take > sizeof(b->data) - 1 - b->len) take = sizeof(b->data) - 1 - b->len;
  memcpy(b->data + b->len, p, take);
  b->len += take;
  b->data[b->len] = '\0';
  return s * n;
}

static long post_event(int port, const char *id) {
  char url[128], body[512];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof(body),
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"" SRC
           "\",\"type\":\"nl.edu.e2e.created\",\"subject\":\"s-1\","
           "\"datacontenttype\":\"application/json\",\"data\":{\"id\":\"%s\"}}",
           id, id);
  CURL *e = curl_easy_init();
  struct curl_slist *h =
      curl_slist_append(NULL, "Content-Type: application/cloudevents+json");
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
  long code = 0;
  if (curl_easy_perform(e) == CURLE_OK)
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(h);
  curl_easy_cleanup(e);
  return code;
}

static long get_json(int port, const char *path, buf *out) {
  char url[256];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  out->len = 0;
  out->data[0] = '\0';
  CURL *e = curl_easy_init();
  struct curl_slist *hl =
      curl_slist_append(NULL, "Authorization: Bearer " ADMIN_TOKEN);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
  long code = 0;
  if (curl_easy_perform(e) == CURLE_OK)
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(e);
  curl_slist_free_all(hl);
  return code;
}

/* Requests of the receiver carrying ce-id = id. */
static size_t count_id(rx_server *rx, const char *id, size_t *last) {
  size_t n = 0;
  for (size_t i = 0; i < rx_count(rx); i++) {
    const char *v = ceb_headers_get(&rx_get(rx, i)->headers, "ce-id");
    if (v && strcmp(v, id) == 0) {
      n++;
      if (last) *last = i;
    }
  }
  return n;
}

typedef struct delivered_arg {
  rx_server *rx;
} delivered_arg;

static int all_delivered(void *arg) {
  delivered_arg *a = arg;
  return count_id(a->rx, "e2e-1", NULL) >= 1 &&
         count_id(a->rx, "e2e-retry", NULL) >= 2 &&
         count_id(a->rx, "e2e-bad", NULL) >= 1;
}

typedef struct dlq_arg {
  int port;
  buf *b;
} dlq_arg;

static int dlq_has_bad(void *arg) {
  dlq_arg *a = arg;
  return get_json(a->port, "/v1/dlq", a->b) == 200 &&
         strstr(a->b->data, "e2e-bad") != NULL;
}

static const char k_sink_extra[] = "mode = binary\n"
                                   "webhook.secrets = " SECRET "\n"
                                   "headers.x-institution = e2e\n";

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  partner p = {0};
  pthread_mutex_init(&p.lock, NULL);
  rx_server *rx = rx_start(respond, &p);
  char *dir = ceb_test_tmpdir("http-out-e2e");
  CHECK(rx && dir);
  if (!rx || !dir) return ceb_test_done("integration_http_out_e2e");
  char conf[2048];
  ceb_test_webhook_opts o = {
      .token = ADMIN_TOKEN,
      .rx_port = rx_port(rx),
      .bridge_extra = "drain_timeout = 5s\n",
      .sink_extra = k_sink_extra,
      .route_extra = "dlq = store\nretry.schedule = 0s 200ms 200ms 200ms\n"};
  CHECK_INT(ceb_test_webhook_conf(conf, sizeof conf, dir, &o), 0);
  ceb_test_bridge br;
  int started = ceb_test_bridge_run(&br, dir, conf, 15000) == 0;
  CHECK_MSG(started, "bridge did not start");
  int in = br.in_port, admin = br.admin_port;
  if (!started) goto out;

  CHECK_INT(post_event(in, "e2e-1"), 202);
  CHECK_INT(post_event(in, "e2e-retry"), 202);
  CHECK_INT(post_event(in, "e2e-bad"), 202);
  delivered_arg da = {rx};
  CHECK_MSG(ceb_test_wait(all_delivered, &da, 20000),
            "deliveries missing: %zu requests", rx_count(rx));

  const char *secret = SECRET;
  http_webhook_keys *keys = NULL;
  CHECK_INT(http_webhook_keys_new(&secret, 1, &keys, NULL), CEB_OK);
  for (size_t i = 0; i < rx_count(rx); i++) {
    const rx_request *r = rx_get(rx, i);
    CHECK_STR(r->method, "POST");
    CHECK_STR(r->path, "/hook");
    CHECK_STR(ceb_headers_get(&r->headers, "X-Institution"), "e2e");
    CHECK_STR(ceb_headers_get(&r->headers, "ce-source"), SRC);
    CHECK_INT(
        http_webhook_verify(keys, ceb_headers_get(&r->headers, "webhook-id"),
                            ceb_headers_get(&r->headers, "webhook-timestamp"),
                            ceb_headers_get(&r->headers, "webhook-signature"),
                            r->body, r->len, (int64_t)time(NULL), 300),
        CEB_OK);
    CHECK(ceb_headers_get(&r->headers, "Idempotency-Key") != NULL);
  }
  http_webhook_keys_free(keys);
  /* the retry carried the same Idempotency-Key as the 503'd attempt */
  const char *k1 = NULL, *k2 = NULL;
  for (size_t i = 0; i < rx_count(rx); i++) {
    const rx_request *r = rx_get(rx, i);
    const char *id = ceb_headers_get(&r->headers, "ce-id");
    if (id && strcmp(id, "e2e-retry") == 0) {
      if (!k1)
        k1 = ceb_headers_get(&r->headers, "Idempotency-Key");
      else
        k2 = ceb_headers_get(&r->headers, "Idempotency-Key");
    }
  }
  CHECK(k1 && k2 && strcmp(k1, k2) == 0);
  CHECK_INT(count_id(rx, "e2e-1", NULL), 1);
  CHECK_INT(count_id(rx, "e2e-bad", NULL), 1); /* permanent: no retry */

  buf *b = calloc(1, sizeof(*b));
  dlq_arg dq = {admin, b};
  CHECK_MSG(ceb_test_wait(dlq_has_bad, &dq, 10000), "DLQ: %s", b->data);
  CHECK_MSG(strstr(b->data, "http.400") != NULL, "DLQ: %s", b->data);
  CHECK_MSG(strstr(b->data, "e2e-retry") == NULL, "DLQ: %s", b->data);
  free(b);

  CHECK_INT(ceb_test_pid_stop(br.pid, SIGTERM, 30000), 0);
out:
  if (!started) ceb_test_pid_stop(br.pid, SIGTERM, 30000);
  if (ceb_test_failures) ceb_test_bridge_log_dump(&br);
  rx_stop(rx);
  free(dir);
  pthread_mutex_destroy(&p.lock);
  curl_global_cleanup();
  return ceb_test_done("integration_http_out_e2e");
}
