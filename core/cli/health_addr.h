/* Where a config directory's admin API can be reached from this machine:
 * the base URL built from [bridge] admin.listen (wildcard addresses asked
 * on loopback) and, for port 0, the port the bridge wrote to
 * admin.port_file. Syntax-level read of the config (ceb_conf_load): secrets
 * such as admin.token are not resolved, so the command works without the
 * environment the bridge runs with. */
#ifndef CEB_HEALTH_ADDR_H
#define CEB_HEALTH_ADDR_H

#include <stddef.h>

typedef enum ceb_health_addr_rc {
  CEB_HEALTH_ADDR_OK = 0,
  CEB_HEALTH_ADDR_DOWN = 1,   /* the bridge looks not started (no port file) */
  CEB_HEALTH_ADDR_CONFIG = 2, /* config unreadable, admin API off, bad value */
} ceb_health_addr_rc;

/* Writes "http://HOST:PORT" (or https:// when admin.tls.cert is set, with
 * the certificate's key pin for libcurl in pin, else "") into url (urllen
 * bytes), or the reason into why. Caller owns the buffers. */
ceb_health_addr_rc ceb_health_admin_url(const char *config_dir, char *url,
                                        size_t urllen, char *pin, size_t pinlen,
                                        char *why, size_t whylen);

#endif
