/* OAuth2 bearer token (JWT, RFC 7519 / RFC 9068) verification for the
 * intermediary. The algorithm comes from the key (http_jwks), never from the
 * token alone: "none", a missing or unknown kid, and a header alg differing
 * from the key's (the HS256-with-the-RSA-public-key attack) are refused
 * before any signature check. RS256 and ES256 signatures are checked with
 * libjwt, PS256 (which libjwt 1.10 lacks) with OpenSSL. exp, nbf, iss, aud
 * and scope are checked here with a leeway. Reentrant. */
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
 * res filled. */
int http_jwt_verify(http_jwks *keys, const http_jwt_rules *rules,
                    const char *token, int64_t now_ms, http_jwt_result *res);

#endif
