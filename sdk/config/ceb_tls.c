/* The TLS policy strings shared by the listeners and clients (ceb/tls.h). */
#include <ceb/tls.h>

#include <stdio.h>
#include <string.h>

/* ceb_config_str of prefix + name. */
static const char *get(const ceb_config *cfg, const char *prefix,
                       const char *name) {
  char key[128];
  int n = snprintf(key, sizeof key, "%s%s", prefix ? prefix : "", name);
  if (n < 0 || (size_t)n >= sizeof key) return NULL;
  return ceb_config_str(cfg, key);
}

int ceb_tls_min_version(const ceb_config *cfg, const char *prefix) {
  const char *v = get(cfg, prefix, "tls.min_version");
  return v && strcmp(v, "1.3") == 0 ? 13 : 12;
}

int ceb_tls_priority(const ceb_config *cfg, const char *prefix, char *out,
                     size_t size) {
  const char *base = get(cfg, prefix, "tls.priority");
  if (!base || !*base) base = CEB_TLS_PRIORITY_DEFAULT;
  /* Removing a version the base does not enable is harmless, so whatever
   * the operator's priority string enables, nothing below the minimum
   * survives. */
  int n =
      snprintf(out, size, "%s:-VERS-SSL3.0:-VERS-TLS1.0:-VERS-TLS1.1%s", base,
               ceb_tls_min_version(cfg, prefix) >= 13 ? ":-VERS-TLS1.2" : "");
  return n >= 0 && (size_t)n < size ? CEB_OK : CEB_EINVAL;
}
