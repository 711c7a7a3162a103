/* TLS on the admin API under the bridge's TLS policy (ceb/tls.h): the
 * listener's certificate, key and GnuTLS priority from admin.tls.*, and,
 * for the commands that call the API (cebridge admin, cebridge health), a
 * pin of that certificate's public key, so they trust exactly the bridge
 * whose config they read, whatever names or CA the certificate has.
 * Control thread / CLI only. */
#ifndef CEB_ADMIN_TLS_H
#define CEB_ADMIN_TLS_H

#include <stddef.h>

#include <ceb/config.h>

#include "config/ceb_host_cfg.h"

typedef struct ceb_admin_tls {
  char *cert, *key; /* PEM text; NULL: plain HTTP */
  char *priority;   /* GnuTLS priority string */
} ceb_admin_tls;

/* What can be checked without the files: admin.tls.cert and admin.tls.key
 * set together or not at all, and a priority string GnuTLS accepts.
 * CEB_OK, or CEB_ECONFIG with the reason in err and the origin ("file:line"
 * or "default") of the key at fault in *origin. Used by ceb_bridge_load, so
 * that `check` reports it with file:line and `run` refuses the same. */
int ceb_admin_tls_check(const ceb_bridge_cfg *b, const char **origin, char *err,
                        size_t errlen);

/* ceb_admin_tls_check, then reads the certificate and key. CEB_OK, or
 * CEB_ECONFIG / CEB_ENOMEM with the reason (key and file:line) in err; t is
 * then empty. */
int ceb_admin_tls_load(const ceb_bridge_cfg *b, ceb_admin_tls *t, char *err,
                       size_t errlen);
/* Frees t, overwriting the key. */
void ceb_admin_tls_free(ceb_admin_tls *t);

/* The admin API's URL scheme for b and, with TLS, libcurl's pin
 * ("sha256//BASE64" of the certificate's SubjectPublicKeyInfo) in pin.
 * A relative admin.tls.cert is taken from base_dir (NULL: as it is; a
 * checked config holds absolute paths). Returns 0 for plain HTTP (pin ""),
 * 1 for HTTPS with the pin, -1 with the reason in err. */
int ceb_admin_tls_pin(const ceb_bridge_cfg *b, const char *base_dir, char *pin,
                      size_t pinlen, char *err, size_t errlen);

#endif
