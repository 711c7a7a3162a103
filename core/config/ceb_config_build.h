/* Host-internal constructors of the SDK's ceb_config (exported from libceb
 * with the ceb_ prefix, but not part of the public SDK promise). The config
 * loader builds one ceb_config per section; plugins only read them. */
#ifndef CEB_CONFIG_BUILD_H
#define CEB_CONFIG_BUILD_H

#include <ceb/config.h>

/* New empty config for a section named name (may be NULL). */
ceb_config *ceb_config_new(const char *name);
void ceb_config_free(ceb_config *cfg);
/* Appends key = value set at file:line (raw text, before checking).
 * secret marks a value never to be printed. */
int ceb_config_put(ceb_config *cfg, const char *key, const char *value,
                   const char *file, int line);
/* Attaches the spec used for defaults and typed reads (borrowed, static). */
void ceb_config_set_spec(ceb_config *cfg, const ceb_config_spec *spec,
                         const ceb_config_spec *spec2);
/* Replaces the value of key (e.g. a resolved secret or absolute path). */
int ceb_config_replace(ceb_config *cfg, const char *key, const char *value);
/* Number of raw entries and the i-th one (in file order). */
size_t ceb_config_count(const ceb_config *cfg);
int ceb_config_entry(const ceb_config *cfg, size_t i, const char **key,
                     const char **value, const char **file, int *line);

#endif
