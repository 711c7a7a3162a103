/* Limits and transport security of the intermediary: the per-client rate
 * limit (429 + Retry-After, on the fake host's injected clock), Standard
 * Webhooks signature verification on ingress (missing, valid, rotated
 * secret, forged, stale, replayed webhook-id), and TLS with and without
 * client certificates (certificates made here with OpenSSL). */
#include "hin_harness.h"

#include <curl/curl.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <time.h>

#define EVENT(id)                                                              \
  "{\"specversion\":\"1.0\",\"id\":\"" id "\",\"source\":\"urn:test\","        \
  "\"type\":\"nl.edu.test\"}"

static const char *const STRUCT_HDRS[] = {
    "Content-Type: application/cloudevents+json", NULL};

static void set_clock(hin_env *e, int64_t ms) {
  pthread_mutex_lock(&e->fake->lock);
  e->fake->clock_ms = ms;
  pthread_mutex_unlock(&e->fake->lock);
}

static void test_rate_limit(void) {
  static const char *const cfg[] = {"auth=none", "rate_limit=1/s",
                                    "rate_limit.burst=2", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  set_clock(e, 1700000000000);
  hin_resp r = hin_post(e, STRUCT_HDRS, EVENT("r1"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  r = hin_post(e, STRUCT_HDRS, EVENT("r2"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  r = hin_post(e, STRUCT_HDRS, EVENT("r3"));
  CHECK_INT(r.status, 429);
  CHECK(hin_json_str(&r, "code", "rate_limited"));
  char h[32];
  CHECK_STR(hin_header(&r, "Retry-After", h, sizeof h), "1");
  hin_resp_free(&r);
  /* one second later one token is back */
  set_clock(e, 1700000001000);
  r = hin_post(e, STRUCT_HDRS, EVENT("r4"));
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  r = hin_post(e, STRUCT_HDRS, EVENT("r5"));
  CHECK_INT(r.status, 429);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 3);
  /* the handshake advertises the rate per minute */
  static const char *const hs[] = {"WebHook-Request-Origin: a.example", NULL};
  hin_stop(e);
  static const char *const cfg2[] = {"auth=none", "rate_limit=2/s",
                                     "webhook.allowed_origins=*", NULL};
  e = hin_start(cfg2, NULL);
  CHECK(e != NULL);
  if (!e) return;
  r = hin_request(e->url, "OPTIONS", hs, NULL, 0, 0);
  CHECK_INT(r.status, 200);
  CHECK_STR(hin_header(&r, "WebHook-Allowed-Rate", h, sizeof h), "120");
  CHECK_STR(hin_header(&r, "WebHook-Allowed-Origin", h, sizeof h), "a.example");
  hin_resp_free(&r);
  hin_stop(e);
}

/* Standard Webhooks v1 signature computed independently of the plugin:
 * fills the three header lines of a signed request. */
typedef struct signed_hdrs {
  char id[160], ts[64], sig[160];
} signed_hdrs;

static void sign(signed_hdrs *h, const char *secret_b64, const char *id,
                 long ts, const char *body, int forge) {
  unsigned char *key = NULL;
  size_t key_len = 0;
  ceb_base64_decode(secret_b64, strlen(secret_b64), &key, &key_len);
  char msg[4096];
  snprintf(msg, sizeof msg, "%s.%ld.%s", id, ts, body);
  unsigned char mac[32];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), key, (int)key_len, (unsigned char *)msg, strlen(msg), mac,
       &mac_len);
  ceb_free(key);
  if (forge) mac[0] ^= 1;
  char *sig = ceb_base64_encode(mac, mac_len);
  snprintf(h->id, sizeof h->id, "webhook-id: %s", id);
  snprintf(h->ts, sizeof h->ts, "webhook-timestamp: %ld", ts);
  snprintf(h->sig, sizeof h->sig, "webhook-signature: v1,%s", sig);
  ceb_free(sig);
}

static hin_resp post_signed(hin_env *e, const char *secret_b64, const char *id,
                            long ts, const char *body, int forge) {
  signed_hdrs h;
  sign(&h, secret_b64, id, ts, body, forge);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              h.id, h.ts, h.sig, NULL};
  return hin_post(e, hdrs, body);
}

#define SECRET1 "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET2 "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODk="

static void test_webhook_signatures(void) {
  static const char *const cfg[] = {
      "auth=none", "webhook.secrets=whsec_" SECRET1 " whsec_" SECRET2,
      "webhook.tolerance=5m", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  long now = (long)time(NULL);
  hin_resp r = hin_post(e, STRUCT_HDRS, EVENT("w0"));
  CHECK_INT(r.status, 401);
  CHECK(hin_json_str(&r, "code", "webhook.signature_missing"));
  hin_resp_free(&r);
  r = post_signed(e, SECRET1, "msg_1", now, EVENT("w1"), 0);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  /* the second (rotated-in) secret is accepted too */
  r = post_signed(e, SECRET2, "msg_2", now, EVENT("w2"), 0);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  r = post_signed(e, SECRET1, "msg_3", now, EVENT("w3"), 1);
  CHECK_INT(r.status, 401);
  CHECK(hin_json_str(&r, "code", "webhook.signature_invalid"));
  hin_resp_free(&r);
  r = post_signed(e, SECRET1, "msg_4", now - 600, EVENT("w4"), 0);
  CHECK_INT(r.status, 401);
  CHECK(hin_json_str(&r, "code", "webhook.timestamp"));
  hin_resp_free(&r);
  /* a captured request replayed (freshly timestamped), or the sender's
   * retry after a lost 202: a duplicate, delivered, nothing submitted */
  r = post_signed(e, SECRET1, "msg_1", now + 1, EVENT("w1"), 0);
  CHECK_INT(r.status, 202);
  CHECK(r.body && strstr(r.body, "\"accepted\":0,\"duplicates\":1"));
  hin_resp_free(&r);
  /* a refused request's id is not burnt: its retry goes through */
  r = post_signed(e, SECRET1, "msg_3", now, EVENT("w3"), 0);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 3);
  hin_stop(e);
}

/* A verified webhook-id is burnt only once its request's events are durable:
 * the retry of a request that got 503 (refused at submit, or not durable
 * after it) is processed, not refused as a replay. */
static void test_webhook_id_after_failure(void) {
  static const char *const cfg[] = {"auth=none",
                                    "webhook.secrets=whsec_" SECRET1, NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  long now = (long)time(NULL);
  /* refused at submit (backpressure) */
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_REFUSE;
  e->fake->refuse_status = CEB_EBUSY;
  pthread_mutex_unlock(&e->fake->lock);
  hin_resp r = post_signed(e, SECRET1, "msg_f1", now, EVENT("f1"), 0);
  CHECK_INT(r.status, 503);
  hin_resp_free(&r);
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_COMMIT_NOW;
  pthread_mutex_unlock(&e->fake->lock);
  r = post_signed(e, SECRET1, "msg_f1", now + 1, EVENT("f1"), 0);
  CHECK_INT(r.status, 202);
  CHECK(r.body && strstr(r.body, "\"accepted\":1"));
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 1);
  /* submitted, then not durable */
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_COMMIT_HOLD;
  pthread_mutex_unlock(&e->fake->lock);
  signed_hdrs h;
  sign(&h, SECRET1, "msg_f2", now, EVENT("f2"), 0);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              h.id, h.ts, h.sig, NULL};
  hin_async *a = hin_post_async(e, hdrs, EVENT("f2"));
  CHECK(ceb_fake_wait_events(e->fake, 2, 10000));
  ceb_fake_commit(e->fake, CEB_EIO);
  CHECK(hin_async_wait(a, 10000));
  hin_async_free(a, &r);
  CHECK_INT(r.status, 503);
  CHECK(hin_json_str(&r, "code", "not_durable"));
  hin_resp_free(&r);
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_COMMIT_NOW;
  pthread_mutex_unlock(&e->fake->lock);
  r = post_signed(e, SECRET1, "msg_f2", now + 1, EVENT("f2"), 0);
  CHECK_INT(r.status, 202);
  CHECK(r.body && strstr(r.body, "\"accepted\":1"));
  hin_resp_free(&r);
  CHECK_INT(ceb_fake_event_count(e->fake), 3);
  hin_stop(e);
}

/* ---- TLS ---- */

static EVP_PKEY *ca_key;
static X509 *ca_cert;

static X509 *make_cert(EVP_PKEY *key, const char *cn, int is_ca,
                       const char *san) {
  X509 *x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), is_ca ? 1 : (long)time(NULL));
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME *name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)cn, -1, -1, 0);
  X509_set_issuer_name(x, is_ca ? name : X509_get_subject_name(ca_cert));
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, is_ca ? x : ca_cert, x, NULL, NULL, 0);
  X509_EXTENSION *ext =
      X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
                          is_ca ? "critical,CA:TRUE" : "CA:FALSE");
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  if (is_ca) {
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage,
                              "critical,keyCertSign,cRLSign");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (san) {
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x, is_ca ? key : ca_key, EVP_sha256());
  return x;
}

static void write_pem(const char *path, X509 *x, EVP_PKEY *k) {
  FILE *f = fopen(path, "w");
  if (x) PEM_write_X509(f, x);
  if (k) PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
  fclose(f);
}

static void test_tls(void) {
  char *dir = ceb_test_tmpdir("http_in_tls");
  char ca[512], crt[512], key[512], ccrt[512], ckey[512];
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(crt, sizeof crt, "%s/server.pem", dir);
  snprintf(key, sizeof key, "%s/server.key", dir);
  snprintf(ccrt, sizeof ccrt, "%s/client.pem", dir);
  snprintf(ckey, sizeof ckey, "%s/client.key", dir);
  ca_key = EVP_EC_gen("P-256");
  ca_cert = make_cert(ca_key, "cebridge test CA", 1, NULL);
  EVP_PKEY *skey = EVP_EC_gen("P-256"), *ckey_pk = EVP_EC_gen("P-256");
  X509 *scert = make_cert(skey, "127.0.0.1", 0, "IP:127.0.0.1");
  X509 *ccert = make_cert(ckey_pk, "partner-a", 0, NULL);
  write_pem(ca, ca_cert, NULL);
  write_pem(crt, scert, NULL);
  write_pem(key, NULL, skey);
  write_pem(ccrt, ccert, NULL);
  write_pem(ckey, NULL, ckey_pk);

  char e_crt[600], e_key[600], e_ca[600];
  snprintf(e_crt, sizeof e_crt, "tls.cert=%s", crt);
  snprintf(e_key, sizeof e_key, "tls.key=%s", key);
  snprintf(e_ca, sizeof e_ca, "tls.client_ca=%s", ca);
  const char *const cfg[] = {"auth=none", e_crt, e_key, NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    CHECK(strncmp(e->url, "https://", 8) == 0);
    hin_resp r = hin_post_tls(e->url, STRUCT_HDRS, EVENT("t1"), ca, NULL, NULL);
    CHECK_INT(r.status, 202);
    hin_resp_free(&r);
    /* plain HTTP to the TLS port does not get through */
    char url[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/events", e->port);
    r = hin_request(url, "POST", STRUCT_HDRS, EVENT("t2"), 10, 0);
    CHECK(r.status != 202);
    hin_resp_free(&r);
    CHECK_INT(ceb_fake_event_count(e->fake), 1);
    hin_stop(e);
  }
  const char *const mcfg[] = {"auth=none", e_crt, e_key, e_ca, NULL};
  e = hin_start(mcfg, NULL);
  CHECK(e != NULL);
  if (e) {
    hin_resp r = hin_post_tls(e->url, STRUCT_HDRS, EVENT("m1"), ca, NULL, NULL);
    CHECK_INT(r.status, 403);
    CHECK(hin_json_str(&r, "code", "tls.client_certificate"));
    hin_resp_free(&r);
    r = hin_post_tls(e->url, STRUCT_HDRS, EVENT("m2"), ca, ccrt, ckey);
    CHECK_INT(r.status, 202);
    hin_resp_free(&r);
    CHECK_INT(ceb_fake_event_count(e->fake), 1);
    hin_stop(e);
  }
  X509_free(scert);
  X509_free(ccert);
  X509_free(ca_cert);
  EVP_PKEY_free(skey);
  EVP_PKEY_free(ckey_pk);
  EVP_PKEY_free(ca_key);
  free(dir);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  test_rate_limit();
  test_webhook_signatures();
  test_webhook_id_after_failure();
  test_tls();
  curl_global_cleanup();
  return ceb_test_done("test_http_in_limits");
}
