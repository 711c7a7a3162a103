/* The TLS policy (ceb/tls.h) applied to the http plugin's listeners
 * (libmicrohttpd on GnuTLS) and clients (libcurl on OpenSSL): the webhook
 * sink and its OAuth2 token requests, and the JWKS fetch. The pull plugin
 * compiles this file too (it serves with libmicrohttpd and fetches JWKS).
 *
 * Threading: load/free on the control thread; http_tls_client_apply from
 * any thread (it only reads the settings). */
#ifndef HTTP_TLS_H
#define HTTP_TLS_H

#include <ceb/ceb.h>
#include <curl/curl.h>

/* A client's TLS settings, copied from the config. */
typedef struct http_tls_client {
  int min_version; /* 12 or 13 */
  char *ciphers, *ciphersuites;
  char *ca_file, *client_cert, *client_key;
} http_tls_client;

/* The GnuTLS priority string of a listener under prefix ("" or
 * "admin."), checked with GnuTLS: CEB_OK with *out (malloc'd, caller
 * frees), or CEB_ECONFIG with the reason and the key's file:line logged. */
int http_tls_priority(const ceb_host *host, ceb_instance *inst,
                      const ceb_config *cfg, const char *prefix, char **out);

/* Copies the client keys under prefix ("" or "oauth2."). CEB_OK or
 * CEB_ENOMEM (t is then freed). */
int http_tls_client_load(http_tls_client *t, const ceb_config *cfg,
                         const char *prefix);
void http_tls_client_free(http_tls_client *t);

/* Sets minimum version, cipher lists, CA file, client certificate and
 * peer verification on e. CURLE_OK or the first failing setopt's code
 * (an unknown cipher is reported by the transfer itself). */
CURLcode http_tls_client_apply(CURL *e, const http_tls_client *t);

#endif
