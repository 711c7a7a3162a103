/* OAuth2 on the intermediary: bearer JWTs verified against a JWKS file made
 * here with OpenSSL (RSA and EC keys), tokens signed with libjwt or by hand
 * for the malicious ones. Covers valid RS256/ES256/PS256 tokens, expiry,
 * audience, scope, an unknown kid picked up after the JWKS rotates, the
 * HS256-keyed-with-the-RSA-public-key attack, alg none, a missing kid, a
 * forged signature, and per-client type authorisation. */
#include "hin_harness.h"

#include <curl/curl.h>
#include <stdlib.h>

static hin_issuer *issuer;

#define EVENT(id, type)                                                        \
  "{\"specversion\":\"1.0\",\"id\":\"" id "\",\"source\":\"urn:test\","        \
  "\"type\":\"" type "\"}"

/* POSTs one structured event with the token; returns the response. */
static hin_resp post_with(hin_env *e, const char *token, const char *body) {
  char authz[8192];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", token);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, NULL};
  return hin_post(e, hdrs, body);
}

/* Expects a 401/403 with `code` and a WWW-Authenticate naming oauth_error. */
static void expect_refused(hin_env *e, const char *token, long status,
                           const char *code, const char *oauth_error) {
  size_t before = ceb_fake_event_count(e->fake);
  hin_resp r = post_with(e, token, EVENT("r1", "nl.edu.x"));
  CHECK_INT(r.status, status);
  CHECK(hin_json_str(&r, "code", code));
  char h[512];
  const char *www = hin_header(&r, "WWW-Authenticate", h, sizeof h);
  CHECK_MSG(www && strncmp(www, "Bearer", 6) == 0 &&
                (!oauth_error || strstr(www, oauth_error)),
            "WWW-Authenticate: %s", www ? www : "(none)");
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

static void accepted(hin_env *e, const char *token, const char *client) {
  size_t before = ceb_fake_event_count(e->fake);
  hin_resp r = post_with(e, token, EVENT("ok", "nl.edu.inschrijving"));
  CHECK_MSG(r.status == 202, "status %ld body %s", r.status, r.body);
  hin_resp_free(&r);
  char c[64];
  ceb_fake_event_client(e->fake, before, c, sizeof c);
  CHECK_STR(c, client);
}

static void test_tokens(hin_env *e, const char *jwks_path) {
  char *claims = hin_claims("partner-a", 300, -10, NULL, "events.write");
  char *tok = hin_token(issuer, "RS256", "rsa1", claims);
  accepted(e, tok, "partner-a");
  free(tok);
  tok = hin_token(issuer, "ES256", "ec1", claims);
  accepted(e, tok, "partner-a");
  free(tok);
  tok = hin_token(issuer, "PS256", "ps1", claims);
  accepted(e, tok, "partner-a");
  free(tok);

  /* no token at all */
  static const char *const none[] = {
      "Content-Type: application/cloudevents+json", NULL};
  hin_resp r = hin_post(e, none, EVENT("n", "nl.edu.x"));
  CHECK_INT(r.status, 401);
  CHECK(hin_json_str(&r, "code", "auth.missing"));
  hin_resp_free(&r);

  /* a forged signature: the last character of the RS256 signature flipped */
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  size_t n = strlen(tok);
  tok[n - 2] = tok[n - 2] == 'A' ? 'B' : 'A';
  expect_refused(e, tok, 401, "auth.signature", "invalid_token");
  free(tok);

  /* the attack: HS256 with the RSA public key PEM as the HMAC secret */
  tok = hin_token(issuer, "HS256", "rsa1", claims);
  expect_refused(e, tok, 401, "auth.alg_mismatch", "invalid_token");
  free(tok);
  /* an RS256 token presented under a key pinned to PS256 */
  tok = hin_token(issuer, "RS256", "ps1", claims);
  expect_refused(e, tok, 401, "auth.alg_mismatch", "invalid_token");
  free(tok);
  tok = hin_token(issuer, "none", "rsa1", claims);
  expect_refused(e, tok, 401, "auth.alg_none", "invalid_token");
  free(tok);
  tok = hin_token(issuer, "RS256", NULL, claims);
  expect_refused(e, tok, 401, "auth.kid_missing", "invalid_token");
  free(tok);
  free(claims);

  claims = hin_claims("partner-a", -3600, -7200, NULL, "events.write");
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  expect_refused(e, tok, 401, "auth.expired", "invalid_token");
  free(tok);
  free(claims);
  /* within the leeway (60s) an expired token still passes */
  claims = hin_claims("partner-a", -30, -7200, NULL, "events.write");
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  accepted(e, tok, "partner-a");
  free(tok);
  free(claims);
  claims = hin_claims("partner-a", 600, 300, NULL, "events.write");
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  expect_refused(e, tok, 401, "auth.not_yet_valid", "invalid_token");
  free(tok);
  free(claims);
  claims = hin_claims("partner-a", 300, -10, "another-api", "events.write");
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  expect_refused(e, tok, 401, "auth.audience", "invalid_token");
  free(tok);
  free(claims);
  claims = hin_claims("partner-a", 300, -10, NULL, "events.read");
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  expect_refused(e, tok, 403, "auth.scope", "insufficient_scope");
  free(tok);
  free(claims);

  /* a kid the JWKS does not hold yet: refused, then accepted once the
   * issuer rotated it into the JWKS (refresh on unknown kid) */
  claims = hin_claims("partner-b", 300, -10, NULL, "events.write");
  tok = hin_token(issuer, "RS256", "rsa2", claims);
  expect_refused(e, tok, 401, "auth.kid_unknown", "invalid_token");
  CHECK_INT(hin_issuer_write_jwks(issuer, jwks_path, "RS256", 1), CEB_OK);
  size_t before = ceb_fake_event_count(e->fake);
  r = post_with(e, tok, EVENT("rot", "nl.duo.x"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  char c[64];
  ceb_fake_event_client(e->fake, before, c, sizeof c);
  CHECK_STR(c, "partner-b");
  free(tok);
  free(claims);

  CHECK(ceb_metrics_get(e->fake->metrics, "cebridge_http_auth_failures_total",
                        "reason=\"expired\"") == 1);
  CHECK(ceb_metrics_get(e->fake->metrics, "cebridge_http_auth_failures_total",
                        "reason=\"alg_none\"") == 1);
}

/* RFC 9068 access tokens through the intermediary: typ at+jwt and
 * application/at+jwt are accepted, another typ gets a 401 that says typ,
 * and a tampered access token is refused as a bad signature. */
static void test_access_token_typ(hin_env *e) {
  char *claims = hin_claims("partner-a", 300, -10, NULL, "events.write");
  char *tok = hin_token_typ(issuer, "RS256", "rsa1", "at+jwt", claims);
  accepted(e, tok, "partner-a");
  free(tok);
  tok = hin_token_typ(issuer, "ES256", "ec1", "application/at+jwt", claims);
  accepted(e, tok, "partner-a");
  free(tok);
  tok = hin_token_typ(issuer, "RS256", "rsa1", "foo", claims);
  expect_refused(e, tok, 401, "auth.typ", "invalid_token");
  free(tok);
  tok = hin_token_typ(issuer, "RS256", "rsa1", "at+jwt", claims);
  char *sig = strrchr(tok, '.') + 10; /* a signature byte */
  *sig = *sig == 'A' ? 'B' : 'A';
  expect_refused(e, tok, 401, "auth.signature", "invalid_token");
  free(tok);
  free(claims);
}

static void test_types(hin_env *e) {
  char *claims = hin_claims("partner-a", 300, -10, NULL, "events.write");
  char *tok = hin_token(issuer, "RS256", "rsa1", claims);
  /* partner-a may send nl.edu.*, not nl.duo.x */
  hin_resp r = post_with(e, tok, EVENT("t1", "nl.duo.x"));
  CHECK_INT(r.status, 403);
  CHECK(hin_json_str(&r, "code", "type.not_allowed"));
  hin_resp_free(&r);
  char authz[4096];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok);
  const char *const batch[] = {
      "Content-Type: application/cloudevents-batch+json", authz, NULL};
  r = hin_post(e, batch,
               "[" EVENT("t2", "nl.edu.a") "," EVENT("t3", "nl.duo.x") "]");
  CHECK_INT(r.status, 403);
  CHECK_INT(hin_errors_count(&r), 1);
  CHECK_INT(hin_error_index(&r, 0), 1);
  hin_resp_free(&r);
  free(tok);
  free(claims);
  /* a client without a clients.<id>.types entry */
  claims = hin_claims("stranger", 300, -10, NULL, "events.write");
  tok = hin_token(issuer, "RS256", "rsa1", claims);
  r = post_with(e, tok, EVENT("t4", "nl.edu.a"));
  CHECK_INT(r.status, 403);
  CHECK(hin_json_str(&r, "code", "client.not_allowed"));
  hin_resp_free(&r);
  free(tok);
  free(claims);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  issuer = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_auth");
  char jwks[512], jwks_entry[600];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(jwks_entry, sizeof jwks_entry, "oauth2.jwks_file=%s", jwks);
  CHECK_INT(hin_issuer_write_jwks(issuer, jwks, "RS256", 0), CEB_OK);
  const char *const cfg[] = {jwks_entry,
                             "oauth2.issuer=https://idp.test",
                             "oauth2.audience=cebridge",
                             "oauth2.scope=events.write",
                             "oauth2.jwks_min_refresh=0s",
                             "clients.partner-a.types=nl.edu.*",
                             "clients.partner-b.types=nl.duo.x|nl.edu.y",
                             NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    test_tokens(e, jwks);
    test_types(e);
    test_access_token_typ(e);
    hin_stop(e);
  }
  /* oauth2 needs a key source and an audience */
  static const char *const no_jwks[] = {"oauth2.audience=cebridge", NULL};
  CHECK_INT(hin_init_status(no_jwks), CEB_ECONFIG);
  const char *const no_aud[] = {jwks_entry, NULL};
  CHECK_INT(hin_init_status(no_aud), CEB_ECONFIG);
  free(dir);
  hin_issuer_free(issuer);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_auth");
}
