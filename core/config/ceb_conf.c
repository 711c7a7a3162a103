/* Lookup and release of a loaded ceb_conf. */
#include "config/ceb_conf_internal.h"

#include <stdlib.h>
#include <string.h>

const ceb_conf_section *ceb_conf_find(const ceb_conf *conf, const char *kind,
                                      const char *name) {
  if (!conf || !kind) return NULL;
  for (size_t i = 0; i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    if (strcmp(s->kind, kind) != 0) continue;
    if (!name ? !s->name : (s->name && strcmp(s->name, name) == 0)) return s;
  }
  return NULL;
}

const ceb_config *ceb_conf_bridge(const ceb_conf *conf) {
  const ceb_conf_section *s = ceb_conf_find(conf, "bridge", NULL);
  if (s) return s->cfg;
  return conf ? conf->empty_bridge : NULL;
}

const ceb_bridge_cfg *ceb_conf_bridge_cfg(const ceb_conf *conf) {
  const ceb_conf_section *s = ceb_conf_find(conf, "bridge", NULL);
  if (s) return &s->host.bridge;
  return conf ? &conf->empty_bridge_conf : NULL;
}

void ceb_conf_free(ceb_conf *conf) {
  if (!conf) return;
  for (size_t i = 0; i < conf->count; i++) {
    ceb_conf_section *s = &conf->sections[i];
    free(s->kind);
    free(s->name);
    free(s->file);
    cebi_config_free(s->cfg);
  }
  free(conf->sections);
  cebi_config_free(conf->empty_bridge);
  free(conf->dir);
  free(conf);
}
