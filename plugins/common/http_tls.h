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
#include <microhttpd.h>

/* A client's TLS settings, copied from the config. */
typedef struct http_tls_client {
  int min_version; /* 12 or 13 */
  char *ciphers, *ciphersuites;
  char *ca_file, *client_cert, *client_key;
} http_tls_client;

/* A listener's TLS material (PEM text) and priority string. */
typedef struct http_tls_listener {
  char *cert, *key, *client_ca; /* NULL: unset (no cert: plain HTTP) */
  char *priority;               /* GnuTLS priority string */
} http_tls_listener;

/* Reads prefix tls.cert, tls.key, tls.client_ca (PEM files up to 1 MiB)
 * and builds the priority (http_tls_priority). cert and key go together,
 * client_ca needs them. CEB_OK, CEB_ECONFIG with the reason logged, or
 * CEB_ENOMEM; t holds what was read either way (free it). */
int http_tls_listener_load(const ceb_host *host, ceb_instance *inst,
                           const ceb_config *cfg, const char *prefix,
                           http_tls_listener *t);
/* Frees t, overwriting the key. */
void http_tls_listener_free(http_tls_listener *t);
/* With a certificate: adds MHD_USE_TLS to *flags and the certificate, key,
 * trust and priority options at opts[*n] (at most 4, *n advanced). */
void http_tls_listener_options(const http_tls_listener *t, unsigned *flags,
                               struct MHD_OptionItem *opts, size_t *n);
/* 1 when the connection's client presented a certificate that verifies
 * against the listener's client_ca; 0 otherwise. Request threads. */
int http_tls_peer_verified(struct MHD_Connection *conn);

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
