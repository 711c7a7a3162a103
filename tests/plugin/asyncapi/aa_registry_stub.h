/* A local Apicurio v3 style registry for tests: libmicrohttpd on
 * 127.0.0.1:0 serving
 *   GET {prefix}/groups/{g}/artifacts/{a}/versions
 *   GET {prefix}/groups/{g}/artifacts/{a}/versions/{v}/content
 *   GET {prefix}/files/{name}            (plain documents, for url sources)
 * with ETags (If-None-Match -> 304). Documents can be set and changed while
 * it runs. Thread-safe. */
#ifndef AA_REGISTRY_STUB_H
#define AA_REGISTRY_STUB_H

#include <stddef.h>

typedef struct aa_stub aa_stub;

/* prefix e.g. "/apis/registry/v3". NULL on failure. */
aa_stub *aa_stub_start(const char *prefix);
void aa_stub_stop(aa_stub *s);
int aa_stub_port(const aa_stub *s);
/* Sets (adds or replaces) a version's content or a plain file. */
void aa_stub_set_version(aa_stub *s, const char *group, const char *artifact,
                         const char *version, const char *content);
void aa_stub_set_file(aa_stub *s, const char *name, const char *content);
/* Requests answered 200 / 304 / 401 so far. */
size_t aa_stub_count(aa_stub *s, int status);

/* Authentication, off until set. Every GET then needs Authorization:
 * Bearer <token> (else 401, counted): the token given here, or one the
 * token endpoint issued. NULL turns the static token off. */
void aa_stub_require_token(aa_stub *s, const char *token);
/* A client credentials token endpoint, POST {prefix}/token with HTTP Basic
 * client_id:secret (RFC 6749 2.3.1) and grant_type=client_credentials: it
 * issues "issued-N" (Bearer, expires_in 3600), the only issued token GETs
 * take from then on; other credentials get 401 {"error":"invalid_client"}.
 * Turns token checking on. */
void aa_stub_set_client(aa_stub *s, const char *client_id, const char *secret);
/* The issued token is no longer taken (a revocation, rotated keys). */
void aa_stub_revoke(aa_stub *s);
/* Tokens issued / token requests refused / GETs that carried any
 * Authorization header, so far. */
size_t aa_stub_tokens_issued(aa_stub *s);
size_t aa_stub_tokens_refused(aa_stub *s);
size_t aa_stub_auth_seen(aa_stub *s);

#endif
