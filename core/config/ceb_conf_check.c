/* ceb_conf_check: every section against the host spec of its kind plus the
 * spec of its plugin. Secrets are resolved and relative paths made absolute
 * in place (cebi_config_replace_at), so plugins read final values. */
#include "config/ceb_conf_internal.h"
#include "config/ceb_core_spec.h"
#include "config/ceb_host_cfg.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sect_ctx {
  ceb_conf_section *s;
  ceb_conf_errors *errs;
  const char *base; /* absolute config directory */
  char label[200];  /* "[source intermediary]" */
  const ceb_config_spec *common, *plugin;
  int plugin_known; /* plugin spec available: unknown keys can be judged */
} sect_ctx;

static const ceb_config_spec *common_spec(const char *kind) {
  if (strcmp(kind, "bridge") == 0) return ceb_spec_bridge;
  if (strcmp(kind, "route") == 0) return ceb_spec_route;
  if (strcmp(kind, "source") == 0) return ceb_spec_source_common;
  if (strcmp(kind, "sink") == 0) return ceb_spec_sink_common;
  return ceb_spec_contracts_common;
}

static void unknown_key(sect_ctx *c, const char *key, const char *file,
                        int line) {
  ceb_conf_suggest sg;
  ceb_conf_suggest_init(&sg, key);
  const ceb_config_spec *specs[2] = {c->common, c->plugin};
  for (int k = 0; k < 2; k++)
    for (const ceb_config_spec *sp = specs[k]; sp && sp->key; sp++)
      if (!(sp->flags & CEB_CFG_PREFIX)) ceb_conf_suggest_add(&sg, sp->key);
  char hint[128] = "";
  if (sg.best)
    snprintf(hint, sizeof hint, "did you mean '%s'?", sg.best);
  else
    snprintf(hint, sizeof hint, "see docs/config-reference.md");
  ceb_conf_error_add(c->errs, file, line, hint, "unknown key '%.64s' in %s",
                     key, c->label);
}

/* base + "/" + rel, malloc'd. */
static char *path_join(const char *base, const char *rel) {
  size_t n = strlen(base) + strlen(rel) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", base, rel);
  return p;
}

/* Resolves ${ENV} and file:PATH references of a SECRET entry in place
 * (ceb_secret_resolve; relative paths from the config directory). A
 * literal value stays as it is. Returns 0 when an error was added. */
static int secret_resolve(sect_ctx *c, size_t i, const char *key,
                          const char *value, const char *file, int line) {
  char *secret = NULL;
  char why[512];
  ceb_secret_kind kind =
      ceb_secret_resolve(value, c->base, &secret, why, sizeof why);
  if (kind == CEB_SECRET_ERROR) {
    ceb_conf_error_add(c->errs, file, line, NULL, "%s, for '%.64s' in %s", why,
                       key, c->label);
    return 0;
  }
  if (kind == CEB_SECRET_LITERAL) return 1;
  int rc = cebi_config_replace_at(c->s->cfg, i, secret);
  ceb_secret_free(secret);
  if (rc != CEB_OK) {
    ceb_conf_error_add(c->errs, file, line, NULL, "out of memory");
    return 0;
  }
  return 1;
}

/* [bridge] instance: what is safe in a log line, a label and a column. */
static int instance_ok(const char *v) {
  size_t n = strlen(v);
  if (n == 0 || n > 127) return 0;
  for (const char *p = v; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("._-:", *p)) return 0;
  return 1;
}

static void check_entry(sect_ctx *c, size_t i) {
  const char *key, *value, *file;
  int line;
  ceb_config *cfg = c->s->cfg;
  cebi_config_entry(cfg, i, &key, &value, &file, &line);
  const ceb_config_spec *spec = cebi_config_spec_of(cfg, key);
  if (!spec) {
    if (c->plugin_known) unknown_key(c, key, file, line);
    return;
  }
  if ((spec->flags & CEB_CFG_PREFIX) && strlen(key) == strlen(spec->key)) {
    char hint[96];
    snprintf(hint, sizeof hint, "e.g. %.64sNAME = value", spec->key);
    ceb_conf_error_add(c->errs, file, line, hint,
                       "key '%.64s' needs a name after the prefix in %s", key,
                       c->label);
    return;
  }
  if (!(spec->flags & CEB_CFG_MULTI)) {
    for (size_t j = 0; j < i; j++) {
      const char *k2, *f2;
      int l2;
      cebi_config_entry(cfg, j, &k2, NULL, &f2, &l2);
      if (strcmp(k2, key) == 0) {
        ceb_conf_error_add(c->errs, file, line, "set each key once",
                           "duplicate key '%.64s' in %s, first set at "
                           "%.100s:%d",
                           key, c->label, f2 ? f2 : "?", l2);
        return;
      }
    }
  }
  if ((spec->flags & CEB_CFG_SECRET) &&
      !secret_resolve(c, i, key, value, file, line))
    return;
  cebi_config_entry(cfg, i, NULL, &value, NULL, NULL); /* may be resolved */
  char label[300], msg[256], hint[256];
  snprintf(label, sizeof label, "'%.64s' in %s", key, c->label);
  if (ceb_conf_value_check(spec, value, label, msg, sizeof msg, hint,
                           sizeof hint) != CEB_OK) {
    ceb_conf_error_add(c->errs, file, line, hint, "%s", msg);
    return;
  }
  if (strcmp(c->s->kind, "bridge") == 0 && strcmp(key, "instance") == 0 &&
      !instance_ok(value)) {
    ceb_conf_error_add(c->errs, file, line, "e.g. instance = bridge-1",
                       "'instance' in %s must be 1 to 127 letters, digits "
                       "or . _ - : (it names this bridge in logs, metrics "
                       "labels and the store)",
                       c->label);
    return;
  }
  if (strcmp(c->s->kind, "bridge") == 0 && strcmp(key, "store") == 0 &&
      strncmp(value, "sqlite:", 7) == 0) {
    /* the SQLite engine's spec prefix (core/store/store_select.c): the
     * rest is the file, which the host reads as any path (a plain path is
     * SQLite too) */
    char *rest = strdup(value + 7);
    int rc = rest ? cebi_config_replace_at(cfg, i, rest) : CEB_ENOMEM;
    free(rest);
    if (rc != CEB_OK) {
      ceb_conf_error_add(c->errs, file, line, NULL, "out of memory");
      return;
    }
    cebi_config_entry(cfg, i, NULL, &value, NULL, NULL);
    if (!*value) {
      ceb_conf_error_add(c->errs, file, line, "e.g. store = sqlite:store.db",
                         "'store' in %s names no file after sqlite:", c->label);
      return;
    }
  }
  /* a database server's store spec is no path (and may hold a password:
   * never joined to a file name) */
  int server = strcmp(c->s->kind, "bridge") == 0 && strcmp(key, "store") == 0 &&
               !ceb_store_spec_is_file(value);
  if (spec->type == CEB_CFG_PATH && value[0] != '/' && !server) {
    char *abs = path_join(c->base, value);
    if (!abs || cebi_config_replace_at(cfg, i, abs) != CEB_OK)
      ceb_conf_error_add(c->errs, file, line, NULL, "out of memory");
    free(abs);
  }
}

static void check_required(sect_ctx *c) {
  const ceb_config_spec *specs[2] = {c->common, c->plugin};
  for (int k = 0; k < 2; k++) {
    for (const ceb_config_spec *sp = specs[k]; sp && sp->key; sp++) {
      if (!(sp->flags & CEB_CFG_REQUIRED) || (sp->flags & CEB_CFG_PREFIX))
        continue;
      size_t n = cebi_config_count(c->s->cfg), j;
      for (j = 0; j < n; j++) {
        const char *key;
        cebi_config_entry(c->s->cfg, j, &key, NULL, NULL, NULL);
        if (strcmp(key, sp->key) == 0) break;
      }
      if (j == n) {
        char hint[256];
        snprintf(hint, sizeof hint, "%.250s",
                 sp->description ? sp->description : "");
        ceb_conf_error_add(c->errs, c->s->file, c->s->line, hint,
                           "missing required key '%s' in %s", sp->key,
                           c->label);
      }
    }
  }
}

/* A binding the spec lacks is a bug of the host's tables: reported like a
 * config error so that it cannot go unnoticed. */
static void bind_host(const ceb_conf_section *s,
                      const ceb_config_binding *table, void *base,
                      ceb_conf_errors *errs) {
  char why[256];
  if (ceb_config_bind(s->cfg, table, base, why, sizeof why) != CEB_OK)
    ceb_conf_error_add(errs, s->file, s->line, NULL, "internal: %s", why);
}

static void bind_section(ceb_conf_section *s, ceb_conf_errors *errs) {
  if (strcmp(s->kind, "bridge") == 0) {
    bind_host(s, ceb_bind_bridge, &s->host.bridge, errs);
    s->host.bridge.cfg = s->cfg;
  } else if (strcmp(s->kind, "route") == 0) {
    bind_host(s, ceb_bind_route, &s->host.route, errs);
    s->host.route.cfg = s->cfg;
  } else {
    bind_host(s, ceb_bind_plugin_section, s, errs);
    if (strcmp(s->kind, "source") == 0)
      bind_host(s, ceb_bind_source, &s->host.source, errs);
    else if (strcmp(s->kind, "sink") == 0)
      bind_host(s, ceb_bind_sink, &s->host.sink, errs);
  }
}

static void check_section(ceb_conf_section *s, ceb_conf_plugin_spec_fn fn,
                          void *arg, const char *base, ceb_conf_errors *errs) {
  sect_ctx c = {0};
  c.s = s;
  c.errs = errs;
  c.base = base;
  if (s->name)
    snprintf(c.label, sizeof c.label, "[%s %s]", s->kind, s->name);
  else
    snprintf(c.label, sizeof c.label, "[%s]", s->kind);
  c.common = common_spec(s->kind);
  int plugin_kind =
      strcmp(s->kind, "bridge") != 0 && strcmp(s->kind, "route") != 0;
  c.plugin_known = !plugin_kind;
  /* plugin first: the plugin spec callback reads s->plugin. */
  cebi_config_set_spec(s->cfg, c.common, NULL);
  if (plugin_kind) bind_host(s, ceb_bind_plugin_section, s, errs);
  if (plugin_kind && s->plugin && *s->plugin && fn) {
    c.plugin = fn(arg, s, errs);
    c.plugin_known = c.plugin != NULL;
  }
  cebi_config_set_spec(s->cfg, c.common, c.plugin);
  size_t n = cebi_config_count(s->cfg);
  for (size_t i = 0; i < n; i++)
    check_entry(&c, i);
  check_required(&c);
  /* Once every value is final (secrets resolved, paths absolute): the
   * typed fields borrow the config's strings and split lists. */
  bind_section(s, errs);
}

void ceb_conf_bind_raw(ceb_conf *conf) {
  if (!conf) return;
  ceb_conf_errors *ignored = calloc(1, sizeof *ignored);
  if (!ignored) return;
  for (size_t i = 0; i < conf->count; i++) {
    ceb_conf_section *s = &conf->sections[i];
    cebi_config_set_spec(s->cfg, common_spec(s->kind), NULL);
    bind_section(s, ignored);
  }
  cebi_config_set_spec(conf->empty_bridge, ceb_spec_bridge, NULL);
  ceb_conf_section empty = {
      .kind = "bridge", .file = conf->dir, .cfg = conf->empty_bridge};
  bind_section(&empty, ignored);
  conf->empty_bridge_conf = empty.host.bridge;
  free(ignored);
}

int ceb_conf_check(ceb_conf *conf, ceb_conf_plugin_spec_fn plugin_spec,
                   void *arg, ceb_conf_errors *errs) {
  if (!errs) return CEB_EINVAL;
  memset(errs, 0, sizeof *errs);
  if (!conf) {
    ceb_conf_error_add(errs, "", 0, NULL, "no configuration loaded");
    return CEB_ECONFIG;
  }
  /* Relative paths are relative to the directory of the file that sets
   * them: every file lives in conf->dir. */
  char *base = realpath(conf->dir, NULL);
  if (!base) base = strdup(conf->dir);
  if (!base) {
    ceb_conf_error_add(errs, conf->dir, 0, NULL, "out of memory");
    return CEB_ENOMEM;
  }
  for (size_t i = 0; i < conf->count; i++)
    check_section(&conf->sections[i], plugin_spec, arg, base, errs);
  cebi_config_set_spec(conf->empty_bridge, ceb_spec_bridge, NULL);
  ceb_conf_section empty = {
      .kind = "bridge", .file = conf->dir, .cfg = conf->empty_bridge};
  bind_section(&empty, errs);
  conf->empty_bridge_conf = empty.host.bridge;
  ceb_conf_check_routes(conf, errs);
  free(base);
  return errs->count ? CEB_ECONFIG : CEB_OK;
}
