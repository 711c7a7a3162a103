/* Idempotency-Key on the intermediary (draft-ietf-httpapi-idempotency-key-
 * header, Edukoppeling annex B): required key, UUID v4 format, a new key is
 * processed once, a repeat replays the stored response byte for byte, a
 * repeat while the first is in flight is 409, another payload under the
 * same key is 422, keys are separated per client, a 503 is not stored (the
 * retry is processed) and a 4xx is. */
#include "hin_harness.h"

#include <curl/curl.h>
#include <stdlib.h>

static hin_issuer *issuer;
static char *tok_a, *tok_b;

#define EVENT(id)                                                              \
  "{\"specversion\":\"1.0\",\"id\":\"" id "\",\"source\":\"urn:test\","        \
  "\"type\":\"nl.edu.test\"}"

#define K1 "5b0f6c1e-8d2a-4c3b-9e4f-0a1b2c3d4e5f"
#define K2 "6c1f7d2e-9e3b-4d4c-8f50-1b2c3d4e5f60"
#define K3 "7d208e3f-af4c-4e5d-a061-2c3d4e5f6071"
#define K4 "8e319f40-b05d-4f6e-b172-3d4e5f607182"

static hin_resp post_key(hin_env *e, const char *tok, const char *key,
                         const char *body) {
  char authz[4096], idem[128];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok);
  snprintf(idem, sizeof idem, "Idempotency-Key: %s", key ? key : "");
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, key ? idem : NULL, NULL};
  return hin_post(e, hdrs, body);
}

static void set_mode(hin_env *e, ceb_fake_submit_mode m, int refuse) {
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = m;
  e->fake->refuse_status = refuse;
  pthread_mutex_unlock(&e->fake->lock);
}

static void test_key_format(hin_env *e) {
  hin_resp r = post_key(e, tok_a, NULL, EVENT("f1"));
  CHECK_INT(r.status, 400);
  CHECK(hin_json_str(&r, "code", "idempotency.key_missing"));
  hin_resp_free(&r);
  r = post_key(e, tok_a, "not-a-uuid", EVENT("f1"));
  CHECK_INT(r.status, 400);
  CHECK(hin_json_str(&r, "code", "idempotency.key_invalid"));
  hin_resp_free(&r);
  /* a version 1 UUID is not a UUID v4 */
  r = post_key(e, tok_a, "5b0f6c1e-8d2a-1c3b-9e4f-0a1b2c3d4e5f", EVENT("f1"));
  CHECK_INT(r.status, 400);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 0);
}

static void test_replay(hin_env *e) {
  char h[64];
  hin_resp first = post_key(e, tok_a, K1, EVENT("e1"));
  CHECK_INT(first.status, 202);
  CHECK(hin_header(&first, "Idempotent-Replayed", h, sizeof h) == NULL);
  CHECK_INT(ceb_fake_event_count(e->fake), 1);
  /* the structured-field string form of the same key */
  hin_resp again = post_key(e, tok_a, "\"" K1 "\"", EVENT("e1"));
  CHECK_INT(again.status, 202);
  CHECK(again.len == first.len &&
        memcmp(again.body, first.body, first.len) == 0);
  CHECK_STR(hin_header(&again, "Idempotent-Replayed", h, sizeof h), "true");
  CHECK_STR(hin_header(&again, "Content-Type", h, sizeof h),
            "application/json");
  CHECK_INT(ceb_fake_event_count(e->fake), 1); /* not submitted again */
  hin_resp_free(&again);
  hin_resp_free(&first);

  hin_resp r = post_key(e, tok_a, K1, EVENT("e2"));
  CHECK_INT(r.status, 422);
  CHECK(hin_json_str(&r, "code", "idempotency.mismatch"));
  hin_resp_free(&r);

  /* the same key from another client is another key */
  r = post_key(e, tok_b, K1, EVENT("e2"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 2);
  char c[32];
  ceb_fake_event_client(e->fake, 1, c, sizeof c);
  CHECK_STR(c, "partner-b");
}

typedef struct count_arg {
  ceb_fake_host *f;
  size_t n;
} count_arg;

static int events_at_least(void *arg) {
  count_arg *c = arg;
  return ceb_fake_event_count(c->f) >= c->n;
}

static void test_in_flight(hin_env *e) {
  set_mode(e, CEB_FAKE_COMMIT_HOLD, 0);
  size_t before = ceb_fake_event_count(e->fake);
  char authz[4096];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok_a);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, "Idempotency-Key: " K2, NULL};
  hin_async *a = hin_post_async(e, hdrs, EVENT("h1"));
  count_arg c = {e->fake, before + 1};
  CHECK(ceb_test_wait(events_at_least, &c, 5000));
  hin_resp r = post_key(e, tok_a, K2, EVENT("h1"));
  CHECK_INT(r.status, 409);
  CHECK(hin_json_str(&r, "code", "idempotency.in_flight"));
  hin_resp_free(&r);
  ceb_fake_commit(e->fake, CEB_OK);
  CHECK(hin_async_wait(a, 5000));
  hin_resp first;
  hin_async_free(a, &first);
  CHECK_INT(first.status, 202);
  set_mode(e, CEB_FAKE_COMMIT_NOW, 0);
  r = post_key(e, tok_a, K2, EVENT("h1"));
  CHECK_INT(r.status, 202);
  CHECK(r.len == first.len && memcmp(r.body, first.body, r.len) == 0);
  hin_resp_free(&r);
  hin_resp_free(&first);
  CHECK_INT(ceb_fake_event_count(e->fake), before + 1);
}

static void test_stored_statuses(hin_env *e) {
  /* 503 (backpressure) is not stored: the retry is processed */
  set_mode(e, CEB_FAKE_REFUSE, CEB_EBUSY);
  hin_resp r = post_key(e, tok_a, K3, EVENT("b1"));
  CHECK_INT(r.status, 503);
  hin_resp_free(&r);
  set_mode(e, CEB_FAKE_COMMIT_NOW, 0);
  size_t before = ceb_fake_event_count(e->fake);
  r = post_key(e, tok_a, K3, EVENT("b1"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before + 1);

  /* a 400 is stored and replayed */
  char h[32];
  hin_resp bad = post_key(e, tok_a, K4, "{\"specversion\":");
  CHECK_INT(bad.status, 400);
  r = post_key(e, tok_a, K4, "{\"specversion\":");
  CHECK_INT(r.status, 400);
  CHECK_STR(hin_header(&r, "Idempotent-Replayed", h, sizeof h), "true");
  CHECK(r.len == bad.len && memcmp(r.body, bad.body, r.len) == 0);
  hin_resp_free(&r);
  hin_resp_free(&bad);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  issuer = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_idem");
  char jwks[512], jwks_entry[600];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(jwks_entry, sizeof jwks_entry, "oauth2.jwks_file=%s", jwks);
  CHECK_INT(hin_issuer_write_jwks(issuer, jwks, NULL, 0), CEB_OK);
  char *ca = hin_claims("partner-a", 600, -10, NULL, NULL);
  char *cb = hin_claims("partner-b", 600, -10, NULL, NULL);
  tok_a = hin_token(issuer, "RS256", "rsa1", ca);
  tok_b = hin_token(issuer, "ES256", "ec1", cb);
  const char *const cfg[] = {jwks_entry, "oauth2.audience=cebridge",
                             "idempotency=required", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    test_key_format(e);
    test_replay(e);
    test_in_flight(e);
    test_stored_statuses(e);
    hin_stop(e);
  }
  free(ca);
  free(cb);
  free(tok_a);
  free(tok_b);
  free(dir);
  hin_issuer_free(issuer);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_idem");
}
