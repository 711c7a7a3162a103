/* Bearer token verification in isolation: the claim rules (exp, nbf with
 * leeway, iss, aud string/array, scope/scp, client claim), header rules
 * (duplicate members, crit, non-string alg/kid), malformed tokens, and every
 * single-character mutation of a valid token being refused. */
#include <stdlib.h>
#include <time.h>

#include "hin_harness.h"
#include "http_in_util.h"
#include "http_jwks.h"
#include "http_jws.h"
#include "http_jwt.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

static hin_issuer *iss;
static http_jwks *keys;
static const char *const scopes[] = {"events.write"};
static http_jwt_rules rules = {
    "https://idp.test", "cebridge", scopes, 1, 60000, NULL};

static int verify(const char *tok, http_jwt_result *res) {
  return http_jwt_verify(keys, &rules, tok, (int64_t)time(NULL) * 1000, res);
}

/* Signs a claims object given as JSON text with rsa1 (RS256). */
static char *signed_claims(const char *fmt, long a, long b) {
  char claims[512];
  snprintf(claims, sizeof claims, fmt, a, b);
  return hin_token(iss, "RS256", "rsa1", claims);
}

static void expect(const char *tok, int want, const char *reason) {
  http_jwt_result res;
  int st = verify(tok, &res);
  CHECK_MSG(st == want, "status %d want %d (%s)", st, want,
            st ? res.reason : "ok");
  if (reason && st != CEB_OK) CHECK_STR(res.reason, reason);
}

static void test_claims(void) {
  long now = (long)time(NULL);
  const char *base = "{\"iss\":\"https://idp.test\",\"aud\":%s,"
                     "\"exp\":%%ld,\"nbf\":%%ld,\"client_id\":\"c1\","
                     "\"scope\":\"a events.write b\"}";
  char fmt[512];
  snprintf(fmt, sizeof fmt, base, "[\"x\",\"cebridge\"]");
  char *t = signed_claims(fmt, now + 60, now - 10);
  http_jwt_result res;
  CHECK_INT(verify(t, &res), CEB_OK);
  CHECK_STR(res.client, "c1");
  free(t);
  snprintf(fmt, sizeof fmt, base, "[\"x\",\"y\"]");
  t = signed_claims(fmt, now + 60, now - 10);
  expect(t, CEB_EAUTH, "audience");
  free(t);
  snprintf(fmt, sizeof fmt, base, "\"cebridge\"");
  /* nbf within the leeway passes, beyond it fails */
  t = signed_claims(fmt, now + 600, now + 30);
  expect(t, CEB_OK, NULL);
  free(t);
  t = signed_claims(fmt, now + 600, now + 120);
  expect(t, CEB_EAUTH, "not_yet_valid");
  free(t);
  t = signed_claims(fmt, now - 120, now - 600);
  expect(t, CEB_EAUTH, "expired");
  free(t);

  t = signed_claims("{\"aud\":\"cebridge\",\"iss\":\"https://idp.test\","
                    "\"exp\":\"%ld\",\"x\":%ld}",
                    now + 60, 0);
  expect(t, CEB_EAUTH, "exp");
  free(t);
  t = signed_claims("{\"aud\":\"cebridge\",\"iss\":\"https://evil\","
                    "\"exp\":%ld,\"x\":%ld,\"client_id\":\"c\","
                    "\"scope\":\"events.write\"}",
                    now + 60, 0);
  expect(t, CEB_EAUTH, "issuer");
  free(t);
  /* scp as an array satisfies the scope; no client claim fails */
  t = signed_claims("{\"aud\":\"cebridge\",\"iss\":\"https://idp.test\","
                    "\"exp\":%ld,\"x\":%ld,\"sub\":\"s1\","
                    "\"scp\":[\"events.write\"]}",
                    now + 60, 0);
  CHECK_INT(verify(t, &res), CEB_OK);
  CHECK_STR(res.client, "s1");
  free(t);
  t = signed_claims("{\"aud\":\"cebridge\",\"iss\":\"https://idp.test\","
                    "\"exp\":%ld,\"x\":%ld,\"scope\":\"events.write\"}",
                    now + 60, 0);
  expect(t, CEB_EAUTH, "client");
  free(t);
  /* "events.writer" is not "events.write" */
  t = signed_claims("{\"aud\":\"cebridge\",\"iss\":\"https://idp.test\","
                    "\"exp\":%ld,\"x\":%ld,\"client_id\":\"c\","
                    "\"scope\":\"events.writer\"}",
                    now + 60, 0);
  CHECK_INT(verify(t, &res), CEB_EFORBIDDEN);
  CHECK_STR(res.oauth_error, "insufficient_scope");
  free(t);
}

/* header.payload.signature with a hand-made header over a valid token's
 * payload and signature. */
static char *with_header(const char *tok, const char *header_json) {
  char *h = http_b64url_encode(header_json, strlen(header_json));
  const char *rest = strchr(tok, '.');
  size_t n = strlen(h) + strlen(rest) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%s%s", h, rest);
  free(h);
  return out;
}

static void test_headers_and_garbage(void) {
  long now = (long)time(NULL);
  char *good = signed_claims(
      "{\"aud\":\"cebridge\",\"iss\":\"https://idp.test\",\"exp\":%ld,"
      "\"x\":%ld,\"client_id\":\"c\",\"scope\":\"events.write\"}",
      now + 60, 0);
  expect(good, CEB_OK, NULL);
  static const struct {
    const char *header, *reason;
  } hs[] = {
      {"{\"alg\":\"RS256\",\"kid\":\"rsa1\",\"alg\":\"none\"}", "malformed"},
      {"{\"alg\":\"RS256\",\"kid\":\"rsa1\",\"crit\":[\"exp\"]}", "crit"},
      {"{\"alg\":256,\"kid\":\"rsa1\"}", "alg_none"},
      {"{\"alg\":\"RS256\",\"kid\":{\"a\":1}}", "kid_missing"},
      {"{\"alg\":\"NONE\",\"kid\":\"rsa1\"}", "alg_none"},
      {"{\"alg\":\"RS384\",\"kid\":\"rsa1\"}", "alg_mismatch"},
      {"{\"alg\":\"ES256\",\"kid\":\"rsa1\"}", "alg_mismatch"},
      {"[\"RS256\"]", "malformed"},
  };
  for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) {
    char *t = with_header(good, hs[i].header);
    expect(t, CEB_EAUTH, hs[i].reason);
    free(t);
  }
  static const char *const junk[] = {
      "",        ".",        "..",          "...",      "a.b",
      "a.b.c.d", "!!.??.##", "eyJ.eyJ.sig", "e30.e30.", "e30.e30.AAAA",
  };
  for (size_t i = 0; i < sizeof junk / sizeof *junk; i++)
    expect(junk[i], CEB_EAUTH, NULL);
  char *huge = malloc(20000);
  memset(huge, 'A', 19999);
  huge[19999] = '\0';
  huge[100] = huge[200] = '.';
  expect(huge, CEB_EAUTH, "malformed");
  free(huge);

  /* every single-character change of the token is refused (the signature's
   * last character may only carry padding bits, so it is left out) */
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t n = strlen(good);
  char *t = strdup(good);
  int accepted = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    char orig = t[i];
    if (orig == '.') continue;
    t[i] = alphabet[(strchr(alphabet, orig) - alphabet + 17) % 64];
    http_jwt_result res;
    if (verify(t, &res) == CEB_OK) {
      accepted++;
      fprintf(stderr, "mutation at %zu accepted\n", i);
    }
    t[i] = orig;
  }
  CHECK_INT(accepted, 0);
  free(t);
  free(good);
}

/* Every single-character change of tok is refused; returns how many were
 * accepted (the signature's last character may only carry padding bits,
 * so it is left out). */
static int mutations_accepted(const char *tok) {
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t n = strlen(tok);
  char *t = strdup(tok);
  int accepted = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    char orig = t[i];
    if (orig == '.') continue;
    t[i] = alphabet[(strchr(alphabet, orig) - alphabet + 17) % 64];
    http_jwt_result res;
    if (verify(t, &res) == CEB_OK) {
      accepted++;
      fprintf(stderr, "mutation at %zu accepted\n", i);
    }
    t[i] = orig;
  }
  free(t);
  return accepted;
}

/* RFC 9068 access tokens (typ at+jwt) are accepted like JWTs, with every
 * algorithm; other typ values are refused as such, not as a bad
 * signature; a tampered access token is refused. */
static void test_typ(void) {
  char *claims = hin_claims("c-at", 300, -10, NULL, "events.write");
  static const char *const algs[][2] = {
      {"RS256", "rsa1"}, {"ES256", "ec1"}, {"PS256", "ps1"}};
  static const char *const good[] = {NULL,
                                     "JWT",
                                     "jwt",
                                     "at+jwt",
                                     "AT+JWT",
                                     "application/at+jwt",
                                     "Application/AT+JWT",
                                     "application/jwt"};
  for (size_t a = 0; a < 3; a++) {
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
      char *t = hin_token_typ(iss, algs[a][0], algs[a][1], good[i], claims);
      http_jwt_result res;
      int st = verify(t, &res);
      CHECK_MSG(st == CEB_OK, "%s typ %s: %s", algs[a][0],
                good[i] ? good[i] : "(none)", st ? res.reason : "ok");
      if (st == CEB_OK) CHECK_STR(res.client, "c-at");
      free(t);
    }
  }
  static const char *const bad[] = {
      "foo", "JOSE",        "at+jwtx", "text/at+jwt", "application/foo",
      "",    "application/"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *t = hin_token_typ(iss, "RS256", "rsa1", bad[i], claims);
    http_jwt_result res;
    CHECK_INT(verify(t, &res), CEB_EAUTH);
    CHECK_STR(res.reason, "typ");
    CHECK(strstr(res.detail, "typ") != NULL);
    free(t);
  }
  /* typ must be a string */
  char *t = hin_token_typ(iss, "RS256", "rsa1", "at+jwt", claims);
  char *numeric = with_header(t, "{\"alg\":\"RS256\",\"kid\":\"rsa1\","
                                 "\"typ\":9068}");
  expect(numeric, CEB_EAUTH, "typ");
  free(numeric);
  /* at+jwt with the header of a JWT: the signature covers the header */
  char *swapped = with_header(t, "{\"alg\":\"RS256\",\"typ\":\"JWT\","
                                 "\"kid\":\"rsa1\"}");
  expect(swapped, CEB_EAUTH, "signature");
  free(swapped);
  CHECK_INT(mutations_accepted(t), 0);
  free(t);
  t = hin_token_typ(iss, "ES256", "ec1", "at+jwt", claims);
  CHECK_INT(mutations_accepted(t), 0);
  free(t);
  /* an ES256 token with a signature of the wrong length */
  t = hin_token_typ(iss, "ES256", "ec1", "at+jwt", claims);
  t[strlen(t) - 4] = '\0';
  expect(t, CEB_EAUTH, "signature");
  free(t);
  free(claims);
}

/* RS256 over "hdr.claims" with a fresh RSA key of `bits`: 1 when
 * http_jws_verify accepts the (valid) signature. */
static int rsa_accepted(unsigned bits) {
  static const char input[] = "eyJhbGciOiJSUzI1NiJ9.e30";
  EVP_PKEY *k = EVP_RSA_gen(bits);
  CHECK(k != NULL);
  if (!k) return -1;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  unsigned char sig[512];
  size_t sig_len = sizeof sig;
  CHECK(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) == 1 &&
        EVP_DigestSign(md, sig, &sig_len, (const unsigned char *)input,
                       sizeof input - 1) == 1);
  EVP_MD_CTX_free(md);
  BIO *bio = BIO_new(BIO_s_mem());
  char *pem = NULL;
  CHECK(PEM_write_bio_PUBKEY(bio, k) == 1);
  long n = BIO_get_mem_data(bio, &pem);
  char *pem0 = strndup(pem, (size_t)n);
  char *sig_b64 = http_b64url_encode(sig, sig_len);
  int ok = http_jws_verify(pem0, HTTP_JWK_RS256, input, sizeof input - 1,
                           sig_b64, strlen(sig_b64));
  free(sig_b64);
  free(pem0);
  BIO_free(bio);
  EVP_PKEY_free(k);
  return ok;
}

/* RFC 7518 3.3: RSA keys below 2048 bits are not used, whatever the JWKS
 * serves (a 1024-bit signature verified before). */
static void test_rsa_key_size(void) {
  CHECK_INT(rsa_accepted(2048), 1);
  CHECK_INT(rsa_accepted(1024), 0);
  CHECK_INT(rsa_accepted(2047), 0);
}

int main(void) {
  iss = hin_issuer_new();
  char *dir = ceb_test_tmpdir("http_in_jwt");
  char path[512];
  snprintf(path, sizeof path, "%s/jwks.json", dir);
  CHECK_INT(hin_issuer_write_jwks(iss, path, "RS256", 0), CEB_OK);
  keys = http_jwks_new(NULL, path, 3600000, 500, NULL, NULL);
  CHECK_INT(http_jwks_refresh(keys, 1), CEB_OK);
  test_claims();
  test_headers_and_garbage();
  test_typ();
  test_rsa_key_size();
  http_jwks_free(keys);
  hin_issuer_free(iss);
  free(dir);
  return ceb_test_done("unit_http_in_jwt");
}
