/* The issuer's signing keys (JWKS), converted from JWK to PEM with OpenSSL
 * and cached by kid. Each key's algorithm is pinned when it is loaded: the
 * JWK's "alg" when present (RS256, PS256, ES256), else from kty/crv (RSA ->
 * RS256, EC P-256 -> ES256); a token is only ever verified with the
 * algorithm of its key.
 *
 * An unknown kid asks for a refresh (from the URL with libcurl, or by
 * rereading the file), at most once per min_refresh, and the refresh runs
 * on the set's own thread, one at a time: a slow or hanging issuer never
 * holds a request thread. A request with an unknown kid may wait for the
 * refresh under way, at most wait_ms (http_jwks_get blocks; http_jwks_notify
 * calls back, for event-loop servers); requests with known kids never wait.
 * A second thread wakes the waiters whose wait_ms passed while a fetch
 * hangs.
 *
 * Thread-safe: lookups run from any request thread. */
#ifndef HTTP_JWKS_H
#define HTTP_JWKS_H

#include <stddef.h>
#include <stdint.h>

#include "http_tls.h"
#include <ceb/status.h>

typedef enum http_jwk_alg {
  HTTP_JWK_RS256 = 1,
  HTTP_JWK_PS256 = 2,
  HTTP_JWK_ES256 = 3
} http_jwk_alg;

typedef struct http_jwks http_jwks;

/* http_jwks_find: the kid is unknown and a refresh is under way (the
 * SDK's "try again later"). */
#define HTTP_JWKS_PENDING CEB_EBUSY

/* Log sink for skipped keys and fetch errors (may be NULL). */
typedef void (*http_jwks_log_fn)(void *arg, int error, const char *msg);

/* Called back once per http_jwks_notify, from a thread of the set (or from
 * http_jwks_notify / http_jwks_free themselves). */
typedef void (*http_jwks_wake_fn)(void *arg);

/* url or file (one of them). Copies its arguments and starts the set's two
 * threads. wait_ms bounds how long a request with an unknown kid waits for
 * a refresh. NULL on ENOMEM or when a thread cannot start. */
http_jwks *http_jwks_new(const char *url, const char *file,
                         int64_t min_refresh_ms, int64_t wait_ms,
                         http_jwks_log_fn log, void *log_arg);
/* Stops the threads (a fetch under way is aborted), calls back every
 * waiter still registered, and frees. */
void http_jwks_free(http_jwks *j);

/* Takes the URL fetch's TLS settings from the client keys under prefix
 * (ceb/tls.h; "oauth2." on the listeners); without them the default policy
 * applies. Call before the first refresh (control thread). CEB_OK or
 * CEB_ENOMEM. */
int http_jwks_set_tls(http_jwks *j, const ceb_config *cfg, const char *prefix);

/* Loads now on the calling thread (start-up), ignoring the rate limit but
 * counting against it. CEB_OK when at least one key is usable; the previous
 * keys stay when loading fails. */
int http_jwks_refresh(http_jwks *j, int64_t now_ms);

/* Finds kid without blocking. CEB_OK with *pem (malloc'd, caller frees) and
 * *alg. When kid is absent and gen is not NULL: HTTP_JWKS_PENDING with *gen
 * when a refresh is under way, or was just asked for (the rate limit, on the
 * now_ms clock, allows one); wait for it with http_jwks_notify. Otherwise
 * (or gen NULL: the keys as they are) CEB_ENOTFOUND. */
int http_jwks_find(http_jwks *j, const char *kid, int64_t now_ms, char **pem,
                   http_jwk_alg *alg, uint64_t *gen);

/* Calls cb(arg) once: when the refresh gen stands for has finished, or
 * wait_ms from now, whichever comes first (at once when it has finished
 * already). Then look the kid up again with http_jwks_find(..., NULL).
 * CEB_OK, or CEB_ENOMEM (cb is not called). */
int http_jwks_notify(http_jwks *j, uint64_t gen, http_jwks_wake_fn cb,
                     void *arg);

/* http_jwks_find, blocking at most wait_ms for a refresh under way (for
 * thread-per-connection servers and tools). CEB_OK or CEB_ENOTFOUND. */
int http_jwks_get(http_jwks *j, const char *kid, int64_t now_ms, char **pem,
                  http_jwk_alg *alg);

/* "RS256" etc. */
const char *http_jwk_alg_name(http_jwk_alg alg);

#endif
