/* The issuer's signing keys (JWKS), converted from JWK to PEM with OpenSSL
 * and cached by kid. Each key's algorithm is pinned when it is loaded: the
 * JWK's "alg" when present (RS256, PS256, ES256), else from kty/crv (RSA ->
 * RS256, EC P-256 -> ES256); a token is only ever verified with the
 * algorithm of its key. An unknown kid triggers a refresh (from the URL with
 * libcurl, or by rereading the file), at most once per min_refresh.
 *
 * Thread-safe: lookups run from any request thread; a refresh blocks only
 * the threads that need it. */
#ifndef HTTP_JWKS_H
#define HTTP_JWKS_H

#include <stddef.h>
#include <stdint.h>

#include "http_tls.h"

typedef enum http_jwk_alg {
  HTTP_JWK_RS256 = 1,
  HTTP_JWK_PS256 = 2,
  HTTP_JWK_ES256 = 3
} http_jwk_alg;

typedef struct http_jwks http_jwks;

/* Log sink for skipped keys and fetch errors (may be NULL). */
typedef void (*http_jwks_log_fn)(void *arg, int error, const char *msg);

/* url or file (one of them). Copies its arguments. NULL on ENOMEM. */
http_jwks *http_jwks_new(const char *url, const char *file,
                         int64_t min_refresh_ms, http_jwks_log_fn log,
                         void *log_arg);
void http_jwks_free(http_jwks *j);

/* Takes the URL fetch's TLS settings from the client keys under prefix
 * (ceb/tls.h; "oauth2." on the listeners); without them the default policy
 * applies. Call before the first refresh (control thread). CEB_OK or
 * CEB_ENOMEM. */
int http_jwks_set_tls(http_jwks *j, const ceb_config *cfg, const char *prefix);

/* Loads now, ignoring the rate limit. CEB_OK when at least one key is
 * usable; the previous keys stay when loading fails. */
int http_jwks_refresh(http_jwks *j, int64_t now_ms);

/* Finds kid; when absent and the rate limit allows, refreshes first.
 * CEB_OK with *pem (malloc'd, caller frees) and *alg, or CEB_ENOTFOUND. */
int http_jwks_get(http_jwks *j, const char *kid, int64_t now_ms, char **pem,
                  http_jwk_alg *alg);

/* "RS256" etc. */
const char *http_jwk_alg_name(http_jwk_alg alg);

#endif
