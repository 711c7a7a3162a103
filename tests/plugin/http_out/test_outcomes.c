/* Webhook sink outcome classification and lifecycle: Retry-After (seconds
 * and HTTP-date), 410 opening the circuit, other 4xx to the DLQ with the
 * response body, retryable statuses, timeouts, refused connections,
 * deadlines, backpressure, the handshake, drain, and config refusals. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "http_out.h"
#include "ceb_test_rx.h"
#include "sink_fixture.h"

/* Paths script the answer: /status/<code>[/date], /slow, /handshake/<mode>. */
static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  const char *p = req->path;
  if (strcmp(req->method, "OPTIONS") == 0) {
    const char *origin =
        ceb_headers_get(&req->headers, "WebHook-Request-Origin");
    if (strstr(p, "/handshake/ok") && origin) {
      ceb_headers_add(&resp->headers, "WebHook-Allowed-Origin", origin,
                      strlen(origin));
      resp->status = 200;
    } else {
      resp->status = 403;
    }
    return;
  }
  if (strncmp(p, "/status/", 8) == 0) {
    resp->status = atoi(p + 8);
    if (strstr(p, "/date")) {
      char date[64];
      time_t t = time(NULL) + 30;
      struct tm tm;
      gmtime_r(&t, &tm);
      strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
      ceb_headers_add(&resp->headers, "Retry-After", date, strlen(date));
    }
    if (resp->status == 400)
      resp->len = (size_t)snprintf(resp->body, sizeof(resp->body),
                                   "{\"error\":\"field x is wrong\"}");
    return;
  }
  if (strncmp(p, "/conflict/", 10) == 0) {
    /* cebridge's intermediary's 409 problems (http_in_request.c) */
    resp->status = 409;
    ceb_headers_add(&resp->headers, "Content-Type", "application/problem+json",
                    24);
    ceb_headers_add(&resp->headers, "Retry-After", "1", 1);
    resp->len = (size_t)snprintf(
        resp->body, sizeof(resp->body),
        "{\"type\":\"urn:cebridge:problem:%s\",\"title\":\"Conflict\","
        "\"status\":409,\"detail\":\"x\",\"code\":\"%s\"}",
        p + 10, p + 10);
    return;
  }
  if (strcmp(p, "/slow") == 0) {
    resp->delay_ms = 5000;
    return;
  }
  resp->status = 200;
}

static rx_server *g_rx;

/* One delivery to path on a fresh sink; the settle is copied to st. */
static int deliver_once(const char *path, const char *const *extra,
                        ceb_fake_settle *st) {
  char url[160];
  const char *kv[32] = {"url", fx_url(url, sizeof(url), rx_port(g_rx), path),
                        "allow_insecure_http", "true"};
  size_t n = 4;
  for (size_t i = 0; extra && extra[i] && n < 30; i++)
    kv[n++] = extra[i];
  kv[n] = NULL;
  sink_fx fx;
  int rc = fx_init(&fx, kv);
  CHECK_INT(rc, CEB_OK);
  int got = 0;
  if (rc == CEB_OK) {
    ceb_event *ev = fx_event("evt-o", "{}");
    fx_deliver(&fx, ev, 1, NULL);
    got = fx_settle(&fx, 0, st, 8000);
    CHECK_INT(ceb_fake_settle_count(fx.fake), 1);
    ceb_event_unref(ev);
  }
  fx_free(&fx);
  return got;
}

static void test_statuses(void) {
  ceb_fake_settle st;
  CHECK(deliver_once("/status/503", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_INT(st.info.retry_after_ms, -1);

  CHECK(deliver_once("/status/429/date", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "http.429");
  CHECK_MSG(st.info.retry_after_ms > 25000 && st.info.retry_after_ms <= 31000,
            "retry_after_ms %lld", (long long)st.info.retry_after_ms);

  static const int retryable[] = {408, 425, 500, 502, 504};
  for (size_t i = 0; i < sizeof(retryable) / sizeof(*retryable); i++) {
    char path[32];
    snprintf(path, sizeof(path), "/status/%d", retryable[i]);
    CHECK(deliver_once(path, NULL, &st));
    CHECK_MSG(st.info.outcome == CEB_RETRY, "%d", retryable[i]);
    CHECK_INT(st.info.status_code, retryable[i]);
  }

  /* 409: the receiver has it (ACK) or is still processing it (RETRY with
   * its Retry-After); a bare 409 is retried too. */
  CHECK(deliver_once("/conflict/webhook.replayed", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(st.info.status_code, 409);
  CHECK(deliver_once("/conflict/idempotency.in_flight", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_INT(st.info.retry_after_ms, 1000);
  CHECK_STR(st.reason, "http.409");
  CHECK(deliver_once("/status/409", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_RETRY);

  CHECK(deliver_once("/status/410", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_INT(st.info.flags & CEB_SETTLE_OPEN_CIRCUIT, CEB_SETTLE_OPEN_CIRCUIT);
  CHECK_STR(st.reason, "http.410");

  CHECK(deliver_once("/status/400", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_INT(st.info.flags, 0);
  CHECK_STR(st.reason, "http.400");
  CHECK_INT(st.info.status_code, 400);
  CHECK_MSG(strstr(st.detail, "field x is wrong") != NULL, "detail %s",
            st.detail);

  CHECK(deliver_once("/status/404", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_STR(st.reason, "http.404");
  /* Redirects are not followed: a moved endpoint is a config problem. */
  CHECK(deliver_once("/status/301", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK(deliver_once("/status/204", NULL, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
}

static void test_timeout_and_refused(void) {
  ceb_fake_settle st;
  const char *fast[] = {"timeout", "300ms", NULL};
  int64_t t0 = ceb_test_now_ms();
  CHECK(deliver_once("/slow", fast, &st));
  int64_t took = ceb_test_now_ms() - t0;
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "timeout");
  CHECK_MSG(took < 3000, "timeout took %lld ms", (long long)took);

  /* A bound socket that does not listen: the connection is refused. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
  socklen_t sl = sizeof(sa);
  getsockname(fd, (struct sockaddr *)&sa, &sl);
  char url[96];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", ntohs(sa.sin_port));
  const char *kv[] = {"url", url, "allow_insecure_http", "true", NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-r", "{}");
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "network");
  CHECK_INT(st.info.status_code, 0);
  CHECK(st.detail[0] != '\0');
  fx_free(&fx);
  ceb_event_unref(ev);
  close(fd);
}

/* The attempt's deadline caps the transfer; a passed deadline sends
 * nothing. */
static void test_deadline(void) {
  char url[160];
  const char *kv[] = {"url", fx_url(url, sizeof(url), rx_port(g_rx), "/slow"),
                      "allow_insecure_http", "true", NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-d", "{}");
  ceb_delivery *d = ceb_fake_delivery_new(fx.fake, ev, "partners-out", NULL, 1);
  fx.ds[fx.nds++] = d;
  d->deadline_ms = fx.fake->host.now_ms(&fx.fake->inst) + 400;
  int64_t t0 = ceb_test_now_ms();
  size_t before = rx_count(g_rx);
  CHECK_INT(http_sink_deliver(fx.state, d), CEB_OK);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "timeout");
  CHECK_MSG(ceb_test_now_ms() - t0 < 3000, "deadline not applied");
  CHECK(rx_wait(g_rx, before + 1, 2000));

  ceb_delivery *late =
      ceb_fake_delivery_new(fx.fake, ev, "partners-out", NULL, 2);
  fx.ds[fx.nds++] = late;
  late->deadline_ms = fx.fake->host.now_ms(&fx.fake->inst) - 1;
  before = rx_count(g_rx);
  CHECK_INT(http_sink_deliver(fx.state, late), CEB_OK);
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "deadline");
  CHECK_INT(rx_count(g_rx), before);
  fx_free(&fx);
  ceb_event_unref(ev);
}

/* max_pending bounds what deliver accepts; drain gives up at its deadline
 * and settles the rest RETRY "shutdown"; afterwards deliver refuses. */
static void test_backpressure_and_drain(void) {
  char url[160];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(g_rx), "/slow"),
                      "allow_insecure_http",
                      "true",
                      "max_pending",
                      "2",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-p", "{}");
  size_t before = rx_count(g_rx);
  fx_deliver(&fx, ev, 1, NULL);
  fx_deliver(&fx, ev, 1, NULL);
  int rc = 0;
  fx_deliver(&fx, ev, 1, &rc);
  CHECK_INT(rc, CEB_EBUSY);
  CHECK(rx_wait(g_rx, before + 2, 3000)); /* both are in flight */
  int64_t t0 = ceb_test_now_ms();
  CHECK_INT(
      http_sink_drain(fx.state, fx.fake->host.now_ms(&fx.fake->inst) + 300),
      CEB_ETIMEOUT);
  CHECK_MSG(ceb_test_now_ms() - t0 < 2500, "drain overran its deadline");
  CHECK_INT(ceb_fake_settle_count(fx.fake), 2);
  ceb_fake_settle st;
  for (size_t i = 0; i < 2; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, i, &st));
    CHECK_INT(st.info.outcome, CEB_RETRY);
    CHECK_STR(st.reason, "shutdown");
  }
  fx_deliver(&fx, ev, 1, &rc);
  CHECK_INT(rc, CEB_ESHUTDOWN);
  fx_free(&fx);
  ceb_event_unref(ev);
}

/* A drain with time enough finishes the in-flight work and a partial batch
 * and returns CEB_OK. */
static void test_clean_drain(void) {
  char url[160];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(g_rx), "/ok"),
                      "allow_insecure_http",
                      "true",
                      "mode",
                      "batch",
                      "batch.max",
                      "50",
                      "batch.wait",
                      "60s",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-c", "{}");
  fx_deliver(&fx, ev, 1, NULL);
  fx_deliver(&fx, ev, 1, NULL);
  CHECK_INT(
      http_sink_drain(fx.state, fx.fake->host.now_ms(&fx.fake->inst) + 5000),
      CEB_OK);
  CHECK_INT(ceb_fake_settle_count(fx.fake), 2);
  ceb_fake_settle st;
  CHECK(ceb_fake_settle_get(fx.fake, 1, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  fx_free(&fx);
  ceb_event_unref(ev);
}

static void test_handshake(void) {
  char url[160];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(g_rx), "/handshake/ok"),
                      "allow_insecure_http",
                      "true",
                      "handshake",
                      "true",
                      "handshake.origin",
                      "bridge.example.nl",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-h", "{}");
  size_t before = rx_count(g_rx);
  fx_deliver(&fx, ev, 1, NULL);
  fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(rx_count(g_rx) - before, 3);
  const rx_request *first = rx_get(g_rx, before);
  CHECK(first && strcmp(first->method, "OPTIONS") == 0);
  if (first)
    CHECK_STR(ceb_headers_get(&first->headers, "WebHook-Request-Origin"),
              "bridge.example.nl");
  fx_free(&fx);

  kv[1] = fx_url(url, sizeof(url), rx_port(g_rx), "/handshake/refuse");
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  before = rx_count(g_rx);
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_STR(st.reason, "handshake.refused");
  CHECK_INT(st.info.flags & CEB_SETTLE_OPEN_CIRCUIT, CEB_SETTLE_OPEN_CIRCUIT);
  CHECK_INT(rx_count(g_rx) - before, 1); /* only the OPTIONS */
  fx_free(&fx);
  ceb_event_unref(ev);
}

static int init_rc(const char *const *kv) {
  sink_fx fx;
  int rc = fx_init(&fx, kv);
  fx_free(&fx);
  return rc;
}

static void test_config_refusals(void) {
  const char *http_plain[] = {"url", "http://127.0.0.1:9/x", NULL};
  CHECK_INT(init_rc(http_plain), CEB_ECONFIG);
  const char *http_off[] = {"url", "http://127.0.0.1:9/x",
                            "allow_insecure_http", "false", NULL};
  CHECK_INT(init_rc(http_off), CEB_ECONFIG);
  const char *https_ok[] = {"url", "https://partner.example.nl/hook", NULL};
  CHECK_INT(init_rc(https_ok), CEB_OK);
  const char *ftp[] = {"url", "ftp://partner.example.nl/x",
                       "allow_insecure_http", "true", NULL};
  CHECK_INT(init_rc(ftp), CEB_ECONFIG);
  const char *templ_scheme[] = {"url", "${scheme}://x/", NULL};
  CHECK_INT(init_rc(templ_scheme), CEB_ECONFIG);
  const char *bad_placeholder[] = {"url", "https://x/${Sub", NULL};
  CHECK_INT(init_rc(bad_placeholder), CEB_ECONFIG);
  const char *batch_templ[] = {"url", "https://x/${subject}", "mode", "batch",
                               NULL};
  CHECK_INT(init_rc(batch_templ), CEB_ECONFIG);
  const char *bad_secret[] = {"url", "https://x/", "webhook.secrets", "whsec_",
                              NULL};
  CHECK_INT(init_rc(bad_secret), CEB_ECONFIG);
  const char *reserved[] = {"url", "https://x/", "headers.Authorization",
                            "Bearer x", NULL};
  CHECK_INT(init_rc(reserved), CEB_ECONFIG);
  const char *oauth_partial[] = {"url", "https://x/", "oauth2.client_id", "me",
                                 NULL};
  CHECK_INT(init_rc(oauth_partial), CEB_ECONFIG);
  const char *oauth_plain[] = {"url",
                               "https://x/",
                               "oauth2.token_url",
                               "http://idp/token",
                               "oauth2.client_id",
                               "me",
                               "oauth2.client_secret",
                               "s",
                               NULL};
  CHECK_INT(init_rc(oauth_plain), CEB_ECONFIG);
  const char *oauth_both[] = {"url",
                              "https://x/",
                              "oauth2.token_url",
                              "https://idp/token",
                              "oauth2.client_id",
                              "me",
                              "oauth2.client_secret",
                              "s",
                              "oauth2.private_key",
                              "/nonexistent.pem",
                              NULL};
  CHECK_INT(init_rc(oauth_both), CEB_ECONFIG);
  const char *no_key[] = {"url",
                          "https://x/",
                          "oauth2.token_url",
                          "https://idp/token",
                          "oauth2.client_id",
                          "me",
                          "oauth2.private_key",
                          "/nonexistent.pem",
                          NULL};
  CHECK_INT(init_rc(no_key), CEB_ECONFIG);
  const char *ca_missing[] = {"url", "https://x/", "tls.ca_file",
                              "/nonexistent/ca.pem", NULL};
  CHECK_INT(init_rc(ca_missing), CEB_ECONFIG);
}

int main(void) {
  g_rx = rx_start(respond, NULL);
  CHECK(g_rx != NULL);
  if (!g_rx) return ceb_test_done("plugin_http_out_outcomes");
  test_statuses();
  test_timeout_and_refused();
  test_deadline();
  test_backpressure_and_drain();
  test_clean_drain();
  test_handshake();
  test_config_refusals();
  rx_stop(g_rx);
  return ceb_test_done("plugin_http_out_outcomes");
}
