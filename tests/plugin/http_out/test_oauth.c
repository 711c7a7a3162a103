/* OAuth2 client credentials in the webhook sink: client_secret_basic and
 * private_key_jwt (RS256 and ES256 assertions verified by the token
 * endpoint with libjwt), one token fetch reused across deliveries, expiry
 * with the margin on an injected clock, a refresh on 401 followed by
 * success, a second 401 going to the DLQ, and a failing token endpoint. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_rx.h"
#include "sink_fixture.h"

typedef struct idp {
  pthread_mutex_t lock;
  int issued;       /* tokens issued: tok-1, tok-2, ... */
  int revoked_upto; /* tokens tok-1..tok-N are refused by the hook */
  int always_401;
  int refuse_token; /* token endpoint answers 400 invalid_client */
  int expires_in;
  /* what the token endpoint saw */
  int form_ok, basic_ok, assertion_ok;
  char expect_basic[256];
  char token_url[128];
  const char *pubkey_pem;
  jwt_alg_t expect_alg;
} idp;

/* Value of name in an x-www-form-urlencoded body (malloc'd) or NULL. */
static char *form_get(const char *body, const char *name) {
  size_t n = strlen(name);
  for (const char *p = body; p && *p;) {
    const char *end = strchr(p, '&');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
      int outlen = 0;
      char *v =
          curl_easy_unescape(NULL, p + n + 1, (int)(len - n - 1), &outlen);
      char *copy = strdup(v);
      curl_free(v);
      for (char *c = copy; *c; c++)
        if (*c == '+') *c = ' ';
      return copy;
    }
    p = end ? end + 1 : NULL;
  }
  return NULL;
}

static int check_assertion(idp *s, const char *assertion) {
  jwt_t *jwt = NULL;
  int ok = jwt_decode(&jwt, assertion, (const unsigned char *)s->pubkey_pem,
                      (int)strlen(s->pubkey_pem)) == 0;
  if (ok) {
    const char *iss = jwt_get_grant(jwt, "iss");
    const char *sub = jwt_get_grant(jwt, "sub");
    const char *aud = jwt_get_grant(jwt, "aud");
    const char *kid = jwt_get_header(jwt, "kid");
    long iat = jwt_get_grant_int(jwt, "iat");
    long exp = jwt_get_grant_int(jwt, "exp");
    ok = jwt_get_alg(jwt) == s->expect_alg && iss &&
         strcmp(iss, "bridge-jwt") == 0 && sub && strcmp(sub, iss) == 0 &&
         aud && strcmp(aud, s->token_url) == 0 && kid &&
         strcmp(kid, "key-2026") == 0 && jwt_get_grant(jwt, "jti") &&
         exp > iat && exp - iat <= 300;
  }
  jwt_free(jwt);
  return ok;
}

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)index;
  idp *s = arg;
  pthread_mutex_lock(&s->lock);
  if (strcmp(req->path, "/token") == 0) {
    char *grant = form_get(req->body, "grant_type");
    char *scope = form_get(req->body, "scope");
    char *aud = form_get(req->body, "audience");
    s->form_ok = grant && strcmp(grant, "client_credentials") == 0 && scope &&
                 strcmp(scope, "events:write edu") == 0 && aud &&
                 strcmp(aud, "partner-api") == 0;
    const char *auth = ceb_headers_get(&req->headers, "Authorization");
    s->basic_ok = auth && strcmp(auth, s->expect_basic) == 0;
    if (s->pubkey_pem) {
      char *type = form_get(req->body, "client_assertion_type");
      char *assertion = form_get(req->body, "client_assertion");
      char *cid = form_get(req->body, "client_id");
      s->assertion_ok =
          type &&
          strcmp(type,
                 "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") ==
              0 &&
          assertion && check_assertion(s, assertion) && cid &&
          strcmp(cid, "bridge-jwt") == 0 && !auth;
      free(type);
      free(assertion);
      free(cid);
    }
    free(grant);
    free(scope);
    free(aud);
    if (s->refuse_token) {
      resp->status = 400;
      resp->len = (size_t)snprintf(resp->body, sizeof(resp->body),
                                   "{\"error\":\"invalid_client\"}");
    } else {
      s->issued++;
      resp->len = (size_t)snprintf(
          resp->body, sizeof(resp->body),
          "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\","
          "\"expires_in\":%d}",
          s->issued, s->expires_in);
    }
    ceb_headers_add(&resp->headers, "Content-Type", "application/json", 16);
  } else {
    const char *auth = ceb_headers_get(&req->headers, "Authorization");
    int n = auth && strncmp(auth, "Bearer tok-", 11) == 0 ? atoi(auth + 11) : 0;
    resp->status = n > 0 && n > s->revoked_upto && !s->always_401 ? 200 : 401;
  }
  pthread_mutex_unlock(&s->lock);
}

static size_t count_path(rx_server *rx, const char *path) {
  return rx_count_path(rx, path);
}

static void set_clock(sink_fx *fx, int64_t ms) {
  pthread_mutex_lock(&fx->fake->lock);
  fx->fake->clock_ms = ms;
  pthread_mutex_unlock(&fx->fake->lock);
}

static void test_client_secret(void) {
  idp s = {.expires_in = 120};
  pthread_mutex_init(&s.lock, NULL);
  /* RFC 6749 2.3.1: id and secret form-encoded, then Basic. */
  snprintf(
      s.expect_basic, sizeof(s.expect_basic), "Basic %s",
      "YnJpZGdlLTE6czNjciUzQXQlMjZ4KyUyMQ=="); /* bridge-1:s3cr%3At%26x+%21 */
  rx_server *rx = rx_start(respond, &s);
  char hook[128], token[128];
  fx_url(hook, sizeof(hook), rx_port(rx), "/hook");
  fx_url(token, sizeof(token), rx_port(rx), "/token");
  const char *kv[] = {"url",
                      hook,
                      "allow_insecure_http",
                      "true",
                      "oauth2.token_url",
                      token,
                      "oauth2.client_id",
                      "bridge-1",
                      "oauth2.client_secret",
                      "s3cr:t&x !",
                      "oauth2.scope",
                      "events:write edu",
                      "oauth2.audience",
                      "partner-api",
                      "oauth2.refresh_margin",
                      "60s",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  int64_t t0 = 1800000000000LL;
  set_clock(&fx, t0);
  ceb_event *ev = fx_event("evt-a", "{}");
  /* Three at once share one token fetch. */
  for (int i = 0; i < 3; i++)
    fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 2, &st, 5000));
  for (size_t i = 0; i < 3; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, i, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
  }
  CHECK_INT(count_path(rx, "/token"), 1);
  CHECK_INT(count_path(rx, "/hook"), 3);
  CHECK(s.form_ok);
  CHECK(s.basic_ok);
  CHECK(ceb_metrics_get(fx.fake->metrics,
                        "cebridge_http_sink_token_fetches_total",
                        "result=\"ok\"") == 1.0);

  /* 30 s later the token (120 s, 60 s margin) is still used... */
  set_clock(&fx, t0 + 30000);
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 3, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(count_path(rx, "/token"), 1);
  /* ...61 s later it is refreshed before use. */
  set_clock(&fx, t0 + 61000);
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 4, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(count_path(rx, "/token"), 2);

  /* The partner revokes tok-2: 401, one refresh, the same request again. */
  pthread_mutex_lock(&s.lock);
  s.revoked_upto = 2;
  pthread_mutex_unlock(&s.lock);
  size_t hooks = count_path(rx, "/hook");
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 5, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(count_path(rx, "/token"), 3);
  CHECK_INT(count_path(rx, "/hook"), hooks + 2);
  const rx_request *last = rx_get(rx, rx_count(rx) - 1);
  CHECK(last && strcmp(ceb_headers_get(&last->headers, "Authorization"),
                       "Bearer tok-3") == 0);
  if (last) {
    const rx_request *prev = rx_get(rx, rx_count(rx) - 3);
    CHECK(prev && strcmp(prev->path, "/hook") == 0);
    if (prev)
      CHECK_STR(ceb_headers_get(&prev->headers, "Idempotency-Key"),
                ceb_headers_get(&last->headers, "Idempotency-Key"));
  }

  /* Refused even with a fresh token: only one refresh, then the DLQ. */
  pthread_mutex_lock(&s.lock);
  s.always_401 = 1;
  pthread_mutex_unlock(&s.lock);
  hooks = count_path(rx, "/hook");
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 6, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_STR(st.reason, "http.401");
  CHECK_INT(count_path(rx, "/hook"), hooks + 2);
  CHECK_INT(count_path(rx, "/token"), 4);
  fx_free(&fx);

  /* A token endpoint that refuses the client: deliveries retry later. */
  pthread_mutex_lock(&s.lock);
  s.refuse_token = 1;
  pthread_mutex_unlock(&s.lock);
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  hooks = count_path(rx, "/hook");
  fx_deliver(&fx, ev, 1, NULL);
  CHECK(fx_settle(&fx, 0, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "oauth2.token");
  CHECK_MSG(strstr(st.detail, "invalid_client") != NULL, "detail %s",
            st.detail);
  CHECK_INT(count_path(rx, "/hook"), hooks);
  CHECK(ceb_metrics_get(fx.fake->metrics,
                        "cebridge_http_sink_token_fetches_total",
                        "result=\"error\"") == 1.0);
  fx_free(&fx);
  ceb_event_unref(ev);
  rx_stop(rx);
  pthread_mutex_destroy(&s.lock);
}

/* Writes the private key to dir/name and returns the public key PEM. */
static char *write_key(EVP_PKEY *pkey, const char *path) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return NULL;
  PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
  fclose(f);
  BIO *bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, pkey);
  char *data = NULL;
  long n = BIO_get_mem_data(bio, &data);
  char *pem = strndup(data, (size_t)n);
  BIO_free(bio);
  return pem;
}

static void test_private_key_jwt(EVP_PKEY *pkey, jwt_alg_t alg,
                                 const char *tag) {
  char *dir = ceb_test_tmpdir(tag);
  char path[512];
  snprintf(path, sizeof(path), "%s/client.pem", dir);
  char *pub = write_key(pkey, path);
  idp s = {.expires_in = 3600, .pubkey_pem = pub, .expect_alg = alg};
  pthread_mutex_init(&s.lock, NULL);
  rx_server *rx = rx_start(respond, &s);
  char hook[128];
  fx_url(hook, sizeof(hook), rx_port(rx), "/hook");
  fx_url(s.token_url, sizeof(s.token_url), rx_port(rx), "/token");
  const char *kv[] = {"url",
                      hook,
                      "allow_insecure_http",
                      "true",
                      "oauth2.token_url",
                      s.token_url,
                      "oauth2.client_id",
                      "bridge-jwt",
                      "oauth2.private_key",
                      path,
                      "oauth2.key_id",
                      "key-2026",
                      "oauth2.scope",
                      "events:write edu",
                      "oauth2.audience",
                      "partner-api",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("evt-j", "{}");
  fx_deliver(&fx, ev, 1, NULL);
  fx_deliver(&fx, ev, 1, NULL);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 1, &st, 5000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK(ceb_fake_settle_get(fx.fake, 0, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(count_path(rx, "/token"), 1);
  CHECK_MSG(s.assertion_ok, "%s assertion not accepted", tag);
  CHECK(s.form_ok);
  fx_free(&fx);
  ceb_event_unref(ev);
  rx_stop(rx);
  pthread_mutex_destroy(&s.lock);
  remove(path);
  rmdir(dir);
  free(dir);
  free(pub);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test_client_secret();
  EVP_PKEY *rsa = EVP_RSA_gen(2048);
  EVP_PKEY *ec = EVP_EC_gen("P-256");
  CHECK(rsa && ec);
  if (rsa) test_private_key_jwt(rsa, JWT_ALG_RS256, "oauth-rs256");
  if (ec) test_private_key_jwt(ec, JWT_ALG_ES256, "oauth-es256");
  EVP_PKEY_free(rsa);
  EVP_PKEY_free(ec);
  curl_global_cleanup();
  return ceb_test_done("plugin_http_out_oauth");
}
