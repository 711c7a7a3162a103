/* Reading contract documents: files and http(s) GETs with conditional
 * requests. Thread-safe (one curl easy handle per call). */
#ifndef AA_FETCH_H
#define AA_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "aa_auth.h"

typedef struct aa_http_opts {
  int64_t timeout_ms;
  size_t max_size;
  int allow_http; /* plain http allowed (tests, loopback registries) */
  /* TLS policy (ceb/tls.h): 12 or 13; the strings are borrowed from the
   * config and NULL when unset (ciphers: CEB_TLS_CIPHERS_DEFAULT) */
  int tls_min_version;
  const char *tls_ciphers, *tls_ciphersuites;
  const char *tls_ca_file, *tls_client_cert, *tls_client_key;
  aa_auth *auth; /* credentials for the source's origin; NULL: none */
} aa_http_opts;

typedef struct aa_http_result {
  long status; /* 200, 304, ...; 0 on a transport error */
  char *body;  /* malloc'd, NUL-terminated; NULL unless 2xx */
  size_t len;
  char etag[256]; /* the response's ETag, "" when none */
} aa_http_result;

/* Applies what every request of the plugin shares to easy: the TLS policy
 * (ceb/tls.h), the timeout, the allowed protocols (https, and http only
 * with allow_http), no signals. The token requests of o->auth use it too. */
CURLcode aa_http_client_setup(CURL *easy, const aa_http_opts *o);

/* GETs url (with o->auth's bearer token when url is of its origin; a 401
 * to an OAuth2 token fetches a new one and tries once more), sending
 * If-None-Match: etag when etag is non-empty. Returns 0 when a response arrived
 * (any status: the caller judges it), -1 with a reason in err on transport
 * errors, refused schemes or oversize bodies. The caller frees res->body. */
int aa_http_get(const char *url, const char *etag, const aa_http_opts *o,
                aa_http_result *res, char *err, size_t errlen);

/* Reads a whole file up to max_size bytes: malloc'd, NUL-terminated. */
char *aa_file_read(const char *path, size_t max_size, size_t *len, char *err,
                   size_t errlen);

#endif
