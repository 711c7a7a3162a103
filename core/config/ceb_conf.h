/* Loading and checking bridge.d/: INI files (libinih) read in name order,
 * sections [bridge], [source NAME], [sink NAME], [route NAME],
 * [contracts NAME]. Two phases:
 *   ceb_conf_load  - syntax: files, sections, keys, values with file:line;
 *   ceb_conf_check - meaning: every section against the host's spec
 *                    (core/config/ceb_core_spec.h) plus its plugin's spec,
 *                    types, ranges, required keys, unknown keys (with a
 *                    "did you mean" hint), duplicates, secrets resolved,
 *                    and references (route from/to/dlq/receipts).
 * Errors always carry file:line and a hint. Secret values are never copied
 * into error messages or logs.
 * Not thread-safe while loading; a checked ceb_conf is read-only. */
#ifndef CEB_CONF_H
#define CEB_CONF_H

#include <stddef.h>
#include <stdio.h>

#include <ceb/config.h>

#include "config/ceb_host_cfg.h"

typedef struct ceb_conf_error {
  char file[256];
  int line; /* 0 when the error is about a file or the whole directory */
  char message[256];
  char hint[256]; /* may be empty */
} ceb_conf_error;

#define CEB_CONF_MAX_ERRORS 64
/* Bounds that keep checking linear in practice; real configs are far
 * smaller. Exceeding them is a load error. */
#define CEB_CONF_MAX_SECTIONS 1024
#define CEB_CONF_MAX_KEYS 1024 /* per section, [bridge] merged */

typedef struct ceb_conf_errors {
  size_t count; /* may exceed CEB_CONF_MAX_ERRORS; only that many kept */
  ceb_conf_error items[CEB_CONF_MAX_ERRORS];
} ceb_conf_errors;

typedef struct ceb_conf_section {
  char *kind; /* "bridge", "source", "sink", "route", "contracts" */
  char *name; /* NULL for [bridge] */
  char *file; /* path of the file that opened the section */
  int line;
  ceb_config *cfg; /* values; typed and checked after ceb_conf_check */
  /* Bound by ceb_conf_check (core/config/ceb_host_cfg.h): plugin of a
   * [source]/[sink]/[contracts] section (NULL otherwise), and the host's
   * typed keys of the section's kind. */
  const char *plugin, *plugin_origin;
  ceb_host_cfg host;
} ceb_conf_section;

typedef struct ceb_conf {
  char *dir;
  ceb_conf_section *sections; /* in file order; [bridge] sections merged */
  size_t count;
  ceb_config *empty_bridge; /* internal: ceb_conf_bridge without [bridge] */
  ceb_bridge_cfg empty_bridge_conf; /* internal: its typed defaults */
} ceb_conf;

/* Reads every *.conf in dir (not hidden files) in name order (strcmp). errs
 * is cleared first. CEB_OK with *out owned by the caller (ceb_conf_free),
 * or CEB_ECONFIG / CEB_ENOMEM with errs filled and *out NULL. Syntax only:
 * keys are not judged until ceb_conf_check. The host's typed fields
 * (ceb_conf_section's plugin and host, ceb_conf_bridge_cfg) already hold
 * the values as loaded - for commands that read a few host keys of a
 * config they do not run (health, the ops commands' store) and for
 * plugin_dir, which the checker itself needs: secrets are still references,
 * relative paths still relative, and unset keys or values that do not
 * parse read as defaults (their *_origin fields say "default").
 * ceb_conf_check binds the final values. */
int ceb_conf_load(const char *dir, ceb_conf **out, ceb_conf_errors *errs);

/* The spec of the plugin behind a source/sink/contracts section, or NULL
 * after adding an error to errs (plugin missing, lacks the role...). Only
 * called for sections that set a non-empty plugin key. A plugin without
 * keys must return an empty (END-only) spec, not NULL: after NULL the
 * section's unknown keys cannot be judged and are not reported. */
typedef const ceb_config_spec *(*ceb_conf_plugin_spec_fn)(
    void *arg, const ceb_conf_section *section, ceb_conf_errors *errs);

/* Checks every section. errs is cleared first; every error is collected
 * (not only the first). Resolves SECRET references and makes relative PATH
 * values absolute in place, and attaches the specs to each section's cfg
 * so typed getters see defaults. plugin_spec may be NULL: then only the
 * host's keys of plugin sections are checked. CEB_OK or CEB_ECONFIG with
 * errs filled (the conf must then be freed, not used). Call once per
 * loaded conf: resolved values are not references any more. */
int ceb_conf_check(ceb_conf *conf, ceb_conf_plugin_spec_fn plugin_spec,
                   void *arg, ceb_conf_errors *errs);

/* Finds a section; name NULL for [bridge]. Borrowed. */
const ceb_conf_section *ceb_conf_find(const ceb_conf *conf, const char *kind,
                                      const char *name);
/* The [bridge] section's config (an empty one when absent). */
const ceb_config *ceb_conf_bridge(const ceb_conf *conf);
/* The [bridge] section's typed keys (the defaults when absent); NULL only
 * for a NULL conf. Valid after ceb_conf_check. */
const ceb_bridge_cfg *ceb_conf_bridge_cfg(const ceb_conf *conf);

void ceb_conf_free(ceb_conf *conf);

/* Adds an error (printf-style message) to errs. */
void ceb_conf_error_add(ceb_conf_errors *errs, const char *file, int line,
                        const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prints every error as "file:line: message (hint)" to f. */
void ceb_conf_errors_print(const ceb_conf_errors *errs, FILE *f);

/* Writes the Markdown config reference for the host sections and the given
 * plugin specs to f (used by `cebridge config-reference` and the docs
 * staleness test). */
typedef struct ceb_conf_plugin_ref {
  const char *plugin;
  const char *description;
  const ceb_config_spec *source, *sink, *contracts;
} ceb_conf_plugin_ref;
int ceb_conf_write_reference(FILE *f, const ceb_conf_plugin_ref *plugins,
                             size_t count);

#endif
