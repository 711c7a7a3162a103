/* The RIO Mapper scenario of seed 001 as one story, end to end through the
 * real `cebridge run` binary: a RIO-style client (one OAuth2 client) posts
 * two events for each of three institutions, every event with its own
 * X-Callback URL; the route orders by institution. The partner takes
 * institutions a's and c's events and fails b's with 500 on every attempt,
 * so b's events become `error` once the route's retry schedule (three
 * attempts) is spent, in order: b-2 is tried only after b-1 is settled.
 * While the bridge works the client polls GET /v1/events/{id}; each poll
 * answers a state of the job model, and no event goes back from a final
 * state. At the end, for each of the six events:
 *  - its callback arrived once (nothing more after the callback delivery
 *    is settled in the store), signed per Standard Webhooks (checked with
 *    the sink's own verifier), with X-Rio-Mapper-Token = the event id;
 *  - the callback's body is the very document GET /v1/events/{id} answers
 *    (done with the partner's answer for a and c; error, phase delivering,
 *    the partner's 500 in the message, for b);
 *  - polling saw that same final state. */
#include <jansson.h>
#include <pthread.h>
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

#define NEV 6
#define ATTEMPTS 3 /* retry.schedule of the failing institution's route */

static const char k_secret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
static const char *const k_ids[NEV] = {"a-1", "a-2", "b-1",
                                       "b-2", "c-1", "c-2"};
static const char *const k_insts[NEV] = {"a", "a", "b", "b", "c", "c"};
/* What each event ends as. */
static const char *const k_final[NEV] = {"done",  "done", "error",
                                         "error", "done", "done"};

/* ---- the partner (/a /b /c) and the client's callback URLs (/cb/ID) ---- */

static void handler(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  if (strcmp(req->path, "/b") == 0) {
    rx_reply(resp, 500, "application/json",
             "{\"error\":\"institution b: upstream unavailable\"}");
  } else if (strncmp(req->path, "/cb/", 4) == 0) {
    rx_reply(resp, 204, NULL, NULL);
  } else {
    char body[256];
    snprintf(body, sizeof body,
             "{\"attributes\":{\"opleidingseenheidcode\":\"1234\"},"
             "\"resource\":\"programs/%s\"}",
             req->event_id ? req->event_id : "?");
    rx_reply(resp, 200, "application/json", body);
  }
}

/* ---- the client ---- */

static char g_base[64];
static char g_authz[4096];

static long post(const char *id, const char *inst, int rport) {
  char url[160], body[512], cbh[256];
  snprintf(url, sizeof url, "%s/events", g_base);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":"
           "\"urn:rio-mapper:%s\",\"type\":\"nl.rio.programs.upsert\","
           "\"institution\":\"%s\",\"data\":{\"programId\":\"%s\"}}",
           id, inst, inst, id);
  snprintf(cbh, sizeof cbh, "X-Callback: http://127.0.0.1:%d/cb/%s", rport, id);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              g_authz, cbh, NULL};
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  long st = r.status;
  if (st != 202)
    fprintf(stderr, "POST %s: %ld %.*s\n", id, st, (int)r.len,
            r.body ? r.body : "");
  hin_resp_free(&r);
  return st;
}

/* GET /v1/events/{id}: the status code; the JSON body in *out (new
 * reference, NULL when not JSON). */
static long get_status(const char *id, json_t **out) {
  char url[256];
  snprintf(url, sizeof url, "%s/v1/events/%s", g_base, id);
  const char *const hdrs[] = {g_authz, NULL};
  hin_resp r = hin_request(url, "GET", hdrs, NULL, 0, 0);
  *out = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

static int is_final(const char *s) {
  return strcmp(s, "done") == 0 || strcmp(s, "error") == 0 ||
         strcmp(s, "time-out") == 0;
}

/* What polling saw of each event. */
typedef struct poll_state {
  rx_server *rx;
  char last[NEV][16];  /* the last state polled */
  int polls[NEV];      /* answers 200 */
  int went_back[NEV];  /* a final state followed by another state */
  int bad_answer[NEV]; /* not 200, or a state outside the job model */
} poll_state;

/* One round of polls; 1 when every event has a final state and its
 * callback arrived. */
static int poll_round(void *arg) {
  poll_state *ps = arg;
  int all = 1;
  for (int i = 0; i < NEV; i++) {
    json_t *doc = NULL;
    long st = get_status(k_ids[i], &doc);
    const char *s = json_string_value(json_object_get(doc, "status"));
    if (st != 200 || !s ||
        (strcmp(s, "pending") != 0 && strcmp(s, "in-progress") != 0 &&
         !is_final(s))) {
      ps->bad_answer[i]++;
      all = 0;
    } else {
      ps->polls[i]++;
      if (ps->last[i][0] && is_final(ps->last[i]) &&
          strcmp(ps->last[i], s) != 0)
        ps->went_back[i]++;
      snprintf(ps->last[i], sizeof ps->last[i], "%s", s);
      if (!is_final(s)) all = 0;
    }
    json_decref(doc);
    char cb[64];
    snprintf(cb, sizeof cb, "/cb/%s", k_ids[i]);
    if (rx_count_exact(ps->rx, cb) == 0) all = 0;
  }
  return all;
}

/* 1 when the store holds id's callback delivery as done (`cebridge status
 * --json`, a reader beside the running bridge): nothing sends it again. */
typedef struct settled_wait {
  const char *conf;
  const char *id;
} settled_wait;

static int callback_settled(void *arg) {
  settled_wait *w = arg;
  return ceb_test_route_state_is(w->conf, w->id, "callbacks", "done");
}

/* The callback request of event i: signed, its token, its body the final
 * GET answer. */
static void check_callback(rx_server *rx, int i) {
  const char *id = k_ids[i];
  char path[64];
  snprintf(path, sizeof path, "/cb/%s", id);
  CHECK_MSG(rx_count_exact(rx, path) == 1, "callback of %s arrived %zu times",
            id, rx_count_exact(rx, path));
  const rx_request *r = rx_nth_exact(rx, path, 0);
  if (!r) return;
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

  json_t *cb = json_loadb(r->body, r->len, 0, NULL);
  CHECK_MSG(cb != NULL, "callback of %s: not JSON: %.*s", id, (int)r->len,
            r->body);
  json_t *polled = NULL;
  CHECK_INT(get_status(id, &polled), 200);
  CHECK_MSG(cb && polled && json_equal(cb, polled),
            "callback of %s differs from GET /v1/events/%s:\n%s\n%s", id, id,
            r->body, polled ? json_dumps(polled, JSON_COMPACT) : "(none)");
  CHECK_STR(json_string_value(json_object_get(cb, "id")), id);
  CHECK_STR(json_string_value(json_object_get(cb, "status")), k_final[i]);
  json_t *routes = json_object_get(cb, "routes");
  CHECK_INT((int)json_array_size(routes), 1); /* not the callbacks route */
  json_t *rt = json_array_get(routes, 0);
  if (strcmp(k_final[i], "done") == 0) {
    json_t *resp = json_object_get(cb, "response");
    CHECK_INT(json_integer_value(json_object_get(resp, "status")), 200);
    const char *body = json_string_value(json_object_get(resp, "body"));
    char want[64];
    snprintf(want, sizeof want, "\"programs/%s\"", id);
    CHECK_MSG(body && strstr(body, want), "%s: partner's answer %s", id,
              body ? body : "(none)");
    CHECK_INT(json_integer_value(json_object_get(rt, "attempts")), 1);
  } else {
    CHECK_STR(json_string_value(json_object_get(cb, "phase")), "delivering");
    CHECK_STR(json_string_value(json_object_get(cb, "route")), "inst-b");
    const char *msg = json_string_value(json_object_get(cb, "message"));
    CHECK_MSG(msg && strstr(msg, "500") && strstr(msg, "upstream unavailable"),
              "%s: message %s", id, msg ? msg : "(none)");
    CHECK_INT(json_integer_value(json_object_get(rt, "attempts")), ATTEMPTS);
  }
  json_decref(cb);
  json_decref(polled);
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
           "\n[sink rio-a]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/a\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[sink rio-b]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/b\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           /* both events' attempts fail in a row: the circuit stays closed so
            * that b-2 gets its schedule as b-1 did */
           "circuit.failures = 100\n"
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
           "to = rio-a\n"
           "match.institution = a\n"
           "order_by = institution\n"
           "\n[route inst-b]\n"
           "from = rio-mapper\n"
           "to = rio-b\n"
           "match.institution = b\n"
           "order_by = institution\n"
           "retry.schedule = 0s 100ms 200ms\n"
           "\n[route inst-c]\n"
           "from = rio-mapper\n"
           "to = rio-c\n"
           "match.institution = c\n"
           "order_by = institution\n"
           "\n[route callbacks]\n"
           "from = rio-mapper\n"
           "to = callbacks\n"
           "callbacks = true\n"
           "retry.mode = exponential\n"
           "retry.base = 200ms\n"
           "retry.max_delay = 400ms\n",
           dir, dir, jwks, rport, rport, rport, k_secret);
  ceb_test_write_file(path, "00-bridge.conf", text);
}

int main(void) {
  char *dir = ceb_test_tmpdir("rio_scenario");
  rx_server *rx = rx_start(handler, NULL);
  CHECK(rx != NULL);
  if (!rx) return ceb_test_done("integration_rio_scenario");
  int rport = rx_port(rx);
  hin_issuer *iss = hin_issuer_new();
  char jwks[512], conf[512], log[512], port[512];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(port, sizeof port, "%s/port", dir);
  CHECK_INT(hin_issuer_write_jwks(iss, jwks, "RS256", 0), CEB_OK);
  write_conf(dir, jwks, rport);
  pid_t pid = ceb_test_bridge_start(conf, log);
  int pt = ceb_test_wait_port_file(port, 15000);
  CHECK(pt > 0);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", pt);
  char *claims = hin_claims("rio-mapper", 600, -10, NULL, NULL);
  char *token = hin_token(iss, "RS256", "rsa1", claims);
  free(claims);
  snprintf(g_authz, sizeof g_authz, "Authorization: Bearer %s", token);

  for (int i = 0; i < NEV; i++)
    CHECK_INT(post(k_ids[i], k_insts[i], rport), 202);

  /* poll until every event is final and its callback came */
  poll_state ps = {.rx = rx};
  CHECK_MSG(ceb_test_wait(poll_round, &ps, 60000),
            "not every event reached a final state with its callback");
  for (int i = 0; i < NEV; i++) {
    CHECK_MSG(ps.polls[i] > 0 && ps.bad_answer[i] == 0,
              "%s: %d answers outside the job model", k_ids[i],
              ps.bad_answer[i]);
    CHECK_MSG(ps.went_back[i] == 0, "%s left its final state", k_ids[i]);
    CHECK_MSG(strcmp(ps.last[i], k_final[i]) == 0, "%s polled %s, not %s",
              k_ids[i], ps.last[i], k_final[i]);
  }

  /* each callback delivery settled: from here nothing may come again */
  for (int i = 0; i < NEV; i++) {
    settled_wait sw = {conf, k_ids[i]};
    CHECK_MSG(ceb_test_wait(callback_settled, &sw, 30000),
              "the callback of %s is not settled in the store", k_ids[i]);
  }
  for (int i = 0; i < NEV; i++)
    check_callback(rx, i);

  /* the partner: a's and c's once each in order, b's three attempts
   * each, all of b-1's before b-2's first (one ordering key) */
  CHECK_INT((int)rx_count_exact(rx, "/a"), 2);
  CHECK_INT((int)rx_count_exact(rx, "/c"), 2);
  CHECK_INT((int)rx_count_exact(rx, "/b"), 2 * ATTEMPTS);
  {
    int seen[3][2] = {{0}}; /* per institution: requests of its 1st, 2nd */
    for (size_t n = 0; n < rx_count(rx); n++) {
      const rx_request *r = rx_get(rx, n);
      if (strlen(r->path) != 2 || !r->event_id) continue;
      int inst = r->path[1] - 'a';
      if (inst < 0 || inst > 2) continue;
      int second = strcmp(r->event_id + 1, "-2") == 0;
      if (!second)
        CHECK_MSG(seen[inst][1] == 0, "%s arrived after %c-2", r->event_id,
                  'a' + inst);
      seen[inst][second]++;
    }
  }

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
    free(text);
  }
  free(token);
  hin_issuer_free(iss);
  rx_stop(rx);
  free(dir);
  return ceb_test_done("integration_rio_scenario");
}
