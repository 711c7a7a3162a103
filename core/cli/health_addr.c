#include "cli/health_addr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "admin/ceb_admin_tls.h"
#include "config/ceb_conf.h"

/* The port the bridge wrote to admin.port_file; relative paths are relative
 * to the config directory, as ceb_conf_check resolves them for `run`. */
static ceb_health_addr_rc read_port_file(const char *dir, const char *path,
                                         int *port, char *why, size_t whylen) {
  char full[4096];
  if (path[0] == '/') {
    snprintf(full, sizeof full, "%s", path);
  } else {
    char *base = realpath(dir, NULL);
    snprintf(full, sizeof full, "%s/%s", base ? base : dir, path);
    free(base);
  }
  FILE *f = fopen(full, "r");
  if (!f) {
    snprintf(why, whylen,
             "admin.port_file %s cannot be read (is the bridge running?)",
             full);
    return CEB_HEALTH_ADDR_DOWN;
  }
  int n = fscanf(f, "%d", port);
  fclose(f);
  if (n != 1 || *port <= 0 || *port > 65535) {
    snprintf(why, whylen, "admin.port_file %s holds no port", full);
    return CEB_HEALTH_ADDR_DOWN;
  }
  return CEB_HEALTH_ADDR_OK;
}

ceb_health_addr_rc ceb_health_admin_url(const char *dir, char *url,
                                        size_t urllen, char *pin, size_t pinlen,
                                        char *why, size_t whylen) {
  pin[0] = '\0';
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  if (ceb_conf_load(dir, &conf, &errs) != CEB_OK) {
    const ceb_conf_error *e = &errs.items[0];
    if (errs.count && e->line)
      snprintf(why, whylen, "%s:%d: %s", e->file, e->line, e->message);
    else if (errs.count)
      snprintf(why, whylen, "%s: %s", e->file[0] ? e->file : dir, e->message);
    else
      snprintf(why, whylen, "%s: cannot read the config", dir);
    return CEB_HEALTH_ADDR_CONFIG;
  }
  /* Not checked (health must not need every plugin): the values as
   * loaded, else their defaults. */
  const ceb_bridge_cfg *b = ceb_conf_bridge_cfg(conf);
  const char *listen = b->admin.listen;
  ceb_health_addr_rc rc = CEB_HEALTH_ADDR_CONFIG;
  char host[256];
  int port = 0;
  if (!listen || !*listen || strcmp(listen, "off") == 0) {
    snprintf(why, whylen,
             "%s: admin.listen is off: the bridge has no admin API to ask",
             dir);
    goto out;
  }
  if (ceb_parse_address(listen, host, sizeof host, &port) != CEB_OK) {
    snprintf(why, whylen, "%s: admin.listen '%s' is not host:port", dir,
             listen);
    goto out;
  }
  if (port == 0) {
    const char *pf = b->admin.port_file;
    if (!pf || !*pf) {
      snprintf(why, whylen,
               "%s: admin.listen has port 0 and no admin.port_file names "
               "the port the bridge picked",
               dir);
      goto out;
    }
    rc = read_port_file(dir, pf, &port, why, whylen);
    if (rc != CEB_HEALTH_ADDR_OK) goto out;
  }
  /* A wildcard listener is reached on loopback; everything else as set. */
  const char *ask = host;
  if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "localhost") == 0)
    ask = "127.0.0.1";
  else if (strcmp(host, "::") == 0)
    ask = "::1";
  /* relative to the config directory, as ceb_conf_check resolves it */
  char *base = realpath(dir, NULL);
  int tls = ceb_admin_tls_pin(b, base ? base : dir, pin, pinlen, why, whylen);
  free(base);
  if (tls < 0) goto out;
  const char *scheme = tls ? "https" : "http";
  if (strchr(ask, ':'))
    snprintf(url, urllen, "%s://[%s]:%d", scheme, ask, port);
  else
    snprintf(url, urllen, "%s://%s:%d", scheme, ask, port);
  rc = CEB_HEALTH_ADDR_OK;
out:
  ceb_conf_free(conf);
  return rc;
}
