/* Where a bridge keeps its local files, and whether a store spec is a
 * file: the few places that derive a directory from [bridge] store (the
 * admin token, the plugins' data/) must not take a PostgreSQL URI apart as
 * if it were a path. */
#include <stdio.h>
#include <string.h>

#include "config/ceb_host_cfg.h"

int ceb_store_spec_is_file(const char *spec) {
  if (!spec) return 0;
  if (strncmp(spec, "sqlite:", 7) == 0) return 1;
  if (strstr(spec, "://")) return 0; /* postgresql://, postgres:// */
  /* libpq's key=value form starts with a keyword and '=' */
  const char *p = spec;
  while (*p == ' ' || *p == '\t')
    p++;
  size_t word = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
  if (word == 0) return 1;
  p += word;
  while (*p == ' ' || *p == '\t')
    p++;
  return *p != '=';
}

void ceb_bridge_state_dir(const ceb_bridge_cfg *b, char *buf, size_t size) {
  if (b->state_dir) {
    snprintf(buf, size, "%s", b->state_dir);
    return;
  }
  const char *store = b->store.path;
  if (!store || !ceb_store_spec_is_file(store)) {
    snprintf(buf, size, "/var/lib/cebridge");
    return;
  }
  if (strncmp(store, "sqlite:", 7) == 0) store += 7;
  const char *slash = strrchr(store, '/');
  if (!slash)
    snprintf(buf, size, ".");
  else if (slash == store)
    snprintf(buf, size, "/");
  else
    snprintf(buf, size, "%.*s", (int)(slash - store), store);
}
