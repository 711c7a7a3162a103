/* cebridge public SDK: one TLS policy for every listener and client.
 *
 * Every TLS endpoint of the bridge accepts TLS 1.2 or newer only and, by
 * default, only key exchanges with forward secrecy (no static RSA). The
 * keys below give every plugin (and the host's admin API) the same config
 * shape under a prefix ("" for a plugin's own tls.*, "oauth2." for the
 * token/JWKS fetches, "admin." for the admin API):
 *
 *   listeners (libmicrohttpd, GnuTLS):  tls.min_version, tls.priority
 *   clients (libcurl / OpenSSL):        tls.min_version, tls.ciphers,
 *                                       tls.ciphersuites
 *
 * plus the certificate files each side already names (listeners: tls.cert,
 * tls.key, tls.client_ca; clients: tls.ca_file, tls.client_cert,
 * tls.client_key). The spec macros expand to ceb_config_spec entries so
 * that the keys, their types and their descriptions are the same
 * everywhere; the functions only compute strings and numbers (no TLS
 * library is linked into the SDK). */
#ifndef CEB_TLS_H
#define CEB_TLS_H

#include <stddef.h>

#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GnuTLS priority base used when tls.priority is not set: GnuTLS's NORMAL
 * set without the static RSA key exchange (no forward secrecy). */
#define CEB_TLS_PRIORITY_DEFAULT "NORMAL:-RSA"
/* OpenSSL cipher list (TLS 1.2) used when tls.ciphers is not set:
 * OpenSSL's defaults without the static RSA key exchange. */
#define CEB_TLS_CIPHERS_DEFAULT "DEFAULT:!kRSA"

/* tls.min_version and tls.priority of a listener under prefix. */
#define CEB_TLS_LISTENER_POLICY_SPEC(prefix)                                   \
  {prefix "tls.min_version",                                                   \
   CEB_CFG_ENUM,                                                               \
   0,                                                                          \
   "1.2",                                                                      \
   0,                                                                          \
   0,                                                                          \
   "1.2|1.3",                                                                  \
   "Lowest TLS version a client may use (TLS 1.0 and 1.1 are never "           \
   "accepted)."},                                                              \
  {                                                                            \
    prefix "tls.priority", CEB_CFG_STRING, 0, CEB_TLS_PRIORITY_DEFAULT, 0, 0,  \
        NULL,                                                                  \
        "GnuTLS priority string for ciphers, key exchanges and TLS 1.3 "       \
        "suites; versions below tls.min_version are removed from it "          \
        "whatever it says."                                                    \
  }

/* tls.cert, tls.key, tls.client_ca of a listener under prefix. */
#define CEB_TLS_LISTENER_FILES_SPEC(prefix)                                    \
  {prefix "tls.cert",                                                          \
   CEB_CFG_PATH,                                                               \
   0,                                                                          \
   NULL,                                                                       \
   0,                                                                          \
   0,                                                                          \
   NULL,                                                                       \
   "PEM server certificate (chain); set with tls.key to serve HTTPS."},        \
      {prefix "tls.key",                                                       \
       CEB_CFG_PATH,                                                           \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "PEM private key of tls.cert (unencrypted; keep the file private)."},   \
  {                                                                            \
    prefix "tls.client_ca", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,                 \
        "PEM CA bundle: when set, clients must present a certificate it "      \
        "signed (mTLS)."                                                       \
  }

/* tls.min_version, tls.ciphers, tls.ciphersuites of a client under
 * prefix. */
#define CEB_TLS_CLIENT_POLICY_SPEC(prefix)                                     \
  {prefix "tls.min_version",                                                   \
   CEB_CFG_ENUM,                                                               \
   0,                                                                          \
   "1.2",                                                                      \
   0,                                                                          \
   0,                                                                          \
   "1.2|1.3",                                                                  \
   "Lowest TLS version accepted from the server (TLS 1.0 and 1.1 are never "   \
   "accepted)."},                                                              \
      {prefix "tls.ciphers",                                                   \
       CEB_CFG_STRING,                                                         \
       0,                                                                      \
       CEB_TLS_CIPHERS_DEFAULT,                                                \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "OpenSSL cipher list for TLS 1.2 (the default leaves out static RSA "   \
       "key exchange, which has no forward secrecy)."},                        \
  {                                                                            \
    prefix "tls.ciphersuites", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,            \
        "OpenSSL TLS 1.3 cipher suites, colon-separated (default: "            \
        "OpenSSL's)."                                                          \
  }

/* tls.ca_file, tls.client_cert, tls.client_key of a client under
 * prefix. */
#define CEB_TLS_CLIENT_FILES_SPEC(prefix)                                      \
  {prefix "tls.ca_file",                                                       \
   CEB_CFG_PATH,                                                               \
   0,                                                                          \
   NULL,                                                                       \
   0,                                                                          \
   0,                                                                          \
   NULL,                                                                       \
   "CA bundle for the server's certificate (default: system store)."},         \
      {prefix "tls.client_cert",                                               \
       CEB_CFG_PATH,                                                           \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "Client certificate (PEM) for mutual TLS."},                            \
  {                                                                            \
    prefix "tls.client_key", CEB_CFG_PATH, CEB_CFG_SECRET, NULL, 0, 0, NULL,   \
        "Private key (PEM) of tls.client_cert."                                \
  }

/* The minimum TLS version under prefix (prefix "tls.min_version"): 12 for
 * TLS 1.2 (also when unset), 13 for TLS 1.3. Reentrant. */
int ceb_tls_min_version(const ceb_config *cfg, const char *prefix);

/* Writes the GnuTLS priority string of a listener under prefix into out:
 * prefix "tls.priority" (or CEB_TLS_PRIORITY_DEFAULT) followed by the
 * removal of every version below prefix "tls.min_version". CEB_OK, or
 * CEB_EINVAL when it does not fit in size. The string is not checked
 * against GnuTLS here: the caller does (gnutls_priority_init) to report a
 * bad priority with its file:line. Reentrant. */
int ceb_tls_priority(const ceb_config *cfg, const char *prefix, char *out,
                     size_t size);

#ifdef __cplusplus
}
#endif
#endif
