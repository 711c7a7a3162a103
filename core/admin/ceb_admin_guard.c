/* Host / Origin / bearer checks of the admin API (see ceb_admin_guard.h).
 * Why: a browser on the operator's machine can reach 127.0.0.1. A foreign
 * page's POST carries its own Origin; a DNS-rebound name carries its own
 * Host. Accepting only this listener's names closes both. */
#include "admin/ceb_admin_guard.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct ceb_admin_guard {
  char **hosts; /* exact Host values accepted, lower case */
  size_t n;
};

static int add(ceb_admin_guard *g, const char *h) {
  char **v = realloc(g->hosts, (g->n + 1) * sizeof *v);
  if (!v) return -1;
  g->hosts = v;
  if (!(v[g->n] = strdup(h))) return -1;
  for (char *p = v[g->n]; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  g->n++;
  return 0;
}

/* "name:port", bracketing an IPv6 address. */
static int add_with_port(ceb_admin_guard *g, const char *name, int port) {
  char buf[320];
  int v6 = strchr(name, ':') != NULL && name[0] != '[';
  snprintf(buf, sizeof buf, "%s%s%s:%d", v6 ? "[" : "", name, v6 ? "]" : "",
           port);
  return add(g, buf);
}

/* An allowed_hosts entry carries a port when it ends in ":digits" and is not
 * a bare IPv6 address ("[v6]:N" or "name:N"). */
static int has_port(const char *e) {
  const char *colon = strrchr(e, ':');
  if (!colon || !colon[1]) return 0;
  for (const char *p = colon + 1; *p; p++)
    if (!isdigit((unsigned char)*p)) return 0;
  return e[0] == '[' ? colon > e && colon[-1] == ']' : strchr(e, ':') == colon;
}

ceb_admin_guard *ceb_admin_guard_new(const char *listen_host, int port,
                                     const char *const *allowed,
                                     size_t nallowed) {
  ceb_admin_guard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  int rc = add_with_port(g, "localhost", port) |
           add_with_port(g, "127.0.0.1", port) | add_with_port(g, "::1", port);
  /* A wildcard is no name a client uses: those go in allowed_hosts. */
  if (listen_host && *listen_host && strcmp(listen_host, "0.0.0.0") != 0 &&
      strcmp(listen_host, "::") != 0)
    rc |= add_with_port(g, listen_host, port);
  for (size_t i = 0; i < nallowed; i++) {
    if (!allowed[i] || !*allowed[i]) continue;
    rc |= add(g, allowed[i]);
    if (!has_port(allowed[i])) rc |= add_with_port(g, allowed[i], port);
  }
  if (rc) {
    ceb_admin_guard_free(g);
    return NULL;
  }
  return g;
}

void ceb_admin_guard_free(ceb_admin_guard *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++)
    free(g->hosts[i]);
  free(g->hosts);
  free(g);
}

static int host_n_ok(const ceb_admin_guard *g, const char *h, size_t len) {
  if (!h || len == 0) return 0;
  for (size_t i = 0; i < g->n; i++)
    if (strlen(g->hosts[i]) == len && strncasecmp(g->hosts[i], h, len) == 0)
      return 1;
  return 0;
}

int ceb_admin_guard_host_ok(const ceb_admin_guard *g, const char *host) {
  return g && host && host_n_ok(g, host, strlen(host));
}

int ceb_admin_guard_origin_ok(const ceb_admin_guard *g, const char *origin) {
  if (!g || !origin) return 0;
  /* Both schemes: one host:port is one listener, whichever it speaks. */
  const char *rest = NULL;
  if (strncasecmp(origin, "http://", 7) == 0)
    rest = origin + 7;
  else if (strncasecmp(origin, "https://", 8) == 0)
    rest = origin + 8;
  if (!rest || strpbrk(rest, "/?#@")) return 0;
  return host_n_ok(g, rest, strlen(rest));
}

static int sha256(const char *s, size_t n, unsigned char out[32]) {
  unsigned int len = 0;
  return EVP_Digest(s, n, out, &len, EVP_sha256(), NULL) == 1 && len == 32;
}

int ceb_admin_bearer_ok(const char *token, const char *authorization) {
  if (!token || !*token || !authorization ||
      strncasecmp(authorization, "Bearer ", 7) != 0)
    return 0;
  const char *t = authorization + 7;
  while (*t == ' ')
    t++;
  unsigned char a[32], b[32];
  if (!sha256(token, strlen(token), a) || !sha256(t, strlen(t), b)) return 0;
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}
