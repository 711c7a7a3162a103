/* OAuth2 bearer token (JWT, RFC 7519 / RFC 9068) verification for the
 * intermediary. The algorithm comes from the key (http_jwks), never from the
 * token alone: "none", a missing or unknown kid, and a header alg differing
 * from the key's (the HS256-with-the-RSA-public-key attack) are refused
 * before any signature check, and so is a typ other than a JWT or an RFC 9068
 * access token (JWT, at+jwt, application/at+jwt; case-insensitive).
 * Signatures (RS256, PS256, ES256) are checked with OpenSSL (http_jws.h
 * says why not libjwt). exp, nbf, iss, aud and scope are checked here with
 * a leeway. Reentrant. */
#ifndef HTTP_JWT_H
#define HTTP_JWT_H

#include <stddef.h>
#include <stdint.h>

#include "http_jwks.h"

typedef struct http_jwt_rules {
  const char *issuer;        /* NULL: not checked */
  const char *audience;      /* NULL: not checked */
  const char *const *scopes; /* required scopes; may be NULL */
  size_t nscopes;
  int64_t leeway_ms;
  const char *client_claim; /* NULL: client_id, then sub */
} http_jwt_rules;

typedef struct http_jwt_result {
  int http_status;    /* 401 or 403 on failure */
  const char *reason; /* stable metric label: "expired", "kid_unknown"... */
  const char *oauth_error; /* RFC 6750: invalid_token, insufficient_scope */
  char detail[192];        /* for the problem body; no token material */
  char client[256];        /* CEB_OK: the client identity */
} http_jwt_result;

/* Verifies token against keys and rules at now_ms. CEB_OK with res->client
 * set, or CEB_EAUTH (401) / CEB_EFORBIDDEN (403, insufficient scope) with
 * res filled. An unknown kid waits (blocking) at most the keys' wait bound
 * for a refresh (http_jwks_get). */
int http_jwt_verify(http_jwks *keys, const http_jwt_rules *rules,
                    const char *token, int64_t now_ms, http_jwt_result *res);

/* The same without blocking. gen not NULL: an unknown kid with a refresh
 * under way gives HTTP_JWKS_PENDING and *gen (res says kid_unknown); wait with
 * http_jwks_notify, then call again with gen NULL, which takes the keys as
 * they are. */
int http_jwt_verify_async(http_jwks *keys, const http_jwt_rules *rules,
                          const char *token, int64_t now_ms,
                          http_jwt_result *res, uint64_t *gen);

/* The OAuth2 bearer-token keys, shared by every listener that verifies
 * tokens with http_jwt (the intermediary and the pull plugin); MS() must be
 * defined as milliseconds-from-seconds where this is expanded. */
#define HTTP_OAUTH2_SPEC_ENTRIES \
    {"oauth2.jwks_url", CEB_CFG_URL, 0, NULL, 0, 0, NULL, \
     "The issuer's JWKS endpoint."}, \
    {"oauth2.jwks_file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL, \
     "A JWKS file instead of jwks_url (offline, tests); reread on an " \
     "unknown kid."}, \
    {"oauth2.jwks_min_refresh", CEB_CFG_DURATION, 0, "30s", 0, MS(86400), NULL, \
     "Least time between two JWKS refreshes caused by unknown kids."}, \
    {"oauth2.jwks_wait", CEB_CFG_DURATION, 0, "500ms", 0, MS(10), NULL, \
     "Longest a request with an unknown kid waits for the JWKS refresh " \
     "under way (in the background) before it is refused with 401; " \
     "requests with known kids never wait."}, \
    {"oauth2.issuer", CEB_CFG_STRING, 0, NULL, 0, 0, NULL, \
     "Required iss claim."}, \
    {"oauth2.audience", CEB_CFG_STRING, 0, NULL, 0, 0, NULL, \
     "Required aud claim (the token's aud may be a string or an array)."}, \
    {"oauth2.scope", CEB_CFG_LIST, 0, NULL, 0, 0, NULL, \
     "Scopes the token must all carry (claim scope or scp)."}, \
    {"oauth2.leeway", CEB_CFG_DURATION, 0, "60s", 0, MS(3600), NULL, \
     "Clock skew allowed on exp and nbf."}, \
    {"oauth2.client_claim", CEB_CFG_STRING, 0, NULL, 0, 0, NULL, \
     "Claim naming the client; default client_id, then sub."}, \
    CEB_TLS_CLIENT_POLICY_SPEC("oauth2."), \
    CEB_TLS_CLIENT_FILES_SPEC("oauth2."),

#endif
