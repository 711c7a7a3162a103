#include "aa_fetch.h"

#include "http_body.h"

#include <ceb/tls.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct sink {
  http_body body; /* bounded by max_size */
  char *etag;
} sink;

static size_t on_header(char *data, size_t size, size_t n, void *arg) {
  sink *s = arg;
  size_t len = size * n;
  if (len > 5 && strncasecmp(data, "etag:", 5) == 0) {
    const char *v = data + 5;
    size_t vl = len - 5;
    while (vl && (*v == ' ' || *v == '\t'))
      v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
      vl--;
    if (vl < 256) {
      memcpy(s->etag, v, vl);
      s->etag[vl] = '\0';
    }
  }
  return len;
}

/* The TLS policy: TLS 1.2 or newer whatever OpenSSL's security level
 * allows, no static RSA key exchange unless tls.ciphers says so. */
static CURLcode tls_apply(CURL *c, const aa_http_opts *o) {
  CURLcode rc;
#define TRY(opt, val)                                                          \
  if ((rc = curl_easy_setopt(c, opt, val)) != CURLE_OK) return rc
  TRY(CURLOPT_SSL_VERIFYPEER, 1L);
  TRY(CURLOPT_SSL_VERIFYHOST, 2L);
  TRY(CURLOPT_SSLVERSION, o->tls_min_version >= 13 ? CURL_SSLVERSION_TLSv1_3
                                                   : CURL_SSLVERSION_TLSv1_2);
  TRY(CURLOPT_SSL_CIPHER_LIST,
      o->tls_ciphers ? o->tls_ciphers : CEB_TLS_CIPHERS_DEFAULT);
  if (o->tls_ciphersuites) TRY(CURLOPT_TLS13_CIPHERS, o->tls_ciphersuites);
  if (o->tls_ca_file) TRY(CURLOPT_CAINFO, o->tls_ca_file);
  if (o->tls_client_cert) TRY(CURLOPT_SSLCERT, o->tls_client_cert);
  if (o->tls_client_key) TRY(CURLOPT_SSLKEY, o->tls_client_key);
#undef TRY
  return CURLE_OK;
}

CURLcode aa_http_client_setup(CURL *c, const aa_http_opts *o) {
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  /* Redirects may not downgrade to http unless allowed. */
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
                   o->allow_http ? "http,https" : "https");
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR,
                   o->allow_http ? "http,https" : "https");
  return tls_apply(c, o);
}

/* One GET; a response of any status is 0 with the body kept in *s. */
static int get_once(const char *url, const char *etag, const aa_http_opts *o,
                    sink *s, long *status, uint64_t *gen, char *err,
                    size_t errlen) {
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(err, errlen, "curl init failed");
    return -1;
  }
  struct curl_slist *hdrs = NULL;
  char inm[300];
  if (etag && *etag) {
    snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    hdrs = curl_slist_append(hdrs, inm);
  }
  hdrs =
      curl_slist_append(hdrs, "Accept: application/json, application/x-yaml, "
                              "application/yaml, text/yaml, */*;q=0.5");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_body_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s->body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  int out = 0;
  CURLcode rc = aa_http_client_setup(c, o);
  /* the token comes last: a token request reuses nothing of this handle */
  if (rc == CURLE_OK &&
      aa_auth_apply(o->auth, c, url, o, gen, err, errlen) != 0) {
    out = -1;
  } else {
    if (rc == CURLE_OK) rc = curl_easy_setopt(c, CURLOPT_URL, url);
    if (rc == CURLE_OK) rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      snprintf(err, errlen, "%s: %s", url,
               s->body.too_large ? "document larger than max_size"
                                 : curl_easy_strerror(rc));
      out = -1;
    } else {
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    }
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  return out;
}

int aa_http_get(const char *url, const char *etag, const aa_http_opts *o,
                aa_http_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  int https = strncmp(url, "https://", 8) == 0;
  if (!https && !(o->allow_http && strncmp(url, "http://", 7) == 0)) {
    snprintf(err, errlen,
             "%s: only https URLs are fetched (http needs "
             "allow_insecure_http = true)",
             url);
    return -1;
  }
  sink s = {.body = {.max = o->max_size}, .etag = res->etag};
  uint64_t gen = 0;
  int out = get_once(url, etag, o, &s, &res->status, &gen, err, errlen);
  /* An OAuth2 token the registry no longer takes (revoked, rotated keys):
   * one new token, one more try. */
  if (out == 0 && res->status == 401 && aa_auth_refused(o->auth, gen)) {
    free(s.body.data);
    s = (sink){.body = {.max = o->max_size}, .etag = res->etag};
    res->etag[0] = '\0';
    out = get_once(url, etag, o, &s, &res->status, &gen, err, errlen);
  }
  if (out == 0 && res->status >= 200 && res->status < 300) {
    if (!s.body.data) s.body.data = calloc(1, 1);
    res->body = s.body.data;
    res->len = s.body.len;
  } else {
    free(s.body.data);
  }
  return out;
}

char *aa_file_read(const char *path, size_t max_size, size_t *len, char *err,
                   size_t errlen) {
  err[0] = '\0';
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n + 1 >= cap) {
      if (cap > max_size) {
        snprintf(err, errlen, "%s: larger than max_size", path);
        free(buf);
        buf = NULL;
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
  }
  if (buf && ferror(f)) {
    snprintf(err, errlen, "%s: read error", path);
    free(buf);
    buf = NULL;
  } else if (buf && n > max_size) {
    snprintf(err, errlen, "%s: larger than max_size", path);
    free(buf);
    buf = NULL;
  } else if (!buf && !err[0]) {
    snprintf(err, errlen, "out of memory");
  }
  fclose(f);
  if (buf) {
    buf[n] = '\0';
    *len = n;
  }
  return buf;
}
