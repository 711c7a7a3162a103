/* OAuth2 client credentials grant (RFC 6749 section 4.4) for the webhook
 * sink: client_secret_basic, or private_key_jwt (RFC 7523 client assertion
 * signed RS256 or ES256 with libjwt). The client builds the token request
 * and parses the response; the sink's event loop performs the transfer, so
 * a slow token endpoint never blocks a delivery thread.
 *
 * Threading: a client belongs to one sink's loop thread; no function is
 * thread-safe. Secrets are never logged and are wiped on free. */
#ifndef HTTP_OUT_OAUTH_H
#define HTTP_OUT_OAUTH_H

#include <stddef.h>
#include <stdint.h>

typedef struct http_oauth_client http_oauth_client;

typedef struct http_oauth_config {
  const char *token_url;        /* required */
  const char *client_id;        /* required */
  const char *client_secret;    /* one of client_secret ... */
  const char *private_key_path; /* ... or a PEM private key (RSA or P-256) */
  const char *key_id;           /* "kid" of the assertion header, optional */
  const char *scope;            /* optional, space-separated */
  const char *audience;         /* optional "audience" form parameter */
  int64_t refresh_margin_ms;    /* refresh this long before expiry */
} http_oauth_config;

/* Checks the config and loads the private key. On error returns CEB_ECONFIG
 * (or CEB_ENOMEM) with a reason in err (no secret in it) and *out NULL.
 * Strings are copied. Free with http_oauth_client_free. */
int http_oauth_client_new(const http_oauth_config *cfg, http_oauth_client **out,
                          char *err, size_t errlen);
void http_oauth_client_free(http_oauth_client *c);

/* The cached access token while it is valid at now_ms (borrowed until the
 * next call on c), else NULL. *generation identifies the token for
 * http_oauth_client_invalidate. */
const char *http_oauth_client_token(http_oauth_client *c, int64_t now_ms,
                                    uint64_t *generation);
/* Drops the cached token if it is still `generation` (after a 401). */
void http_oauth_client_invalidate(http_oauth_client *c, uint64_t generation);

/* Builds a token request for now_ms: *form (malloc'd, caller frees) is the
 * application/x-www-form-urlencoded body; for client_secret_basic *user and
 * *password (borrowed, form-encoded per RFC 6749 2.3.1) are the Basic
 * credentials, else NULL. */
int http_oauth_client_request(http_oauth_client *c, int64_t now_ms, char **form,
                              const char **user, const char **password);
/* Takes a token endpoint response. CEB_OK: the token is cached. Else
 * CEB_EAUTH (refused: 4xx / error JSON) or CEB_EIO (5xx, malformed), with a
 * reason in err. */
int http_oauth_client_complete(http_oauth_client *c, long http_status,
                               const char *body, size_t len, int64_t now_ms,
                               char *err, size_t errlen);

/* The token endpoint URL (borrowed). */
const char *http_oauth_client_url(const http_oauth_client *c);

#endif
