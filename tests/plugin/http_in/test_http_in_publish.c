/* What the intermediary publishes, through http.so on the fake host:
 *  - GET /openapi.json: the repository's plugins/http/openapi.json as this
 *    configuration serves it (the events path renamed, the security of
 *    `auth`, the contract paths only when served), public;
 *  - every operation the document lists answers (no 404/405), and the
 *    document's operations are exactly the ones served: a method it does
 *    not list on one of its paths is 405 with the Allow it implies;
 *  - GET /v1/contracts[/{name}[/{version}]]: the register's entries with
 *    hrefs, a document byte for byte as the host holds it, 404 for an
 *    unknown version or a malformed segment, all 404 when serve.contracts
 *    is off; under auth = oauth2 the register needs a token, the OpenAPI
 *    document does not;
 *  - GET /v1/events/{id}: the host's job status; every id ingest accepts
 *    (up to 4096 bytes) is looked up, a longer one is 400; while
 *    threads/2 lookups wait on the store another is 503 status.busy. */
#include "hin_harness.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>

#define DOC_A                                                                  \
  "{\"asyncapi\":\"2.6.0\",\"info\":{\"title\":\"A\",\"version\":\"1.0.0\"},"  \
  "\"channels\":{}}"
#define DOC_B                                                                  \
  "{\"asyncapi\":\"2.6.0\",\"info\":{\"title\":\"A\",\"version\":\"1.1.0\"},"  \
  "\"channels\":{}}"

static char g_base[128];

static hin_resp get(const char *path, const char *authz) {
  char url[8192];
  snprintf(url, sizeof url, "%s%s", g_base, path);
  const char *const hdrs[] = {authz, NULL};
  return hin_request(url, "GET", authz ? hdrs : NULL, NULL, 0, 0);
}

static void set_base(hin_env *e) {
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", e->port);
}

static json_t *repo_doc(void) {
  json_error_t err;
  json_t *doc =
      json_load_file(CEB_SOURCE_DIR "/plugins/http/openapi.json", 0, &err);
  CHECK_MSG(doc != NULL, "openapi.json: %s", err.text);
  return doc;
}

/* The path a test request uses for a documented path template. */
static void concrete(const char *tmpl, const char *events_path, char *out,
                     size_t n) {
  if (strcmp(tmpl, "/events") == 0)
    snprintf(out, n, "%s", events_path);
  else if (strcmp(tmpl, "/v1/contracts/{name}") == 0)
    snprintf(out, n, "/v1/contracts/enrol");
  else if (strcmp(tmpl, "/v1/contracts/{name}/{version}") == 0)
    snprintf(out, n, "/v1/contracts/enrol/1.0.0");
  else if (strcmp(tmpl, "/v1/events/{id}") == 0)
    snprintf(out, n, "/v1/events/p1"); /* post_p1 sent it */
  else
    snprintf(out, n, "%s", tmpl);
}

/* Every documented operation answers with a documented status; methods
 * the document does not list on a path are 405 with its Allow. */
static void operations_served(json_t *served, const char *path) {
  const char *tmpl;
  json_t *item;
  size_t ops = 0;
  json_object_foreach(json_object_get(served, "paths"), tmpl, item) {
    char p[256], url[512];
    concrete(tmpl, path, p, sizeof p);
    snprintf(url, sizeof url, "%s%s", g_base, p);
    static const char *const methods[] = {"GET", "POST",   "OPTIONS",
                                          "PUT", "DELETE", NULL};
    for (int i = 0; methods[i]; i++) {
      char lower[16];
      size_t k = 0;
      for (; methods[i][k]; k++)
        lower[k] = (char)(methods[i][k] | 0x20);
      lower[k] = '\0';
      json_t *op = json_object_get(item, lower);
      const char *ev =
          "{\"specversion\":\"1.0\",\"id\":\"p1\",\"source\":\"urn:t\","
          "\"type\":\"nl.edu.t\"}";
      const char *const ce[] = {"Content-Type: application/cloudevents+json",
                                "WebHook-Request-Origin: partner.example",
                                NULL};
      int post = strcmp(methods[i], "POST") == 0;
      hin_resp r = hin_request(url, methods[i], ce, post ? ev : NULL,
                               post ? strlen(ev) : 0, 0);
      char code[8];
      snprintf(code, sizeof code, "%ld", r.status);
      if (op) {
        ops++;
        CHECK_MSG(json_object_get(json_object_get(op, "responses"), code),
                  "%s %s answered %ld, not a documented response", methods[i],
                  p, r.status);
        CHECK_MSG(r.status != 404 && r.status != 405, "%s %s: %ld", methods[i],
                  p, r.status);
      } else {
        CHECK_MSG(r.status == 405, "%s %s (undocumented) answered %ld",
                  methods[i], p, r.status);
        char allow[64];
        CHECK(hin_header(&r, "Allow", allow, sizeof allow) != NULL);
      }
      hin_resp_free(&r);
    }
  }
  CHECK_MSG(ops >= 6, "only %zu documented operations", ops);
}

static void test_open(void) {
  static const char *const cfg[] = {"auth=none", "serve.contracts=true",
                                    "path=/in", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  set_base(e);
  e->fake->host.contract_put(&e->fake->inst, "enrol", "1.0.0", DOC_A,
                             strlen(DOC_A), "test");
  e->fake->host.contract_put(&e->fake->inst, "enrol", "1.1.0", DOC_B,
                             strlen(DOC_B), "test");
  e->fake->host.contract_put(&e->fake->inst, "other", "2.0.0", DOC_A,
                             strlen(DOC_A), "test");

  hin_resp r = get("/openapi.json", NULL);
  CHECK_INT(r.status, 200);
  char ct[64];
  CHECK(hin_header(&r, "Content-Type", ct, sizeof ct) &&
        strcmp(ct, "application/json") == 0);
  json_t *served = json_loadb(r.body, r.len, 0, NULL);
  hin_resp_free(&r);
  json_t *doc = repo_doc();
  CHECK(served && doc);
  if (!served || !doc) return;
  /* the repository's document, with the events path of this config and
   * auth = none's (empty) security */
  json_t *paths = json_object_get(doc, "paths");
  json_t *events = json_incref(json_object_get(paths, "/events"));
  json_object_del(paths, "/events");
  json_object_set_new(paths, "/in", events);
  const char *k;
  json_t *item;
  json_object_foreach(paths, k, item) {
    const char *m;
    json_t *op;
    json_object_foreach(item, m, op) {
      if (json_array_size(json_object_get(op, "security")))
        json_object_set_new(op, "security", json_array());
    }
  }
  CHECK_MSG(json_equal(served, doc), "GET /openapi.json differs from "
                                     "plugins/http/openapi.json");
  { /* an event of this (anonymous) client for GET /v1/events/{id} */
    const char *const ce[] = {"Content-Type: application/cloudevents+json",
                              NULL};
    const char *ev = "{\"specversion\":\"1.0\",\"id\":\"p1\","
                     "\"source\":\"urn:t\",\"type\":\"nl.edu.t\"}";
    char in[160];
    snprintf(in, sizeof in, "%s/in", g_base);
    hin_resp p = hin_request(in, "POST", ce, ev, strlen(ev), 0);
    CHECK_INT(p.status, 202);
    hin_resp_free(&p);
  }
  operations_served(served, "/in");

  /* the job status: the host's answer as it is; an unknown id 404 */
  r = get("/v1/events/p1", NULL);
  CHECK_INT(r.status, 200);
  CHECK(hin_json_str(&r, "status", "pending"));
  hin_resp_free(&r);
  r = get("/v1/events/p2", NULL);
  CHECK_INT(r.status, 404);
  CHECK(hin_json_str(&r, "code", "event.unknown"));
  { /* every id ingest accepts can be looked up: the longest an event
     * can carry (CEB_ATTR_VALUE_MAX, 4096 bytes) is posted and found (it
     * was posted, 202, and its lookup refused 400 over 512 bytes); one
     * byte more is refused at ingest and is 400 event.id_too_long before
     * any lookup */
    const char *const ce[] = {"Content-Type: application/cloudevents+json",
                              NULL};
    char in[160], path[CEB_ATTR_VALUE_MAX + 64] = "/v1/events/";
    static char ev[CEB_ATTR_VALUE_MAX + 256], id[CEB_ATTR_VALUE_MAX + 2];
    snprintf(in, sizeof in, "%s/in", g_base);
    memset(id, 'x', CEB_ATTR_VALUE_MAX + 1);
    id[CEB_ATTR_VALUE_MAX + 1] = '\0';
    snprintf(ev, sizeof ev,
             "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:t\","
             "\"type\":\"nl.edu.t\"}",
             id);
    hin_resp p = hin_request(in, "POST", ce, ev, strlen(ev), 0);
    CHECK_MSG(p.status >= 400 && p.status < 500, "a %d-byte id: %ld",
              CEB_ATTR_VALUE_MAX + 1, p.status);
    hin_resp_free(&p);
    hin_resp_free(&r);
    r = get(strcat(path, id), NULL);
    CHECK_INT(r.status, 400);
    CHECK(hin_json_str(&r, "code", "event.id_too_long"));
    hin_resp_free(&r);

    id[CEB_ATTR_VALUE_MAX] = '\0';
    snprintf(ev, sizeof ev,
             "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:t\","
             "\"type\":\"nl.edu.t\"}",
             id);
    p = hin_request(in, "POST", ce, ev, strlen(ev), 0);
    CHECK_INT(p.status, 202);
    hin_resp_free(&p);
    snprintf(path, sizeof path, "/v1/events/%s", id);
    r = get(path, NULL);
    CHECK_INT(r.status, 200);
    CHECK(hin_json_str(&r, "status", "pending"));
    hin_resp_free(&r);
    path[strlen(path) - 1] = '\0'; /* 4095 bytes: not sent */
    r = get(path, NULL);
    CHECK_INT(r.status, 404);
    CHECK(hin_json_str(&r, "code", "event.unknown"));
  }
  hin_resp_free(&r);

  /* the register */
  r = get("/v1/contracts", NULL);
  CHECK_INT(r.status, 200);
  CHECK(r.body && strstr(r.body, "\"href\":\"/v1/contracts/enrol/1.1.0\"") &&
        strstr(r.body, "\"href\":\"/v1/contracts/other/2.0.0\""));
  hin_resp_free(&r);
  r = get("/v1/contracts/enrol", NULL);
  CHECK_INT(r.status, 200);
  CHECK(r.body && strstr(r.body, "enrol/1.0.0") && !strstr(r.body, "other"));
  hin_resp_free(&r);
  r = get("/v1/contracts/enrol/1.1.0", NULL);
  CHECK_INT(r.status, 200);
  CHECK(r.len == strlen(DOC_B) && memcmp(r.body, DOC_B, r.len) == 0);
  hin_resp_free(&r);
  r = get("/v1/contracts/enrol/9.9.9", NULL);
  CHECK_INT(r.status, 404);
  CHECK(hin_json_str(&r, "code", "not_found"));
  hin_resp_free(&r);
  r = get("/v1/contracts/enrol/1.0.0/extra", NULL);
  CHECK_INT(r.status, 404);
  hin_resp_free(&r);
  r = get("/v1/contracts/en%20rol/1.0.0", NULL);
  CHECK_INT(r.status, 404);
  hin_resp_free(&r);
  r = get("/v1/contracts/none", NULL); /* a name not held: an empty list */
  CHECK_INT(r.status, 200);
  CHECK(r.body && strstr(r.body, "\"contracts\":[]"));
  hin_resp_free(&r);
  json_decref(served);
  json_decref(doc);
  hin_stop(e);
}

static void test_off(void) {
  static const char *const cfg[] = {"auth=none", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  set_base(e);
  hin_resp r = get("/v1/contracts", NULL);
  CHECK_INT(r.status, 404);
  hin_resp_free(&r);
  r = get("/openapi.json", NULL);
  CHECK_INT(r.status, 200);
  json_t *d = json_loadb(r.body, r.len, 0, NULL);
  json_t *paths = json_object_get(d, "paths");
  CHECK(json_object_get(paths, "/events") &&
        json_object_get(paths, "/v1/events/{id}") &&
        !json_object_get(paths, "/v1/contracts") &&
        !json_object_get(paths, "/v1/contracts/{name}/{version}"));
  json_decref(d);
  hin_resp_free(&r);
  hin_stop(e);
  static const char *const nostatus[] = {"auth=none", "serve.status=false",
                                         NULL};
  e = hin_start(nostatus, NULL);
  CHECK(e != NULL);
  if (!e) return;
  set_base(e);
  r = get("/v1/events/p1", NULL);
  CHECK_INT(r.status, 404);
  CHECK(hin_json_str(&r, "code", "not_found"));
  hin_resp_free(&r);
  r = get("/openapi.json", NULL);
  d = json_loadb(r.body, r.len, 0, NULL);
  CHECK(!json_object_get(json_object_get(d, "paths"), "/v1/events/{id}"));
  json_decref(d);
  hin_resp_free(&r);
  hin_stop(e);
  static const char *const none[] = {"auth=none", "serve.openapi=false", NULL};
  e = hin_start(none, NULL);
  CHECK(e != NULL);
  if (!e) return;
  set_base(e);
  r = get("/openapi.json", NULL);
  CHECK_INT(r.status, 404);
  hin_resp_free(&r);
  hin_stop(e);
  /* a path on a published route is a config error */
  static const char *const clash[] = {"auth=none", "path=/openapi.json", NULL};
  CHECK_INT(hin_init_status(clash), CEB_ECONFIG);
}

static void test_oauth(void) {
  hin_issuer *issuer = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_publish");
  char jwks[512], jwks_entry[600];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(jwks_entry, sizeof jwks_entry, "oauth2.jwks_file=%s", jwks);
  CHECK_INT(hin_issuer_write_jwks(issuer, jwks, "RS256", 0), CEB_OK);
  const char *const cfg[] = {jwks_entry, "oauth2.issuer=https://idp.test",
                             "oauth2.audience=cebridge", "serve.contracts=true",
                             NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    set_base(e);
    e->fake->host.contract_put(&e->fake->inst, "enrol", "1.0.0", DOC_A,
                               strlen(DOC_A), "test");
    hin_resp r = get("/v1/contracts/enrol/1.0.0", NULL);
    CHECK_INT(r.status, 401);
    CHECK(hin_json_str(&r, "code", "auth.missing"));
    hin_resp_free(&r);
    char *claims = hin_claims("partner-a", 300, -10, NULL, NULL);
    char *tok = hin_token(issuer, "RS256", "rsa1", claims);
    char authz[8192];
    snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok);
    r = get("/v1/contracts/enrol/1.0.0", authz);
    CHECK_INT(r.status, 200);
    CHECK(r.len == strlen(DOC_A));
    hin_resp_free(&r);
    r = get("/openapi.json", NULL); /* public */
    CHECK_INT(r.status, 200);
    json_t *d = json_loadb(r.body, r.len, 0, NULL);
    json_t *sec = json_object_get(
        json_object_get(
            json_object_get(json_object_get(d, "paths"), "/v1/contracts"),
            "get"),
        "security");
    CHECK_MSG(json_array_size(sec) == 1 &&
                  json_object_get(json_array_get(sec, 0), "bearerAuth"),
              "auth = oauth2: the register's operations need the token");
    json_decref(d);
    hin_resp_free(&r);
    free(tok);
    free(claims);
    hin_stop(e);
  }
  hin_issuer_free(issuer);
  ceb_test_rmtree(dir);
  free(dir);
}

/* ---- 503 status.busy: at most threads/2 (at least 1) lookups wait on
 * the store at once ---- */

/* The host's event_status made slow: the first lookup waits until the
 * test releases it (a store held up), later ones answer at once (404), so
 * that without the bound the second lookup would be answered 404, not
 * hang. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int entered, released;
} g_slow = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static int slow_event_status(ceb_instance *inst, const char *client,
                             const char *id, char **json, size_t *len) {
  (void)inst;
  (void)client;
  (void)id;
  *json = NULL;
  *len = 0;
  pthread_mutex_lock(&g_slow.lock);
  if (++g_slow.entered == 1)
    while (!g_slow.released)
      pthread_cond_wait(&g_slow.cond, &g_slow.lock);
  pthread_mutex_unlock(&g_slow.lock);
  return CEB_ENOTFOUND;
}

static int slow_entered(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_slow.lock);
  int n = g_slow.entered;
  pthread_mutex_unlock(&g_slow.lock);
  return n >= 1;
}

/* One request on a new connection, given up after 2 s. The listener
 * threads take connections on SO_REUSEPORT sockets: the kernel may hand
 * this one to the thread held in the store, which answers only once it is
 * released; so a request that gets no answer is made again on a new
 * connection (at most 40 times) until another thread takes it. Not a
 * timed assertion: the timeout only bounds a transport attempt. */
static long try_request(const char *url, const char *method, const char *body,
                        char *code, size_t codelen, char *ra, size_t ralen) {
  long st = 0;
  hin_timeout_ms = 2000;
  for (int i = 0; i < 40 && st == 0; i++) {
    const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                                NULL};
    hin_resp r = hin_request(url, method, hdrs, body,
                             body ? strlen(body) : 0, 0);
    st = r.status;
    if (st && code) {
      json_t *j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
      const char *cv = json_string_value(json_object_get(j, "code"));
      snprintf(code, codelen, "%s", cv ? cv : "");
      json_decref(j);
    }
    if (st && ra && !hin_header(&r, "Retry-After", ra, ralen)) ra[0] = '\0';
    hin_resp_free(&r);
  }
  hin_timeout_ms = 20000;
  return st;
}

static void *get_thread(void *arg) {
  hin_resp *out = arg;
  *out = get("/v1/events/held", NULL);
  return NULL;
}

/* threads = 2: one lookup at a time. While one waits on the (held) store,
 * a second is 503 status.busy with Retry-After, not asked of the store,
 * and the other listener thread still takes events; once the first is
 * answered, lookups are served again (the slot was given back). Fails
 * when the bound is removed (the second lookup is then a 404). */
static void test_status_busy(void) {
  static const char *const cfg[] = {"auth=none", "threads=2",
                                    "retry_after=7s", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  set_base(e);
  e->fake->host.event_status = slow_event_status;
  hin_resp first = {0};
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, get_thread, &first), 0);
  CHECK_MSG(ceb_test_wait(slow_entered, NULL, 30000),
            "the first lookup never reached the host");

  char url[256], code[64] = "", ra[16] = "";
  snprintf(url, sizeof url, "%s/v1/events/other", g_base);
  CHECK_INT(try_request(url, "GET", NULL, code, sizeof code, ra, sizeof ra),
            503);
  CHECK_STR(code, "status.busy");
  CHECK_STR(ra, "7");
  pthread_mutex_lock(&g_slow.lock);
  CHECK_INT(g_slow.entered, 1); /* the store was not asked */
  pthread_mutex_unlock(&g_slow.lock);

  /* the other listener thread takes events meanwhile */
  const char *ev = "{\"specversion\":\"1.0\",\"id\":\"b1\","
                   "\"source\":\"urn:t\",\"type\":\"nl.edu.t\"}";
  CHECK_INT(try_request(e->url, "POST", ev, NULL, 0, NULL, 0), 202);

  pthread_mutex_lock(&g_slow.lock);
  g_slow.released = 1;
  pthread_cond_broadcast(&g_slow.cond);
  pthread_mutex_unlock(&g_slow.lock);
  pthread_join(t, NULL);
  /* first's own answer is not asserted: the attempts the kernel handed to
   * the held thread pile up there, and the source's connection guard may
   * close the oldest (first) to make room */
  hin_resp_free(&first);
  hin_resp r = get("/v1/events/other", NULL);
  CHECK_INT(r.status, 404);
  hin_resp_free(&r);
  hin_stop(e);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test_open();
  test_off();
  test_oauth();
  test_status_busy();
  curl_global_cleanup();
  return ceb_test_done("test_http_in_publish");
}
