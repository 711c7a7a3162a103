/* OAuth2 client credentials grant (RFC 6749 section 4.4), shared by the
 * webhook sink and the asyncapi contracts fetcher: client_secret_basic, or
 * private_key_jwt (RFC 7523 client assertion signed RS256 or ES256 with
 * libjwt). The client builds the token request and parses the response;
 * the caller performs the transfer: the webhook sink in its event loop (a
 * slow token endpoint never blocks a delivery thread), a caller on a
 * thread of its own with http_oauth_client_fetch (blocking libcurl).
 *
 * Threading: a client belongs to one thread at a time (the sink's loop, the
 * fetcher's sync under its lock); no function is thread-safe. Secrets are
 * never logged and are wiped on free. */
#ifndef HTTP_OAUTH_H
#define HTTP_OAUTH_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/config.h>
#include <curl/curl.h>

/* The oauth2.* client keys, the same names, types and descriptions in
 * every plugin that fetches tokens (expands to ceb_config_spec entries). */
#define HTTP_OAUTH_CLIENT_SPEC                                                 \
  {"oauth2.token_url",                                                         \
   CEB_CFG_URL,                                                                \
   0,                                                                          \
   NULL,                                                                       \
   0,                                                                          \
   0,                                                                          \
   NULL,                                                                       \
   "OAuth2 token endpoint: enables client credentials bearer tokens."},        \
      {"oauth2.client_id", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,                \
       "OAuth2 client id."},                                                   \
      {"oauth2.client_secret",                                                 \
       CEB_CFG_STRING,                                                         \
       CEB_CFG_SECRET,                                                         \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "OAuth2 client secret (client_secret_basic)."},                         \
      {"oauth2.private_key",                                                   \
       CEB_CFG_PATH,                                                           \
       CEB_CFG_SECRET,                                                         \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "PEM key (RSA: RS256, P-256: ES256) for a private_key_jwt assertion."}, \
      {"oauth2.key_id",                                                        \
       CEB_CFG_STRING,                                                         \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "kid header of the client assertion."},                                 \
      {"oauth2.scope",                                                         \
       CEB_CFG_STRING,                                                         \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "Requested scope(s), space-separated."},                                \
      {"oauth2.audience",                                                      \
       CEB_CFG_STRING,                                                         \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "audience parameter of the token request."},                            \
  {                                                                            \
    "oauth2.refresh_margin", CEB_CFG_DURATION, 0, "60s", 0, 86400000LL, NULL,  \
        "Refresh the token this long before it expires."                       \
  }

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

/* Reads the HTTP_OAUTH_CLIENT_SPEC keys of cfg into *oc (strings borrowed
 * from cfg). Returns 0 when none is set (no OAuth2), 1 when
 * oauth2.token_url is set, -1 (with the reason in err, starting with the
 * key at fault) when other oauth2.* keys are set without it. */
int http_oauth_config_read(const ceb_config *cfg, http_oauth_config *oc,
                           char *err, size_t errlen);

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

/* For callers on a thread of their own: the valid cached token, else a
 * token fetched now with a blocking POST on `easy` (a libcurl easy handle
 * the caller set its TLS policy, timeout and protocols on; this function
 * sets URL, body, Basic credentials and the write callback, and resets
 * nothing else). Returns the token (borrowed as with http_oauth_client_token)
 * or NULL with the reason in err (no secret in it). */
const char *http_oauth_client_fetch(http_oauth_client *c, CURL *easy,
                                    int64_t now_ms, uint64_t *generation,
                                    char *err, size_t errlen);

#endif
