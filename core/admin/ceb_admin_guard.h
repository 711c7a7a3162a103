/* Who may drive the admin API: the Host and Origin checks that keep web
 * pages out (cross-site requests, DNS rebinding) and the constant-time
 * bearer token comparison.
 *
 * A guard is built once when the listener is bound and is read-only after
 * that, so MHD's threads may share it without locks. */
#ifndef CEB_ADMIN_GUARD_H
#define CEB_ADMIN_GUARD_H

#include <stddef.h>

typedef struct ceb_admin_guard ceb_admin_guard;

/* The Host values accepted for a listener bound to listen_host (as written
 * in admin.listen; a wildcard such as 0.0.0.0 or :: adds nothing) on the
 * bound port: listen_host:port, localhost:port, 127.0.0.1:port, [::1]:port
 * and each of allowed[] (admin.allowed_hosts: "name" accepts "name" and
 * "name:port"; "name:N" accepts exactly that). NULL when out of memory. */
ceb_admin_guard *ceb_admin_guard_new(const char *listen_host, int port,
                                     const char *const *allowed,
                                     size_t nallowed);
void ceb_admin_guard_free(ceb_admin_guard *g);

/* 1 when a Host header value names this listener (case-insensitive). NULL
 * or empty is refused. */
int ceb_admin_guard_host_ok(const ceb_admin_guard *g, const char *host);

/* 1 when an Origin header value is this listener's own origin
 * (http:// or https:// followed by an accepted Host). "null", other
 * schemes, paths and foreign hosts are refused. */
int ceb_admin_guard_origin_ok(const ceb_admin_guard *g, const char *origin);

/* 1 when an Authorization header value is "Bearer <token>" with exactly
 * this token. Compares SHA-256 digests with CRYPTO_memcmp, so the time
 * taken says nothing about the token, its length included. */
int ceb_admin_bearer_ok(const char *token, const char *authorization);

#endif
