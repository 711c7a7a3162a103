#include "hin_harness.h"

#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <jansson.h>
#include <jwt.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- instance ---- */

static int has_key(const char *const *entries, const char *key) {
  size_t n = strlen(key);
  for (size_t i = 0; entries && entries[i]; i++)
    if (strncmp(entries[i], key, n) == 0 && entries[i][n] == '=') return 1;
  return 0;
}

static void put(ceb_config *cfg, const char *entry) {
  const char *eq = strchr(entry, '=');
  char key[256];
  snprintf(key, sizeof key, "%.*s", (int)(eq - entry), entry);
  cebi_config_put(cfg, key, eq + 1, "test.conf", 1);
}

static int port_file_ready(void *arg) {
  hin_env *e = arg;
  char path[512];
  snprintf(path, sizeof path, "%s/port", e->dir);
  char *text = ceb_test_read_file(path, NULL);
  if (!text) return 0;
  e->port = atoi(text);
  free(text);
  return e->port > 0;
}

static hin_env *env_new(const char *const *entries) {
  hin_env *e = calloc(1, sizeof *e);
  e->dir = ceb_test_tmpdir("http_in");
  e->fake = ceb_fake_host_new("intermediary", CEB_ROLE_SOURCE);
  e->dl = dlopen(CEB_PLUGIN_DIR "/http.so", RTLD_NOW | RTLD_LOCAL);
  if (!e->dl) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return e;
  }
  ceb_plugin_query_fn q =
      (ceb_plugin_query_fn)dlsym(e->dl, CEB_PLUGIN_QUERY_SYMBOL);
  e->plugin = q ? q(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  e->cfg = cebi_config_new("intermediary");
  cebi_config_put(e->cfg, "plugin", "http", "test.conf", 1);
  if (!has_key(entries, "listen"))
    cebi_config_put(e->cfg, "listen", "127.0.0.1:0", "test.conf", 1);
  if (!has_key(entries, "port_file")) {
    char path[512];
    snprintf(path, sizeof path, "%s/port", e->dir);
    cebi_config_put(e->cfg, "port_file", path, "test.conf", 1);
  }
  for (size_t i = 0; entries && entries[i]; i++)
    put(e->cfg, entries[i]);
  if (e->plugin)
    cebi_config_set_spec(e->cfg, e->plugin->config_source,
                         ceb_spec_source_common);
  return e;
}

int hin_mapped;

static int env_init(hin_env *e) {
  if (!e->plugin) return CEB_EABI;
  ceb_instance_info info = {sizeof info, "intermediary", CEB_ROLE_SOURCE,
                            e->dir, hin_mapped};
  return e->plugin->init(&e->fake->host, &e->fake->inst, &info, e->cfg,
                         &e->state);
}

hin_env *hin_start(const char *const *entries, int *init_status) {
  hin_env *e = env_new(entries);
  int st = env_init(e);
  if (init_status) *init_status = st;
  if (st != CEB_OK) {
    fprintf(stderr, "init failed: %s\n", ceb_strerror(st));
    e->destroyed = 1;
    hin_stop(e);
    return NULL;
  }
  st = e->plugin->start(e->state);
  if (st != CEB_OK || !ceb_test_wait(port_file_ready, e, 5000)) {
    fprintf(stderr, "start failed: %s\n", ceb_strerror(st));
    hin_stop(e);
    return NULL;
  }
  snprintf(e->url, sizeof e->url, "%s://127.0.0.1:%d/events",
           has_key(entries, "tls.cert") ? "https" : "http", e->port);
  return e;
}

int hin_init_status(const char *const *entries) {
  hin_env *e = env_new(entries);
  int st = env_init(e);
  if (st != CEB_OK) e->destroyed = 1;
  hin_stop(e);
  return st;
}

void hin_stop(hin_env *e) {
  if (!e) return;
  if (!e->destroyed && e->plugin && e->state) e->plugin->destroy(e->state);
  ceb_fake_host_free(e->fake);
  cebi_config_free(e->cfg);
  if (e->dl) dlclose(e->dl);
  free(e->dir);
  free(e);
}

/* ---- HTTP client ---- */

typedef struct buf {
  char *data;
  size_t len;
} buf;

static size_t on_data(char *p, size_t size, size_t n, void *arg) {
  buf *b = arg;
  size_t k = size * n;
  b->data = realloc(b->data, b->len + k + 1);
  memcpy(b->data + b->len, p, k);
  b->len += k;
  b->data[b->len] = '\0';
  return k;
}

typedef struct upload {
  const char *data;
  size_t len, off;
} upload;

static size_t on_read(char *p, size_t size, size_t n, void *arg) {
  upload *u = arg;
  size_t k = size * n;
  if (k > u->len - u->off) k = u->len - u->off;
  if (k > 7000) k = 7000; /* several chunks */
  memcpy(p, u->data + u->off, k);
  u->off += k;
  return k;
}

typedef struct tls_opts {
  const char *ca, *cert, *key;
} tls_opts;

long hin_timeout_ms = 20000;

static hin_resp request(const char *url, const char *method,
                        const char *const *headers, const void *body,
                        size_t len, int chunked, const tls_opts *tls) {
  hin_resp r = {0};
  CURL *c = curl_easy_init();
  buf b = {0}, h = {0};
  struct curl_slist *hl = NULL;
  for (size_t i = 0; headers && headers[i]; i++)
    hl = curl_slist_append(hl, headers[i]);
  upload u = {body, len, 0};
  if (chunked) hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
  hl = curl_slist_append(hl, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, hin_timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (method && strcmp(method, "POST") != 0) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "GET") == 0) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (chunked) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &u);
  } else {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  }
  if (tls) {
    curl_easy_setopt(c, CURLOPT_CAINFO, tls->ca);
    if (tls->cert) {
      curl_easy_setopt(c, CURLOPT_SSLCERT, tls->cert);
      curl_easy_setopt(c, CURLOPT_SSLKEY, tls->key);
    }
  }
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(c);
  curl_slist_free_all(hl);
  r.body = b.data ? b.data : strdup("");
  r.len = b.len;
  r.headers = h.data ? h.data : strdup("");
  return r;
}

hin_resp hin_request(const char *url, const char *method,
                     const char *const *headers, const void *body, size_t len,
                     int chunked) {
  return request(url, method, headers, body, len, chunked, NULL);
}

hin_resp hin_post_tls(const char *url, const char *const *headers,
                      const char *body, const char *ca_path,
                      const char *client_cert, const char *client_key) {
  tls_opts t = {ca_path, client_cert, client_key};
  return request(url, "POST", headers, body, strlen(body), 0, &t);
}

hin_resp hin_post(hin_env *e, const char *const *headers, const char *body) {
  return hin_request(e->url, "POST", headers, body, body ? strlen(body) : 0, 0);
}

void hin_resp_free(hin_resp *r) {
  free(r->body);
  free(r->headers);
  memset(r, 0, sizeof *r);
}

const char *hin_header(const hin_resp *r, const char *name, char *out,
                       size_t n) {
  size_t nl = strlen(name);
  for (const char *p = r->headers; p && *p;) {
    const char *e = strstr(p, "\r\n");
    size_t ll = e ? (size_t)(e - p) : strlen(p);
    if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (*v == ' ')
        v++;
      snprintf(out, n, "%.*s", (int)(ll - (size_t)(v - p)), v);
      return out;
    }
    p = e ? e + 2 : p + ll;
  }
  return NULL;
}

int hin_json_str(const hin_resp *r, const char *name, const char *want) {
  json_t *j = json_loadb(r->body, r->len, 0, NULL);
  const char *v = json_string_value(json_object_get(j, name));
  int ok = v && strcmp(v, want) == 0;
  if (!ok)
    fprintf(stderr, "body member %s: want %s, body: %s\n", name, want, r->body);
  json_decref(j);
  return ok;
}

int hin_errors_count(const hin_resp *r) {
  json_t *j = json_loadb(r->body, r->len, 0, NULL);
  json_t *a = json_object_get(j, "errors");
  int n = json_is_array(a) ? (int)json_array_size(a) : -1;
  json_decref(j);
  return n;
}

int hin_error_index(const hin_resp *r, int i) {
  json_t *j = json_loadb(r->body, r->len, 0, NULL);
  json_t *el = json_array_get(json_object_get(j, "errors"), (size_t)i);
  json_t *idx = json_object_get(el, "index");
  int v = json_is_integer(idx) ? (int)json_integer_value(idx) : -1;
  json_decref(j);
  return v;
}

static void *async_main(void *arg) {
  hin_async *a = arg;
  a->start_ms = ceb_test_now_ms();
  a->resp = hin_request(a->url, "POST", (const char *const *)a->headers,
                        a->body, strlen(a->body), 0);
  a->elapsed_ms = ceb_test_now_ms() - a->start_ms;
  atomic_store(&a->done, 1);
  return NULL;
}

hin_async *hin_post_async(hin_env *e, const char *const *headers,
                          const char *body) {
  hin_async *a = calloc(1, sizeof *a);
  a->url = strdup(e->url);
  size_t n = 0;
  while (headers && headers[n])
    n++;
  a->headers = calloc(n + 1, sizeof *a->headers);
  for (size_t i = 0; i < n; i++)
    a->headers[i] = strdup(headers[i]);
  a->body = strdup(body);
  atomic_init(&a->done, 0);
  pthread_create(&a->thread, NULL, async_main, a);
  return a;
}

static int async_done(void *arg) {
  return atomic_load(&((hin_async *)arg)->done);
}

int hin_async_wait(hin_async *a, int64_t timeout_ms) {
  return ceb_test_wait(async_done, a, timeout_ms);
}

void hin_async_free(hin_async *a, hin_resp *out) {
  pthread_join(a->thread, NULL);
  if (out)
    *out = a->resp;
  else
    hin_resp_free(&a->resp);
  for (size_t i = 0; a->headers[i]; i++)
    free(a->headers[i]);
  free(a->headers);
  free(a->body);
  free(a->url);
  free(a);
}

/* ---- OAuth2 test issuer ---- */

static char *b64url(const unsigned char *d, size_t n) {
  char *std = ceb_base64_encode(d, n);
  size_t k = strlen(std), j = 0;
  char *out = malloc(k + 1);
  for (size_t i = 0; i < k && std[i] != '='; i++)
    out[j++] = std[i] == '+' ? '-' : std[i] == '/' ? '_' : std[i];
  out[j] = '\0';
  ceb_free(std);
  return out;
}

static char *bn_member(EVP_PKEY *k, const char *param, int pad) {
  BIGNUM *bn = NULL;
  EVP_PKEY_get_bn_param(k, param, &bn);
  int n = pad ? pad : BN_num_bytes(bn);
  unsigned char *bin = malloc((size_t)n);
  BN_bn2binpad(bn, bin, n);
  char *s = b64url(bin, (size_t)n);
  free(bin);
  BN_free(bn);
  return s;
}

static char *pem_of(EVP_PKEY *k, int private_key) {
  BIO *bio = BIO_new(BIO_s_mem());
  if (private_key)
    PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
  else
    PEM_write_bio_PUBKEY(bio, k);
  char *data;
  long n = BIO_get_mem_data(bio, &data);
  char *out = strndup(data, (size_t)n);
  BIO_free(bio);
  return out;
}

hin_issuer *hin_issuer_new(void) {
  hin_issuer *is = calloc(1, sizeof *is);
  is->rsa = EVP_RSA_gen(2048);
  is->rsa2 = EVP_RSA_gen(2048);
  is->ec = EVP_EC_gen("P-256");
  is->rsa_pub_pem = pem_of(is->rsa, 0);
  return is;
}

void hin_issuer_free(hin_issuer *is) {
  EVP_PKEY_free(is->rsa);
  EVP_PKEY_free(is->rsa2);
  EVP_PKEY_free(is->ec);
  free(is->rsa_pub_pem);
  free(is);
}

static json_t *rsa_jwk(EVP_PKEY *k, const char *kid, const char *alg) {
  char *n = bn_member(k, OSSL_PKEY_PARAM_RSA_N, 0);
  char *e = bn_member(k, OSSL_PKEY_PARAM_RSA_E, 0);
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kty", "RSA", "kid", kid,
                        "use", "sig", "n", n, "e", e);
  if (alg) json_object_set_new(j, "alg", json_string(alg));
  free(n);
  free(e);
  return j;
}

int hin_issuer_write_jwks(hin_issuer *is, const char *path, const char *rsa_alg,
                          int with_rsa2) {
  json_t *keys = json_array();
  json_array_append_new(keys, rsa_jwk(is->rsa, "rsa1", rsa_alg));
  char *x = bn_member(is->ec, OSSL_PKEY_PARAM_EC_PUB_X, 32);
  char *y = bn_member(is->ec, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
  json_array_append_new(keys, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kty",
                                        "EC", "kid", "ec1", "crv", "P-256",
                                        "alg", "ES256", "x", x, "y", y));
  free(x);
  free(y);
  json_array_append_new(keys, rsa_jwk(is->rsa, "ps1", "PS256"));
  if (with_rsa2)
    json_array_append_new(keys, rsa_jwk(is->rsa2, "rsa2", "RS256"));
  json_t *doc = json_pack("{s:o}", "keys", keys);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int rc = json_dump_file(doc, tmp, 0);
  json_decref(doc);
  return rc == 0 && rename(tmp, path) == 0 ? CEB_OK : CEB_EIO;
}

static char *manual_token(hin_issuer *is, const char *alg, const char *kid,
                          const char *typ, const char *claims) {
  json_t *h = json_pack("{s:s}", "alg", alg);
  if (typ) json_object_set_new(h, "typ", json_string(typ));
  if (kid) json_object_set_new(h, "kid", json_string(kid));
  char *htext = json_dumps(h, JSON_COMPACT);
  json_decref(h);
  char *h64 = b64url((unsigned char *)htext, strlen(htext));
  char *c64 = b64url((const unsigned char *)claims, strlen(claims));
  free(htext);
  size_t n = strlen(h64) + strlen(c64) + 2;
  char *input = malloc(n);
  snprintf(input, n, "%s.%s", h64, c64);
  free(h64);
  free(c64);
  unsigned char sig[512];
  size_t sig_len = 0;
  if (strcmp(alg, "HS256") == 0) {
    unsigned int l = 0;
    HMAC(EVP_sha256(), is->rsa_pub_pem, (int)strlen(is->rsa_pub_pem),
         (unsigned char *)input, strlen(input), sig, &l);
    sig_len = l;
  } else if (strcmp(alg, "PS256") == 0) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    sig_len = sizeof sig;
    EVP_DigestSignInit(md, &pctx, EVP_sha256(), NULL, is->rsa);
    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
    EVP_DigestSign(md, sig, &sig_len, (unsigned char *)input, strlen(input));
    EVP_MD_CTX_free(md);
  } else if (strcmp(alg, "RS256") == 0 || strcmp(alg, "ES256") == 0) {
    int ec = strcmp(alg, "ES256") == 0;
    EVP_PKEY *k = ec                                ? is->ec
                  : kid && strcmp(kid, "rsa2") == 0 ? is->rsa2
                                                    : is->rsa;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    sig_len = sizeof sig;
    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k);
    EVP_DigestSign(md, sig, &sig_len, (unsigned char *)input, strlen(input));
    EVP_MD_CTX_free(md);
    if (ec) { /* DER ECDSA-Sig-Value to the JWS r||s form */
      const unsigned char *p = sig;
      ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sig_len);
      BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, 32);
      BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + 32, 32);
      sig_len = 64;
      ECDSA_SIG_free(es);
    }
  }
  char *s64 = b64url(sig, sig_len);
  n = strlen(input) + strlen(s64) + 2;
  char *tok = malloc(n);
  snprintf(tok, n, "%s.%s", input, s64);
  free(input);
  free(s64);
  return tok;
}

char *hin_token(hin_issuer *is, const char *alg, const char *kid,
                const char *claims_json) {
  if (strcmp(alg, "RS256") != 0 && strcmp(alg, "ES256") != 0)
    return manual_token(is, alg, kid, "JWT", claims_json);
  EVP_PKEY *k = strcmp(alg, "ES256") == 0         ? is->ec
                : kid && strcmp(kid, "rsa2") == 0 ? is->rsa2
                                                  : is->rsa;
  char *pem = pem_of(k, 1);
  jwt_t *jwt = NULL;
  jwt_new(&jwt);
  jwt_add_grants_json(jwt, claims_json);
  if (kid) jwt_add_header(jwt, "kid", kid);
  jwt_set_alg(jwt, strcmp(alg, "ES256") == 0 ? JWT_ALG_ES256 : JWT_ALG_RS256,
              (unsigned char *)pem, (int)strlen(pem));
  char *tok = jwt_encode_str(jwt);
  jwt_free(jwt);
  free(pem);
  char *out = strdup(tok);
  free(tok);
  return out;
}

char *hin_token_typ(hin_issuer *is, const char *alg, const char *kid,
                    const char *typ, const char *claims_json) {
  return manual_token(is, alg, kid, typ, claims_json);
}

char *hin_claims(const char *client, long exp_in, long nbf_in, const char *aud,
                 const char *scope) {
  long now = (long)time(NULL);
  json_t *c =
      json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "iss", "https://idp.test",
                "aud", aud ? aud : "cebridge", "client_id", client, "exp",
                (json_int_t)(now + exp_in), "nbf", (json_int_t)(now + nbf_in),
                "iat", (json_int_t)now);
  if (scope) json_object_set_new(c, "scope", json_string(scope));
  char *s = json_dumps(c, JSON_COMPACT);
  json_decref(c);
  return s;
}
