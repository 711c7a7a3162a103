/* Callbacks (X-Callback, RIO Mapper design seed 001 §3.5) end to end
 * through the real `cebridge run` binary: a client posts events with an
 * X-Callback URL (or has a default, clients.<client>.callback); once each
 * event reaches its final status the bridge posts the status document
 * (what GET /v1/events/{id} serves) to that URL through the route with
 * callbacks = true and its http sink (callback_urls = true): once per event,
 * signed per Standard Webhooks (checked with the sink's own verifier), the
 * event id in X-Rio-Mapper-Token. Cases: done (the partner took it), error
 * (the partner refused: dead-lettered), time-out (the route's deadline
 * passed), a callback receiver that fails first is retried and its callback
 * survives a kill -9 of the bridge, and forged X-Callback values are 400
 * problem+json naming the header, nothing submitted. */
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"
#include "hin_harness.h"
#include "http_webhook_sig.h"

static const char k_secret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/* ---- the partner and the clients' callback endpoints: one receiver ---- */

typedef struct rx_state {
  int flaky_ok; /* /cb/r-1 answers 503 until the test sets this */
  int r1_ok;    /* /cb/r-1 requests answered 200 */
} rx_state;

static void handler(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)index;
  rx_state *st = arg;
  resp->status = 200;
  if (strcmp(req->path, "/b") == 0) {
    resp->status = 400;
    resp->len = (size_t)snprintf(resp->body, sizeof resp->body,
                                 "{\"error\":\"unknown program\"}");
  } else if (strcmp(req->path, "/c") == 0) {
    resp->status = 503;
  } else if (strcmp(req->path, "/cb/r-1") == 0) {
    if (__atomic_load_n(&st->flaky_ok, __ATOMIC_ACQUIRE))
      __atomic_add_fetch(&st->r1_ok, 1, __ATOMIC_ACQ_REL);
    else
      resp->status = 503;
  } else if (strcmp(req->path, "/a") == 0) {
    resp->len = (size_t)snprintf(resp->body, sizeof resp->body,
                                 "{\"resource\":\"programs/1\"}");
  }
}

/* Checks the callback request for event id: signed per Standard Webhooks
 * with the sink's secret, X-Rio-Mapper-Token = id, a JSON status document
 * of id with status want. Returns the document (caller decrefs). */
static json_t *check_callback(const rx_request *r, const char *id,
                              const char *want) {
  CHECK(r != NULL);
  if (!r) return NULL;
  CHECK_STR(r->method, "POST");
  const char *ct = ceb_headers_get(&r->headers, "Content-Type");
  CHECK_STR(ct ? ct : "", "application/json");
  const char *tok = ceb_headers_get(&r->headers, "X-Rio-Mapper-Token");
  CHECK_STR(tok ? tok : "(none)", id);
  const char *const secrets[] = {k_secret};
  http_webhook_keys *k = NULL;
  CHECK_INT(http_webhook_keys_new(secrets, 1, &k, NULL), CEB_OK);
  int v = http_webhook_verify(k, ceb_headers_get(&r->headers, "webhook-id"),
                              ceb_headers_get(&r->headers, "webhook-timestamp"),
                              ceb_headers_get(&r->headers, "webhook-signature"),
                              r->body, r->len, (int64_t)time(NULL), 300);
  CHECK_MSG(v == CEB_OK, "callback of %s: signature does not verify (%d)", id,
            v);
  http_webhook_keys_free(k);
  json_t *doc = json_loadb(r->body, r->len, 0, NULL);
  CHECK_MSG(doc != NULL, "callback of %s: not JSON: %.*s", id, (int)r->len,
            r->body);
  CHECK_STR(json_string_value(json_object_get(doc, "id")), id);
  CHECK_STR(json_string_value(json_object_get(doc, "status")), want);
  /* the callbacks route is not part of the event's status */
  json_t *routes = json_object_get(doc, "routes");
  CHECK_INT((int)json_array_size(routes), 1);
  return doc;
}

static int r1_answered(void *arg) {
  rx_state *st = arg;
  return __atomic_load_n(&st->r1_ok, __ATOMIC_ACQUIRE) > 0;
}

/* The last request to path, or NULL. */
static int wait_exact(rx_server *rx, const char *path, size_t n) {
  int ok = rx_wait_exact(rx, path, n, 60000);
  CHECK_MSG(ok, "no %zu request(s) to %s", n, path);
  return ok;
}

static const rx_request *last(rx_server *rx, const char *path) {
  size_t n = rx_count_exact(rx, path);
  return n ? rx_nth_exact(rx, path, n - 1) : NULL;
}

/* 1 when the store holds id's callback delivery as done (`cebridge status
 * --json`, a reader beside the running bridge): its outcome is committed,
 * so a kill -9 cannot make the bridge send it again. */
typedef struct settled_wait {
  const char *conf;
  const char *id;
} settled_wait;

static int callback_settled(void *arg) {
  settled_wait *w = arg;
  return ceb_test_route_state_is(w->conf, w->id, "callbacks", "done");
}

/* ---- the bridge ---- */

static char g_base[64];
static const char *g_dir;

static long post(const char *authz, const char *id, const char *inst,
                 const char *callback, hin_resp *out) {
  char url[160], body[512], cbh[12000];
  snprintf(url, sizeof url, "%s/events", g_base);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":"
           "\"urn:rio-mapper:%s\",\"type\":\"nl.rio.programs.upsert\","
           "\"institution\":\"%s\",\"data\":{\"programId\":\"%s\"}}",
           id, inst, inst, id);
  snprintf(cbh, sizeof cbh, "X-Callback: %s", callback ? callback : "");
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, callback ? cbh : NULL, NULL};
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  long st = r.status;
  if (out)
    *out = r;
  else
    hin_resp_free(&r);
  return st;
}

static void write_conf(const char *dir, const char *jwks, int rport) {
  char path[512];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "profile = off\n"
           "drain_timeout = 5s\n"
           "\n[source rio-mapper]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port\n"
           "auth = oauth2\n"
           "oauth2.jwks_file = %s\n"
           "oauth2.audience = cebridge\n"
           "clients.inst-d.callback = http://127.0.0.1:%d/cb/default\n"
           "\n[sink rio]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/a\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[sink rio-b]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/b\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[sink rio-c]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/c\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[sink callbacks]\n"
           "plugin = http\n"
           "url = https://callbacks.invalid/\n"
           "callback_urls = true\n"
           "webhook.secrets = %s\n"
           "\n[route inst-a]\n"
           "from = rio-mapper\n"
           "to = rio\n"
           "match.institution = a|d\n"
           "\n[route inst-b]\n"
           "from = rio-mapper\n"
           "to = rio-b\n"
           "match.institution = b\n"
           "\n[route inst-c]\n"
           "from = rio-mapper\n"
           "to = rio-c\n"
           "match.institution = c\n"
           "retry.mode = exponential\n"
           "retry.base = 100ms\n"
           "retry.max_delay = 200ms\n"
           "deadline = 1500ms\n"
           "\n[route callbacks]\n"
           "from = rio-mapper\n"
           "to = callbacks\n"
           "callbacks = true\n"
           "retry.mode = exponential\n"
           "retry.base = 200ms\n"
           "retry.max_delay = 400ms\n",
           dir, dir, jwks, rport, rport, rport, rport, k_secret);
  ceb_test_write_file(path, "00-bridge.conf", text);
}

static pid_t start_bridge(const char *conf, const char *log, const char *port) {
  unlink(port);
  pid_t pid = ceb_test_bridge_start(conf, log);
  int pt = ceb_test_wait_port_file(port, 15000);
  CHECK(pt > 0);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", pt);
  return pid;
}

/* A forged X-Callback: 400 problem+json, code callback.invalid, naming the
 * header. */
static void check_refused(const char *authz, const char *value) {
  hin_resp r;
  long st = post(authz, "bad-1", "a", value, &r);
  CHECK_MSG(st == 400, "X-Callback %.60s: %ld", value, st);
  char ct[128] = "";
  hin_header(&r, "Content-Type", ct, sizeof ct);
  CHECK_STR(ct, "application/problem+json");
  json_t *p = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
  const char *detail = json_string_value(json_object_get(p, "detail"));
  CHECK_MSG(detail && strstr(detail, "X-Callback"), "detail: %s",
            detail ? detail : "(none)");
  json_decref(p);
  hin_resp_free(&r);
}

int main(void) {
  char *dir = ceb_test_tmpdir("callbacks");
  g_dir = dir;
  rx_state rs = {0};
  rx_server *rx = rx_start(handler, &rs);
  CHECK(rx != NULL);
  if (!rx) return ceb_test_done("integration_callbacks");
  int rport = rx_port(rx);
  hin_issuer *iss = hin_issuer_new();
  char jwks[512], conf[512], log[512], port[512];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(port, sizeof port, "%s/port", dir);
  CHECK_INT(hin_issuer_write_jwks(iss, jwks, "RS256", 0), CEB_OK);
  write_conf(dir, jwks, rport);
  pid_t pid = start_bridge(conf, log, port);

  char authz[2][4096];
  const char *names[2] = {"rio", "inst-d"};
  char *tokens[2];
  for (int i = 0; i < 2; i++) {
    char *claims = hin_claims(names[i], 600, -10, NULL, NULL);
    tokens[i] = hin_token(iss, "RS256", "rsa1", claims);
    snprintf(authz[i], sizeof authz[i], "Authorization: Bearer %s", tokens[i]);
    free(claims);
  }

  /* forged or malformed URLs: refused before anything is journaled */
  check_refused(authz[0], "ftp://127.0.0.1/cb");
  check_refused(authz[0], "http://example.com/cb");
  check_refused(authz[0], "http://127.0.0.1/cb\tx");
  check_refused(authz[0], "/relative/cb");
  {
    char big[10 * 1024 + 32];
    int n = snprintf(big, sizeof big, "https://cb.example/");
    memset(big + n, 'a', sizeof big - (size_t)n - 1);
    big[sizeof big - 1] = '\0';
    check_refused(authz[0], big);
  }

  char cb[4][128];
  const char *ids[4] = {"a-1", "b-1", "c-1", "r-1"};
  const char *insts[4] = {"a", "b", "c", "a"};
  for (int i = 0; i < 4; i++) {
    snprintf(cb[i], sizeof cb[i], "http://127.0.0.1:%d/cb/%s", rport, ids[i]);
    CHECK_INT(post(authz[0], ids[i], insts[i], cb[i], NULL), 202);
  }
  /* the client's default, no header */
  CHECK_INT(post(authz[1], "d-1", "d", NULL, NULL), 202);

  /* done: after the partner took it */
  wait_exact(rx, "/cb/a-1", 1);
  CHECK_INT((int)rx_count_exact(rx, "/a") >= 1, 1);
  json_t *doc = check_callback(rx_nth_exact(rx, "/cb/a-1", 0), "a-1", "done");
  CHECK_INT(json_integer_value(
                json_object_get(json_object_get(doc, "response"), "status")),
            200);
  json_decref(doc);
  /* error: the partner refused (dead-lettered) */
  wait_exact(rx, "/cb/b-1", 1);
  doc = check_callback(rx_nth_exact(rx, "/cb/b-1", 0), "b-1", "error");
  json_decref(doc);
  /* time-out: the route's deadline passed */
  wait_exact(rx, "/cb/c-1", 1);
  doc = check_callback(rx_nth_exact(rx, "/cb/c-1", 0), "c-1", "time-out");
  json_decref(doc);
  /* the client's default URL */
  wait_exact(rx, "/cb/default", 1);
  doc = check_callback(rx_nth_exact(rx, "/cb/default", 0), "d-1", "done");
  json_decref(doc);

  /* the four are settled in the store: the kill below cannot repeat them */
  const char *sent[] = {"a-1", "b-1", "c-1", "d-1"};
  for (int i = 0; i < 4; i++) {
    settled_wait sw = {conf, sent[i]};
    CHECK_MSG(ceb_test_wait(callback_settled, &sw, 30000),
              "the callback of %s is not settled in the store", sent[i]);
  }

  /* a receiver that fails: retried on the callbacks route's schedule, and
   * the callback outlives a kill -9 of the bridge */
  wait_exact(rx, "/cb/r-1", 2);
  CHECK_INT(ceb_test_pid_stop(pid, SIGKILL, 30000), -1); /* killed */
  size_t before = rx_count_exact(rx, "/cb/r-1");
  __atomic_store_n(&rs.flaky_ok, 1, __ATOMIC_RELEASE);
  pid = start_bridge(conf, log, port);
  CHECK(ceb_test_wait(r1_answered, &rs, 60000));
  /* an attempt the killed bridge had sent may still have been on its way
   * (at least once: the restarted bridge sends it again); the one answered
   * 200 is the last */
  CHECK(rx_count_exact(rx, "/cb/r-1") >= before + 1);
  doc = check_callback(last(rx, "/cb/r-1"), "r-1", "done");
  json_decref(doc);

  /* exactly once each: the status documents were answered 200 and nothing
   * more came, the restart included (its recovery sent nothing again) */
  CHECK_INT((int)rx_count_exact(rx, "/cb/a-1"), 1);
  CHECK_INT((int)rx_count_exact(rx, "/cb/b-1"), 1);
  CHECK_INT((int)rx_count_exact(rx, "/cb/c-1"), 1);
  CHECK_INT((int)rx_count_exact(rx, "/cb/default"), 1);
  CHECK_INT((int)rx_count_exact(rx, "/a") >= 3, 1); /* a-1, r-1, d-1 */

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
    free(text);
  }
  for (int i = 0; i < 2; i++)
    free(tokens[i]);
  hin_issuer_free(iss);
  rx_stop(rx);
  free(dir);
  return ceb_test_done("integration_callbacks");
}
