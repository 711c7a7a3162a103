/* The RIO Mapper job status (seed 001) end to end through the real
 * `cebridge run` binary: three institutions (three OAuth2 clients, three
 * ordering keys) post to the intermediary; the partner (a receiver in this
 * test) takes institution a's events (holding the first until the test
 * lets it go), refuses b's (400) and is busy for c's (503) until the
 * route's deadline passes. Each client polls GET /v1/events/{id} on the
 * intermediary's own port under its own token and sees pending,
 * in-progress, done (with the partner's status and a body excerpt bounded
 * by response_excerpt), error (phase, message) and time-out; another
 * client's event and an unknown id are 404 problem+json. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ceb_test_proc.h"
#include "ceb_test_rx.h"
#include "hin_harness.h"

#define EXCERPT 64
/* The partner's answer to institution a: longer than EXCERPT. */
static const char k_done_body[] =
    "{\"attributes\":{\"opleidingseenheidcode\":\"1234\"},\"resource\":"
    "\"programs/123e4567-e89b-12d3-a456-426655440000\"}";

/* ---- the partner (ceb_test_rx) ---- */

typedef struct partner {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int open; /* the gate for a-1 */
  int held; /* a-1 is being held */
} partner;

static void p_handle(void *arg, const rx_request *req, size_t index,
                     rx_response *resp) {
  (void)index;
  partner *p = arg;
  if (strcmp(req->path, "/b") == 0) {
    rx_reply(resp, 400, "application/json", "{\"error\":\"unknown program\"}");
    return;
  }
  if (strcmp(req->path, "/c") == 0) {
    rx_reply(resp, 503, "application/json", "{\"error\":\"busy\"}");
    return;
  }
  if (req->event_id && strcmp(req->event_id, "a-1") == 0) {
    pthread_mutex_lock(&p->lock);
    p->held = 1;
    pthread_cond_broadcast(&p->cond);
    /* bounded: the test opens the gate long before */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    while (!p->open)
      if (pthread_cond_timedwait(&p->cond, &p->lock, &until) != 0) break;
    pthread_mutex_unlock(&p->lock);
  }
  rx_reply(resp, 200, "application/json", k_done_body);
}

static int is_held(void *arg) {
  partner *p = arg;
  pthread_mutex_lock(&p->lock);
  int h = p->held;
  pthread_mutex_unlock(&p->lock);
  return h;
}

/* ---- the clients ---- */

typedef struct client {
  const char *name;
  char *token;
  char authz[4096];
} client;

static const char *g_base; /* http://127.0.0.1:PORT */

static long post(client *cl, const char *id, const char *inst) {
  char url[160], body[512];
  snprintf(url, sizeof url, "%s/events", g_base);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":"
           "\"urn:rio-mapper:%s\",\"type\":\"nl.rio.programs.upsert\","
           "\"institution\":\"%s\",\"data\":{\"programId\":\"%s\"}}",
           id, inst, inst, id);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              cl->authz, NULL};
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  long st = r.status;
  if (st != 202)
    fprintf(stderr, "POST %s: %ld %.*s\n", id, st, (int)r.len,
            r.body ? r.body : "");
  hin_resp_free(&r);
  return st;
}

/* GET /v1/events/{id} as cl: the status code, and the body in *out (new
 * reference; NULL when not JSON). */
static long get_status(client *cl, const char *id, json_t **out, char *ctype,
                       size_t ctlen) {
  char url[256];
  snprintf(url, sizeof url, "%s/v1/events/%s", g_base, id);
  const char *const hdrs[] = {cl->authz, NULL};
  hin_resp r = hin_request(url, "GET", hdrs, NULL, 0, 0);
  *out = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
  if (ctype) {
    ctype[0] = '\0';
    hin_header(&r, "Content-Type", ctype, ctlen);
  }
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

typedef struct status_wait {
  client *cl;
  const char *id;
  const char *want;
  json_t *last; /* the last answer */
} status_wait;

static int has_status(void *arg) {
  status_wait *w = arg;
  json_decref(w->last);
  w->last = NULL;
  if (get_status(w->cl, w->id, &w->last, NULL, 0) != 200) return 0;
  const char *s = json_string_value(json_object_get(w->last, "status"));
  return s && strcmp(s, w->want) == 0;
}

/* Waits until id's status is want; returns the answer (caller decrefs). */
static json_t *wait_status(client *cl, const char *id, const char *want) {
  status_wait w = {cl, id, want, NULL};
  int ok = ceb_test_wait(has_status, &w, 30000);
  CHECK_MSG(ok, "%s of %s never became %s (last: %s)", id, cl->name, want,
            w.last ? json_string_value(json_object_get(w.last, "status"))
                   : "no answer");
  return w.last;
}

static void write_conf(const char *dir, const char *jwks, int pport) {
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
           "oauth2.jwks_min_refresh = 0s\n"
           "\n[sink rio]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/a\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "timeout = 90s\n"
           "response_excerpt = %d\n"
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
           "\n[route inst-a]\n"
           "from = rio-mapper\n"
           "to = rio\n"
           "match.institution = a\n"
           "order_by = institution\n"
           "\n[route inst-b]\n"
           "from = rio-mapper\n"
           "to = rio-b\n"
           "match.institution = b\n"
           "order_by = institution\n"
           "\n[route inst-c]\n"
           "from = rio-mapper\n"
           "to = rio-c\n"
           "match.institution = c\n"
           "order_by = institution\n"
           "retry.mode = exponential\n"
           "retry.base = 100ms\n"
           "retry.max_delay = 200ms\n"
           "deadline = 1500ms\n",
           dir, dir, jwks, pport, EXCERPT, pport, pport);
  ceb_test_write_file(path, "00-bridge.conf", text);
}

int main(void) {
  char *dir = ceb_test_tmpdir("job_status");
  partner p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  rx_server *d = rx_start(p_handle, &p);
  CHECK(d != NULL);
  if (!d) return ceb_test_done("integration_job_status");
  hin_issuer *iss = hin_issuer_new();
  char jwks[512], conf[512], log[512], port[512];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(port, sizeof port, "%s/port", dir);
  CHECK_INT(hin_issuer_write_jwks(iss, jwks, "RS256", 0), CEB_OK);
  write_conf(dir, jwks, rx_port(d));
  pid_t pid = ceb_test_bridge_start(conf, log);
  int pt = ceb_test_wait_port_file(port, 15000);
  CHECK(pt > 0);
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%d", pt);
  g_base = base;

  client cls[3] = {
      {"inst-a", NULL, ""}, {"inst-b", NULL, ""}, {"inst-c", NULL, ""}};
  for (int i = 0; i < 3; i++) {
    char *claims = hin_claims(cls[i].name, 300, -10, NULL, NULL);
    cls[i].token = hin_token(iss, "RS256", "rsa1", claims);
    snprintf(cls[i].authz, sizeof cls[i].authz, "Authorization: Bearer %s",
             cls[i].token);
    free(claims);
  }
  client *a = &cls[0], *b = &cls[1], *c = &cls[2];

  CHECK_INT(post(a, "a-1", "a"), 202);
  CHECK_INT(post(a, "a-2", "a"), 202);
  CHECK_INT(post(b, "b-1", "b"), 202);
  CHECK_INT(post(c, "c-1", "c"), 202);

  /* a-1 is at the partner, a-2 waits behind it (one ordering key) */
  CHECK(ceb_test_wait(is_held, &p, 30000));
  json_t *s = wait_status(a, "a-1", "in-progress");
  CHECK_STR(json_string_value(json_object_get(s, "id")), "a-1");
  json_decref(s);
  json_t *pend = NULL;
  CHECK_INT(get_status(a, "a-2", &pend, NULL, 0), 200);
  CHECK_STR(json_string_value(json_object_get(pend, "status")), "pending");
  json_decref(pend);

  /* b's partner refused: error, in the delivery, with its answer */
  s = wait_status(b, "b-1", "error");
  CHECK_STR(json_string_value(json_object_get(s, "phase")), "delivering");
  CHECK_STR(json_string_value(json_object_get(s, "route")), "inst-b");
  const char *msg = json_string_value(json_object_get(s, "message"));
  CHECK_MSG(msg && strstr(msg, "400") && strstr(msg, "unknown program"),
            "message: %s", msg ? msg : "(none)");
  json_decref(s);

  /* c's partner stayed busy past the route's deadline: time-out */
  s = wait_status(c, "c-1", "time-out");
  CHECK_STR(json_string_value(json_object_get(s, "route")), "inst-c");
  msg = json_string_value(json_object_get(s, "message"));
  CHECK_MSG(msg && strstr(msg, "deadline"), "message: %s",
            msg ? msg : "(none)");
  json_decref(s);

  /* a client sees only its own events: b asking for a-1 is as unknown as
   * an id nobody sent */
  char ctype[128];
  json_t *nf = NULL;
  CHECK_INT(get_status(b, "a-1", &nf, ctype, sizeof ctype), 404);
  CHECK_STR(ctype, "application/problem+json");
  CHECK_INT(json_integer_value(json_object_get(nf, "status")), 404);
  CHECK(json_object_get(nf, "routes") == NULL);
  json_decref(nf);
  CHECK_INT(get_status(a, "no-such-event", &nf, ctype, sizeof ctype), 404);
  CHECK_STR(ctype, "application/problem+json");
  json_decref(nf);
  { /* without a token: 401, as for posting */
    char url[128];
    snprintf(url, sizeof url, "%s/v1/events/a-1", g_base);
    hin_resp r = hin_request(url, "GET", NULL, NULL, 0, 0);
    CHECK_INT(r.status, 401);
    hin_resp_free(&r);
  }

  /* the partner answers a-1: done with its status and the start of its
   * body (response_excerpt bytes), then a-2 */
  pthread_mutex_lock(&p.lock);
  p.open = 1;
  pthread_cond_broadcast(&p.cond);
  pthread_mutex_unlock(&p.lock);
  s = wait_status(a, "a-1", "done");
  json_t *resp = json_object_get(s, "response");
  CHECK_INT(json_integer_value(json_object_get(resp, "status")), 200);
  const char *excerpt = json_string_value(json_object_get(resp, "body"));
  CHECK_MSG(excerpt && strlen(excerpt) == EXCERPT &&
                strncmp(excerpt, k_done_body, EXCERPT) == 0,
            "excerpt: %s", excerpt ? excerpt : "(none)");
  json_decref(s);
  s = wait_status(a, "a-2", "done");
  json_decref(s);

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
    free(text);
  }
  for (int i = 0; i < 3; i++)
    free(cls[i].token);
  hin_issuer_free(iss);
  rx_stop(d);
  free(dir);
  return ceb_test_done("integration_job_status");
}
