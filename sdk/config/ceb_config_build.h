/* Host-internal constructors of the SDK's ceb_config: exported from libceb
 * under the cebi_ prefix, each listed by name in sdk/ceb.map, and not part
 * of the public SDK (include/ceb/). The config loader builds one ceb_config
 * per section; plugins only read them. */
#ifndef CEB_CONFIG_BUILD_H
#define CEB_CONFIG_BUILD_H

#include <ceb/config.h>

/* Building (new, put, set_spec, replace) is single-threaded and happens
 * before the config is handed out; afterwards it is read-only and every
 * reader may run on any thread. Strings are copied in; returned strings are
 * borrowed from the config. */

/* New empty config for a section named name (may be NULL; copied). NULL on
 * allocation failure. */
ceb_config *cebi_config_new(const char *name);
/* Frees cfg and everything borrowed from it. NULL is ignored. */
void cebi_config_free(ceb_config *cfg);
/* Appends key = value set at file:line (raw text, before checking; file may
 * be NULL). CEB_OK, CEB_EINVAL or CEB_ENOMEM. Whether a value is secret is
 * known from the spec: the checker never prints SECRET values. */
int cebi_config_put(ceb_config *cfg, const char *key, const char *value,
                    const char *file, int line);
/* Attaches the specs used for defaults and typed reads (borrowed, must
 * outlive cfg; either may be NULL). spec is searched before spec2. */
void cebi_config_set_spec(ceb_config *cfg, const ceb_config_spec *spec,
                          const ceb_config_spec *spec2);
/* The spec entry that covers key (exact, else a PREFIX entry), or NULL. */
const ceb_config_spec *cebi_config_spec_of(const ceb_config *cfg,
                                           const char *key);
/* Replaces the value of the first entry of key (e.g. a resolved secret or
 * absolute path). CEB_ENOTFOUND when key is not set. The old text is wiped. */
int cebi_config_replace(ceb_config *cfg, const char *key, const char *value);
/* Same for the i-th entry (MULTI keys have several). */
int cebi_config_replace_at(ceb_config *cfg, size_t i, const char *value);
/* Number of raw entries and the i-th one (in file order). Any out pointer
 * may be NULL. CEB_ENOTFOUND when i is out of range. */
size_t cebi_config_count(const ceb_config *cfg);
int cebi_config_entry(const ceb_config *cfg, size_t i, const char **key,
                      const char **value, const char **file, int *line);

#endif
