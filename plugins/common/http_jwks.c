#include "http_jwks.h"

#include "http_body.h"

#include "http_in_util.h"

#include <ceb/ceb.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JWKS_MAX_BYTES (1024 * 1024)
#define JWKS_FETCH_TIMEOUT_MS 5000L

typedef struct jwk_key {
  char *kid;
  http_jwk_alg alg;
  char *pem;
} jwk_key;

typedef struct jwk_set {
  jwk_key *keys;
  size_t count;
} jwk_set;

/* A request waiting for a refresh (http_jwks_notify). */
typedef struct jwks_waiter {
  struct jwks_waiter *next;
  uint64_t gen;        /* woken once this many refreshes have finished */
  int64_t deadline_ns; /* CLOCK_MONOTONIC; or woken then */
  http_jwks_wake_fn cb;
  void *arg;
} jwks_waiter;

struct http_jwks {
  char *url, *file;
  int64_t min_refresh_ms;
  int64_t wait_ms;
  http_jwks_log_fn log;
  void *log_arg;
  pthread_mutex_t lock;    /* guards keys and everything below */
  pthread_mutex_t refresh; /* one refresh at a time; taken before lock */
  jwk_set keys;
  int64_t last_refresh_ms; /* host clock of the last refresh started; 0 */
  http_tls_client tls;     /* zero: the default policy */
  /* the refresher thread fetches when `want`; the timer thread wakes the
   * waiters whose deadline passed (the refresher may be inside a fetch) */
  pthread_cond_t cond;  /* want, stop, done changed */
  pthread_cond_t tcond; /* waiters or stop changed */
  pthread_t refresher, timer;
  int threads; /* both started */
  int want, running;
  atomic_int stop; /* read by the fetch's progress callback too */
  uint64_t done;   /* refreshes finished */
  jwks_waiter *waiters;
};

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec abs_of(int64_t ns) {
  return (struct timespec){(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
}

static void logf_(http_jwks *j, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(http_jwks *j, int error, const char *fmt, ...) {
  if (!j->log) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  j->log(j->log_arg, error, msg);
}

const char *http_jwk_alg_name(http_jwk_alg alg) {
  switch (alg) {
  case HTTP_JWK_RS256:
    return "RS256";
  case HTTP_JWK_PS256:
    return "PS256";
  case HTTP_JWK_ES256:
    return "ES256";
  }
  return "?";
}

static void set_free(jwk_set *s) {
  for (size_t i = 0; i < s->count; i++) {
    free(s->keys[i].kid);
    free(s->keys[i].pem);
  }
  free(s->keys);
  s->keys = NULL;
  s->count = 0;
}

/* Big-endian bytes of a base64url JWK member. */
static int member_bytes(json_t *jwk, const char *name, unsigned char **out,
                        size_t *len) {
  const char *v = json_string_value(json_object_get(jwk, name));
  if (!v || !*v) return CEB_EINVAL;
  return http_b64url_decode(v, strlen(v), out, len);
}

static char *pkey_to_pem(EVP_PKEY *pkey) {
  BIO *bio = BIO_new(BIO_s_mem());
  char *pem = NULL;
  if (bio && PEM_write_bio_PUBKEY(bio, pkey) == 1) {
    char *data;
    long n = BIO_get_mem_data(bio, &data);
    pem = malloc((size_t)n + 1);
    if (pem) {
      memcpy(pem, data, (size_t)n);
      pem[n] = '\0';
    }
  }
  BIO_free(bio);
  return pem;
}

static EVP_PKEY *pkey_fromdata(const char *type, OSSL_PARAM_BLD *bld) {
  OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
  EVP_PKEY *pkey = NULL;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
    pkey = NULL;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return pkey;
}

static char *rsa_pem(json_t *jwk) {
  unsigned char *n = NULL, *e = NULL;
  size_t nlen = 0, elen = 0;
  char *pem = NULL;
  BIGNUM *bn_n = NULL, *bn_e = NULL;
  OSSL_PARAM_BLD *bld = NULL;
  if (member_bytes(jwk, "n", &n, &nlen) != CEB_OK ||
      member_bytes(jwk, "e", &e, &elen) != CEB_OK || nlen < 256)
    goto out; /* RSA keys under 2048 bits are refused */
  bn_n = BN_bin2bn(n, (int)nlen, NULL);
  bn_e = BN_bin2bn(e, (int)elen, NULL);
  bld = OSSL_PARAM_BLD_new();
  /* the bits, not the bytes: leading zero bytes would pass a length check */
  if (!bn_n || !bn_e || !bld || BN_num_bits(bn_n) < 2048 ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e))
    goto out;
  EVP_PKEY *pkey = pkey_fromdata("RSA", bld);
  if (pkey) {
    pem = pkey_to_pem(pkey);
    EVP_PKEY_free(pkey);
  }
out:
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
  free(n);
  free(e);
  return pem;
}

static char *ec_p256_pem(json_t *jwk) {
  unsigned char *x = NULL, *y = NULL;
  size_t xlen = 0, ylen = 0;
  char *pem = NULL;
  OSSL_PARAM_BLD *bld = NULL;
  if (member_bytes(jwk, "x", &x, &xlen) != CEB_OK ||
      member_bytes(jwk, "y", &y, &ylen) != CEB_OK || xlen != 32 || ylen != 32)
    goto out;
  unsigned char point[65];
  point[0] = 0x04; /* uncompressed */
  memcpy(point + 1, x, 32);
  memcpy(point + 33, y, 32);
  bld = OSSL_PARAM_BLD_new();
  if (!bld ||
      !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                       "prime256v1", 0) ||
      !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point,
                                        sizeof point))
    goto out;
  EVP_PKEY *pkey = pkey_fromdata("EC", bld);
  if (pkey) {
    pem = pkey_to_pem(pkey);
    EVP_PKEY_free(pkey);
  }
out:
  OSSL_PARAM_BLD_free(bld);
  free(x);
  free(y);
  return pem;
}

/* Converts one JWK; NULL pem with a reason when it is skipped. */
static const char *jwk_convert(json_t *jwk, http_jwk_alg *alg, char **pem) {
  const char *kty = json_string_value(json_object_get(jwk, "kty"));
  const char *a = json_string_value(json_object_get(jwk, "alg"));
  const char *use = json_string_value(json_object_get(jwk, "use"));
  const char *crv = json_string_value(json_object_get(jwk, "crv"));
  *pem = NULL;
  if (use && strcmp(use, "sig") != 0) return "not a signing key (use)";
  if (!kty) return "kty missing";
  if (strcmp(kty, "RSA") == 0) {
    if (!a || strcmp(a, "RS256") == 0)
      *alg = HTTP_JWK_RS256;
    else if (strcmp(a, "PS256") == 0)
      *alg = HTTP_JWK_PS256;
    else
      return "unsupported alg for an RSA key";
    *pem = rsa_pem(jwk);
    return *pem ? NULL : "invalid RSA key (n, e; at least 2048 bits)";
  }
  if (strcmp(kty, "EC") == 0) {
    if ((a && strcmp(a, "ES256") != 0) || !crv || strcmp(crv, "P-256") != 0)
      return "unsupported EC key (only P-256 / ES256)";
    *alg = HTTP_JWK_ES256;
    *pem = ec_p256_pem(jwk);
    return *pem ? NULL : "invalid EC key (x, y)";
  }
  return "unsupported kty";
}

static int parse_jwks(http_jwks *j, const char *text, size_t len,
                      jwk_set *out) {
  json_error_t jerr;
  json_t *doc = json_loadb(text, len, 0, &jerr);
  json_t *keys = doc ? json_object_get(doc, "keys") : NULL;
  if (!json_is_array(keys)) {
    logf_(j, 1, "JWKS is not a JSON object with a keys array");
    json_decref(doc);
    return CEB_EINVAL;
  }
  size_t n = json_array_size(keys);
  out->keys = calloc(n ? n : 1, sizeof *out->keys);
  out->count = 0;
  if (!out->keys) {
    json_decref(doc);
    return CEB_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *jwk = json_array_get(keys, i);
    const char *kid = json_string_value(json_object_get(jwk, "kid"));
    http_jwk_alg alg = HTTP_JWK_RS256;
    char *pem = NULL;
    const char *why = kid && *kid ? jwk_convert(jwk, &alg, &pem) : "no kid";
    if (why) {
      logf_(j, 0, "JWKS key %zu (kid %s) skipped: %s", i, kid ? kid : "-", why);
      continue;
    }
    jwk_key *k = &out->keys[out->count];
    k->kid = strdup(kid);
    k->pem = pem;
    k->alg = alg;
    if (!k->kid) {
      free(pem);
      continue;
    }
    out->count++;
  }
  json_decref(doc);
  return CEB_OK;
}

/* Ends a fetch under way when the keys are freed (shutdown). */
static int fetch_progress(void *arg, curl_off_t dt, curl_off_t dn,
                          curl_off_t ut, curl_off_t un) {
  (void)dt;
  (void)dn;
  (void)ut;
  (void)un;
  return atomic_load(&((http_jwks *)arg)->stop) != 0;
}

static int fetch_url(http_jwks *j, char **out, size_t *len) {
  CURL *c = curl_easy_init();
  if (!c) return CEB_ENOMEM;
  http_body b = {.max = JWKS_MAX_BYTES};
  curl_easy_setopt(c, CURLOPT_URL, j->url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_body_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, JWKS_FETCH_TIMEOUT_MS);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, fetch_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, j);
  CURLcode rc = http_tls_client_apply(c, &j->tls);
  if (rc == CURLE_OK) rc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK || code != 200) {
    char why[64];
    if (b.too_large)
      snprintf(why, sizeof why, "document over %d bytes", JWKS_MAX_BYTES);
    else if (rc != CURLE_OK)
      snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
    else
      snprintf(why, sizeof why, "HTTP %ld", code);
    logf_(j, 1, "JWKS fetch from %s failed: %s", j->url, why);
    free(b.data);
    return CEB_EIO;
  }
  *out = b.data ? b.data : strdup("");
  *len = b.len;
  return *out ? CEB_OK : CEB_ENOMEM;
}

/* Caller holds j->lock; drops it while calling back. Wakes the waiters
 * whose refresh finished or whose deadline passed (all when stopping). */
static void wake_locked(http_jwks *j, int64_t now_ns) {
  jwks_waiter *fire = NULL;
  for (jwks_waiter **p = &j->waiters; *p;) {
    jwks_waiter *w = *p;
    if (w->gen <= j->done || w->deadline_ns <= now_ns ||
        atomic_load(&j->stop)) {
      *p = w->next;
      w->next = fire;
      fire = w;
    } else {
      p = &w->next;
    }
  }
  if (!fire) return;
  pthread_mutex_unlock(&j->lock);
  while (fire) {
    jwks_waiter *w = fire;
    fire = w->next;
    w->cb(w->arg);
    free(w);
  }
  pthread_mutex_lock(&j->lock);
}

int http_jwks_set_tls(http_jwks *j, const ceb_config *cfg, const char *prefix) {
  http_tls_client_free(&j->tls);
  return http_tls_client_load(&j->tls, cfg, prefix);
}

/* Caller holds j->refresh. */
static int refresh_locked(http_jwks *j) {
  char *text = NULL;
  size_t len = 0;
  int st;
  if (j->url) {
    st = fetch_url(j, &text, &len);
  } else {
    st = http_file_read(j->file, JWKS_MAX_BYTES, &text, &len);
    if (st != CEB_OK)
      logf_(j, 1, "JWKS file %s: %s", j->file, ceb_strerror(st));
  }
  if (st != CEB_OK) return st;
  jwk_set fresh = {0};
  st = parse_jwks(j, text, len, &fresh);
  free(text);
  if (st != CEB_OK) return st;
  if (fresh.count == 0) {
    logf_(j, 1, "JWKS holds no usable key; keeping the previous keys");
    set_free(&fresh);
    return CEB_ENOTFOUND;
  }
  pthread_mutex_lock(&j->lock);
  jwk_set old = j->keys;
  j->keys = fresh;
  pthread_mutex_unlock(&j->lock);
  set_free(&old);
  return CEB_OK;
}

/* The refresher: one fetch at a time, when a lookup asked for one. */
static void *refresher_main(void *arg) {
  http_jwks *j = arg;
  pthread_mutex_lock(&j->lock);
  for (;;) {
    while (!j->want && !atomic_load(&j->stop))
      pthread_cond_wait(&j->cond, &j->lock);
    if (atomic_load(&j->stop)) break;
    j->want = 0;
    j->running = 1;
    pthread_mutex_unlock(&j->lock);
    pthread_mutex_lock(&j->refresh);
    refresh_locked(j);
    pthread_mutex_unlock(&j->refresh);
    pthread_mutex_lock(&j->lock);
    j->running = 0;
    j->done++;
    pthread_cond_broadcast(&j->cond);
    wake_locked(j, mono_ns());
  }
  pthread_mutex_unlock(&j->lock);
  return NULL;
}

/* The timer: wakes waiters at their deadline while a fetch is slow. */
static void *timer_main(void *arg) {
  http_jwks *j = arg;
  pthread_mutex_lock(&j->lock);
  while (!atomic_load(&j->stop)) {
    int64_t next = INT64_MAX;
    for (jwks_waiter *w = j->waiters; w; w = w->next)
      if (w->deadline_ns < next) next = w->deadline_ns;
    if (next == INT64_MAX) {
      pthread_cond_wait(&j->tcond, &j->lock);
    } else {
      struct timespec ts = abs_of(next);
      pthread_cond_timedwait(&j->tcond, &j->lock, &ts);
    }
    wake_locked(j, mono_ns());
  }
  pthread_mutex_unlock(&j->lock);
  return NULL;
}

http_jwks *http_jwks_new(const char *url, const char *file,
                         int64_t min_refresh_ms, int64_t wait_ms,
                         http_jwks_log_fn log, void *log_arg) {
  http_jwks *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  pthread_mutex_init(&j->lock, NULL);
  pthread_mutex_init(&j->refresh, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&j->cond, &ca);
  pthread_cond_init(&j->tcond, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&j->stop, 0);
  j->url = url ? strdup(url) : NULL;
  j->file = file ? strdup(file) : NULL;
  j->min_refresh_ms = min_refresh_ms;
  j->wait_ms = wait_ms;
  j->log = log;
  j->log_arg = log_arg;
  if ((url && !j->url) || (file && !j->file) ||
      pthread_create(&j->refresher, NULL, refresher_main, j) != 0) {
    http_jwks_free(j);
    return NULL;
  }
  if (pthread_create(&j->timer, NULL, timer_main, j) != 0) {
    atomic_store(&j->stop, 1);
    pthread_mutex_lock(&j->lock);
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
    pthread_join(j->refresher, NULL);
    http_jwks_free(j);
    return NULL;
  }
  j->threads = 1;
  return j;
}

void http_jwks_free(http_jwks *j) {
  if (!j) return;
  if (j->threads) {
    pthread_mutex_lock(&j->lock);
    atomic_store(&j->stop, 1);
    pthread_cond_broadcast(&j->cond);
    pthread_cond_broadcast(&j->tcond);
    pthread_mutex_unlock(&j->lock);
    pthread_join(j->refresher, NULL);
    pthread_join(j->timer, NULL);
  }
  pthread_mutex_lock(&j->lock);
  wake_locked(j, INT64_MAX); /* each waiter is called back exactly once */
  pthread_mutex_unlock(&j->lock);
  set_free(&j->keys);
  pthread_cond_destroy(&j->cond);
  pthread_cond_destroy(&j->tcond);
  pthread_mutex_destroy(&j->lock);
  pthread_mutex_destroy(&j->refresh);
  free(j->url);
  free(j->file);
  http_tls_client_free(&j->tls);
  free(j);
}

int http_jwks_refresh(http_jwks *j, int64_t now_ms) {
  pthread_mutex_lock(&j->lock);
  j->last_refresh_ms = now_ms;
  pthread_mutex_unlock(&j->lock);
  pthread_mutex_lock(&j->refresh);
  int st = refresh_locked(j);
  pthread_mutex_unlock(&j->refresh);
  return st;
}

/* Caller holds j->lock. */
static int lookup_locked(http_jwks *j, const char *kid, char **pem,
                         http_jwk_alg *alg) {
  for (size_t i = 0; i < j->keys.count; i++)
    if (strcmp(j->keys.keys[i].kid, kid) == 0) {
      *pem = strdup(j->keys.keys[i].pem);
      *alg = j->keys.keys[i].alg;
      return *pem ? CEB_OK : CEB_ENOMEM;
    }
  return CEB_ENOTFOUND;
}

int http_jwks_find(http_jwks *j, const char *kid, int64_t now_ms, char **pem,
                   http_jwk_alg *alg, uint64_t *gen) {
  pthread_mutex_lock(&j->lock);
  int st = lookup_locked(j, kid, pem, alg);
  int asked = 0;
  if (st == CEB_ENOTFOUND && gen) {
    int pending = j->want || j->running;
    if (!pending && (j->last_refresh_ms == 0 ||
                     now_ms - j->last_refresh_ms >= j->min_refresh_ms)) {
      j->want = 1;
      j->last_refresh_ms = now_ms;
      pthread_cond_broadcast(&j->cond);
      pending = asked = 1;
    }
    if (pending) {
      *gen = j->done + 1;
      st = HTTP_JWKS_PENDING;
    }
  }
  pthread_mutex_unlock(&j->lock);
  if (asked) logf_(j, 0, "unknown kid %.64s: refreshing the JWKS", kid);
  return st;
}

int http_jwks_notify(http_jwks *j, uint64_t gen, http_jwks_wake_fn cb,
                     void *arg) {
  jwks_waiter *w = malloc(sizeof *w);
  if (!w) return CEB_ENOMEM;
  *w = (jwks_waiter){NULL, gen, mono_ns() + j->wait_ms * 1000000, cb, arg};
  pthread_mutex_lock(&j->lock);
  w->next = j->waiters;
  j->waiters = w;
  pthread_cond_broadcast(&j->tcond);
  wake_locked(j, mono_ns()); /* the refresh may have finished already */
  pthread_mutex_unlock(&j->lock);
  return CEB_OK;
}

int http_jwks_get(http_jwks *j, const char *kid, int64_t now_ms, char **pem,
                  http_jwk_alg *alg) {
  uint64_t gen = 0;
  int st = http_jwks_find(j, kid, now_ms, pem, alg, &gen);
  if (st != HTTP_JWKS_PENDING) return st;
  int64_t deadline = mono_ns() + j->wait_ms * 1000000;
  pthread_mutex_lock(&j->lock);
  struct timespec ts = abs_of(deadline);
  while (j->done < gen && !atomic_load(&j->stop) && mono_ns() < deadline)
    pthread_cond_timedwait(&j->cond, &j->lock, &ts);
  st = lookup_locked(j, kid, pem, alg);
  pthread_mutex_unlock(&j->lock);
  return st;
}
