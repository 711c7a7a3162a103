/* Registry authentication for the asyncapi fetcher: a static bearer token
 * (bearer_token, a secret) or OAuth2 client credentials (oauth2.*, the
 * webhook sink's client from plugins/common/http_oauth.h), sent only to the
 * origin (scheme, host, port) of the configured url or registry.url: a $ref
 * to another origin is fetched without it, and libcurl drops it on a
 * redirect to another host (CURLOPT_UNRESTRICTED_AUTH stays off).
 *
 * Threading: used under the plugin's sync_lock (one sync at a time); not
 * thread-safe by itself. */
#ifndef AA_AUTH_H
#define AA_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/plugin.h>
#include <curl/curl.h>

typedef struct aa_auth aa_auth;
struct aa_http_opts;

/* Reads bearer_token and oauth2.* of cfg for a source at origin_url (url or
 * registry.url; NULL for a file source, which then may not set either).
 * *out is NULL when neither is set. CEB_ECONFIG with the reason in err
 * (starting with the key at fault), CEB_ENOMEM. The caller owns *out. */
int aa_auth_new(const ceb_host *host, ceb_instance *inst, const ceb_config *cfg,
                const char *origin_url, int allow_http, aa_auth **out,
                char *err, size_t errlen);
void aa_auth_free(aa_auth *a);

/* Sets a bearer token on easy for url when url is of the configured
 * origin (fetching an OAuth2 token first when none is valid, on a handle of
 * its own with o's TLS policy); sets nothing for another origin. *gen
 * identifies the token used (0: none). 0, or -1 with the reason in err. */
int aa_auth_apply(aa_auth *a, CURL *easy, const char *url,
                  const struct aa_http_opts *o, uint64_t *gen, char *err,
                  size_t errlen);
/* The origin answered 401 to the token gen: drops it when it can be
 * fetched again. 1 when a retry may get a new token, else 0. */
int aa_auth_refused(aa_auth *a, uint64_t gen);

#endif
