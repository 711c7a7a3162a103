/* The JWKS fetched from the issuer's URL (a local libmicrohttpd server
 * here): loaded at start, refreshed on an unknown kid at most once per
 * oauth2.jwks_min_refresh (on the fake host's injected clock), and kept
 * when a refresh fails. */
#include "hin_harness.h"

#include "ceb_test_rx.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <time.h>

/* The issuer's JWKS endpoint (ceb_test_rx; each request a fetch). */
typedef struct issuer_srv {
  pthread_mutex_t lock;
  char *jwks_path; /* served from this file */
  int fail;        /* answer 500 */
} issuer_srv;

static void serve(void *arg, const rx_request *req, size_t index,
                  rx_response *resp) {
  (void)req;
  (void)index;
  issuer_srv *is = arg;
  pthread_mutex_lock(&is->lock);
  int fail = is->fail;
  pthread_mutex_unlock(&is->lock);
  char *text = fail ? NULL : ceb_test_read_file(is->jwks_path, NULL);
  rx_reply(resp, text ? 200 : 500, NULL, text ? text : "oops!");
  free(text);
}

static long post(hin_env *e, const char *tok) {
  char authz[4096];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, NULL};
  hin_resp r = hin_post(e, hdrs,
                        "{\"specversion\":\"1.0\",\"id\":\"j\",\"source\":"
                        "\"urn:t\",\"type\":\"nl.edu.j\"}");
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

static void set_clock(hin_env *e, int64_t ms) {
  pthread_mutex_lock(&e->fake->lock);
  e->fake->clock_ms = ms;
  pthread_mutex_unlock(&e->fake->lock);
}

/* oauth2.client_claim names the claim that identifies the client. */
static void test_client_claim(hin_issuer *iss, const char *jwks_path) {
  char file_entry[600];
  snprintf(file_entry, sizeof file_entry, "oauth2.jwks_file=%s", jwks_path);
  const char *const cfg[] = {file_entry, "oauth2.audience=cebridge",
                             "oauth2.client_claim=org", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  long now = (long)time(NULL);
  char claims[256];
  snprintf(claims, sizeof claims,
           "{\"aud\":\"cebridge\",\"exp\":%ld,\"org\":\"ORG-1\","
           "\"client_id\":\"someone-else\"}",
           now + 300);
  char *tok = hin_token(iss, "RS256", "rsa1", claims);
  CHECK_INT(post(e, tok), 202);
  free(tok);
  char c[32];
  ceb_fake_event_client(e->fake, 0, c, sizeof c);
  CHECK_STR(c, "ORG-1");
  /* a token without that claim names no client */
  snprintf(claims, sizeof claims,
           "{\"aud\":\"cebridge\",\"exp\":%ld,\"client_id\":\"x\"}", now + 300);
  tok = hin_token(iss, "RS256", "rsa1", claims);
  CHECK_INT(post(e, tok), 401);
  free(tok);
  CHECK_INT(ceb_fake_event_count(e->fake), 1);
  hin_stop(e);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  hin_issuer *iss = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_jwks");
  issuer_srv srv = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};
  char path[512];
  snprintf(path, sizeof path, "%s/jwks.json", dir);
  srv.jwks_path = path;
  CHECK_INT(hin_issuer_write_jwks(iss, path, "RS256", 0), CEB_OK);
  rx_server *d = rx_start(serve, &srv);
  CHECK(d != NULL);
  if (!d) return ceb_test_done("test_http_in_jwks");
  int port = rx_port(d);
  char url_entry[128];
  snprintf(url_entry, sizeof url_entry,
           "oauth2.jwks_url=http://127.0.0.1:%d/certs", port);
  const char *const cfg[] = {url_entry, "oauth2.audience=cebridge",
                             "oauth2.jwks_min_refresh=10s",
                             /* the refreshes here are waited for */
                             "oauth2.jwks_wait=10s", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    CHECK_INT((int)rx_count(d), 1); /* loaded at start */
    /* the start-up load counts against the refresh rate limit */
    int64_t t0 = (int64_t)time(NULL) * 1000;
    set_clock(e, t0);
    char *claims = hin_claims("partner-a", 600, -10, NULL, NULL);
    char *tok1 = hin_token(iss, "RS256", "rsa1", claims);
    char *tok2 = hin_token(iss, "RS256", "rsa2", claims);
    CHECK_INT(post(e, tok1), 202);
    CHECK_INT(post(e, tok2), 401);
    CHECK_INT((int)rx_count(d), 1);

    /* the issuer rotates rsa2 in; past min_refresh the unknown kid
     * refreshes */
    CHECK_INT(hin_issuer_write_jwks(iss, path, "RS256", 1), CEB_OK);
    t0 += 20000;
    set_clock(e, t0);
    CHECK_INT(post(e, tok2), 202);
    CHECK_INT((int)rx_count(d), 2);
    CHECK_INT(post(e, tok1), 202);
    CHECK_INT((int)rx_count(d), 2);
    /* unknown kids within min_refresh do not hit the issuer again */
    char *tok3 = hin_token(iss, "RS256", "nope", claims);
    CHECK_INT(post(e, tok3), 401);
    CHECK_INT(post(e, tok3), 401);
    CHECK_INT((int)rx_count(d), 2);
    /* after min_refresh one more fetch; it fails and the keys stay */
    set_clock(e, t0 + 11000);
    pthread_mutex_lock(&srv.lock);
    srv.fail = 1;
    pthread_mutex_unlock(&srv.lock);
    CHECK_INT(post(e, tok3), 401);
    CHECK_INT((int)rx_count(d), 3);
    CHECK_INT(post(e, tok1), 202);
    CHECK_INT(post(e, tok2), 202);
    CHECK_INT((int)rx_count(d), 3);
    free(tok1);
    free(tok2);
    free(tok3);
    free(claims);
    hin_stop(e);
  }
  rx_stop(d);
  test_client_claim(iss, path);
  /* clients.* needs authenticated clients */
  static const char *const bad[] = {"auth=none", "clients.a.types=nl.*", NULL};
  CHECK_INT(hin_init_status(bad), CEB_ECONFIG);
  free(dir);
  hin_issuer_free(iss);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_jwks");
}
