/* Loading half of the bridge: config, plugins, checks, instances. */
#include "bridge/ceb_bridge_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "admin/ceb_admin_tls.h"
#include "config/ceb_core_spec.h"
#include "mapping/ceb_mapping_set.h"

static const ceb_config_spec k_empty_spec[] = {CEB_CONFIG_SPEC_END};

static uint32_t role_of_kind(const char *kind) {
  if (strcmp(kind, "source") == 0) return CEB_ROLE_SOURCE;
  if (strcmp(kind, "sink") == 0) return CEB_ROLE_SINK;
  if (strcmp(kind, "contracts") == 0) return CEB_ROLE_CONTRACTS;
  return 0;
}

/* The file:line of a key from its bound origin ("file:line", or "default":
 * then the section's), for errors about its value. */
static void key_origin(const ceb_conf_section *sec, const char *o, char *file,
                       size_t fsize, int *line) {
  snprintf(file, fsize, "%s", sec->file);
  *line = sec->line;
  const char *colon = o ? strrchr(o, ':') : NULL;
  if (colon && strcmp(o, "default") != 0) {
    snprintf(file, fsize, "%.*s", (int)(colon - o), o);
    *line = atoi(colon + 1);
  }
}

static const ceb_config_spec *
plugin_spec_cb(void *arg, const ceb_conf_section *sec, ceb_conf_errors *errs) {
  ceb_bridge *b = arg;
  uint32_t role = role_of_kind(sec->kind);
  const char *name = sec->plugin;
  char file[256];
  int line;
  key_origin(sec, sec->plugin_origin, file, sizeof file, &line);
  if (!name || !*name) {
    ceb_conf_error_add(errs, sec->file, sec->line,
                       "add e.g. 'plugin = http' to the section",
                       "[%s %s] has no plugin", sec->kind, sec->name);
    return NULL;
  }
  ceb_loaded_plugin *p;
  char err[768];
  if (ceb_loader_load(b->loader, name, &p, err, sizeof err) != CEB_OK) {
    char hint[300];
    snprintf(hint, sizeof hint,
             "plugin directory: %.200s (see 'cebridge plugins')",
             ceb_loader_dir(b->loader));
    ceb_conf_error_add(errs, file, line, hint, "%s", err);
    return NULL;
  }
  if (!(p->desc->roles & role)) {
    char roles[64];
    ceb_conf_error_add(
        errs, file, line, NULL, "plugin '%s' cannot be a %s (it offers: %s)",
        name, sec->kind, ceb_roles_str(p->desc->roles, roles, sizeof roles));
    return NULL;
  }
  const ceb_config_spec *spec = role == CEB_ROLE_SOURCE ? p->desc->config_source
                                : role == CEB_ROLE_SINK
                                    ? p->desc->config_sink
                                    : p->desc->config_contracts;
  return spec ? spec : k_empty_spec;
}

/* A route's "SINK:topic" destination must name a sink whose plugin honours
 * per-delivery topics. */
static void check_topic_sink(ceb_bridge *b, const ceb_conf_section *route,
                             const char *key, const char *v, const char *origin,
                             ceb_conf_errors *errs) {
  if (!v || strcmp(v, "store") == 0) return;
  const char *colon = strchr(v, ':');
  char sink[128];
  snprintf(sink, sizeof sink, "%.*s", colon ? (int)(colon - v) : (int)strlen(v),
           v);
  const ceb_conf_section *s = ceb_conf_find(b->conf, "sink", sink);
  if (!s || !colon) return; /* the config checker reports missing sinks */
  const char *pname = s->plugin;
  ceb_loaded_plugin *p;
  char err[512];
  if (!pname || ceb_loader_load(b->loader, pname, &p, err, sizeof err) != 0)
    return;
  if (!(p->desc->roles & CEB_ROLE_TOPICS)) {
    char file[256];
    int line;
    key_origin(route, origin, file, sizeof file, &line);
    ceb_conf_error_add(errs, file, line,
                       "use 'store', or a sink whose plugin has topics "
                       "(kafka, mqtt)",
                       "%s = %s: plugin '%s' of sink '%s' has no topics", key,
                       v, pname, sink);
  }
}

/* `map` on a section whose plugin does not honour mappings (no
 * CEB_ROLE_MAPPINGS), or on a route to such a sink: refused with the key's
 * file:line rather than ignored (a partner would get CloudEvents, a source
 * would refuse what the program was meant to take). */
static void check_map_support(ceb_bridge *b, const ceb_conf_section *sec,
                              const char *plugin_section, const char *origin,
                              ceb_conf_errors *errs) {
  const ceb_conf_section *ps =
      plugin_section ? ceb_conf_find(b->conf, "sink", plugin_section) : sec;
  ceb_loaded_plugin *p;
  char err[512];
  if (!ps || !ps->plugin ||
      ceb_loader_load(b->loader, ps->plugin, &p, err, sizeof err) != CEB_OK)
    return; /* reported by the checks of that section */
  if (p->desc->roles & CEB_ROLE_MAPPINGS) return;
  char file[256];
  int line;
  key_origin(sec, origin, file, sizeof file, &line);
  if (plugin_section)
    ceb_conf_error_add(errs, file, line,
                       "the http, kafka and mqtt sinks send mapped bodies",
                       "map: sink '%s' (plugin '%s') cannot send a mapped body",
                       ps->name, ps->plugin);
  else
    ceb_conf_error_add(errs, file, line,
                       "the http, kafka and mqtt plugins take mappings",
                       "map: plugin '%s' does not take mappings", ps->plugin);
}

static void check_maps_supported(ceb_bridge *b, ceb_conf_errors *errs) {
  for (size_t i = 0; i < b->conf->count; i++) {
    const ceb_conf_section *s = &b->conf->sections[i];
    if (strcmp(s->kind, "source") == 0 && s->host.source.map)
      check_map_support(b, s, NULL, s->host.source.map_origin, errs);
    else if (strcmp(s->kind, "sink") == 0 && s->host.sink.map)
      check_map_support(b, s, NULL, s->host.sink.map_origin, errs);
    else if (strcmp(s->kind, "route") == 0 && s->host.route.map &&
             s->host.route.to)
      check_map_support(b, s, s->host.route.to, s->host.route.map_origin, errs);
  }
}

/* Every jq program (map, filter) read and compiled once, so that `check`
 * and `run` refuse a program that does not compile with its file:line.
 * The runtime reads them again at open and starts the worker pool. */
static void check_mappings(ceb_bridge *b, ceb_conf_errors *errs) {
  ceb_mapping_set *set = NULL;
  ceb_mapping_set_build(b->conf, &set, errs); /* errors appended */
  if (!set) return;
  ceb_mapper_opts o = ceb_mapping_opts(ceb_conf_bridge_cfg(b->conf));
  ceb_mapping_set_check(set, &o, errs);
  ceb_mapping_set_free(set);
}

/* 127.0.0.0/8, ::1 or localhost. */
static int loopback_host(const char *host) {
  struct in_addr a4;
  struct in6_addr a6;
  if (strcmp(host, "localhost") == 0) return 1;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* admin.listen is "off" or an address, and one other hosts can reach needs
 * an admin.token (the generated token file is meant for loopback: on the
 * network the operator must choose and distribute the token). Checked here
 * so that `check` reports it with file:line and `run` refuses the same. */
static void check_admin_listen(ceb_bridge *b, ceb_conf_errors *errs) {
  const ceb_conf_section *sec = ceb_conf_find(b->conf, "bridge", NULL);
  const char *v = sec ? sec->host.bridge.admin.listen : NULL;
  char host[256];
  int port;
  if (!v || strcmp(v, "off") == 0) return;
  char file[256];
  int line;
  key_origin(sec, sec->host.bridge.admin.listen_origin, file, sizeof file,
             &line);
  if (ceb_parse_address(v, host, sizeof host, &port) != CEB_OK) {
    ceb_conf_error_add(errs, file, line, "e.g. 127.0.0.1:8081, or off",
                       "admin.listen = %s is not host:port", v);
    return;
  }
  const char *tok = sec->host.bridge.admin.token;
  if (!loopback_host(host) && (!tok || !*tok))
    ceb_conf_error_add(errs, file, line,
                       "set admin.token (e.g. ${CEB_ADMIN_TOKEN} or "
                       "file:/etc/cebridge/admin.token), or listen on "
                       "127.0.0.1",
                       "admin.listen = %s is reachable from other hosts "
                       "but no admin.token is set",
                       v);
}

/* admin.tls.*: certificate and key together, a priority string GnuTLS
 * accepts (the files are read by run only: check may run away from them). */
static void check_admin_tls(ceb_bridge *b, ceb_conf_errors *errs) {
  const ceb_conf_section *sec = ceb_conf_find(b->conf, "bridge", NULL);
  const char *origin = NULL;
  char why[512], file[256];
  int line;
  if (!sec || ceb_admin_tls_check(&sec->host.bridge, &origin, why,
                                  sizeof why) == CEB_OK)
    return;
  key_origin(sec, origin, file, sizeof file, &line);
  ceb_conf_error_add(errs, file, line, NULL, "%s", why);
}

static int make_instance(ceb_bridge *b, const ceb_conf_section *sec) {
  uint32_t role = role_of_kind(sec->kind);
  const char *pname = sec->plugin;
  ceb_loaded_plugin *p;
  char err[512];
  if (ceb_loader_load(b->loader, pname, &p, err, sizeof err) != CEB_OK)
    return CEB_EINTERNAL; /* checked before: cannot happen */
  ceb_instance *inst = calloc(1, sizeof *inst);
  if (!inst || !(inst->name = strdup(sec->name))) {
    free(inst);
    return CEB_ENOMEM;
  }
  pthread_mutex_init(&inst->capture_lock, NULL);
  inst->role = role;
  inst->plugin = p->desc;
  inst->lib = p;
  inst->cfg = sec->cfg;
  snprintf(inst->component, sizeof inst->component, "%s:%s:%s", sec->kind,
           p->desc->name, sec->name);
  snprintf(inst->labels, sizeof inst->labels,
           "role=\"%s\",plugin=\"%s\",instance=\"%s\"", sec->kind,
           p->desc->name, sec->name);
  ceb_instance **v =
      realloc(b->instances, (b->ninstances + 1) * sizeof *b->instances);
  if (!v) {
    pthread_mutex_destroy(&inst->capture_lock);
    free(inst->name);
    free(inst);
    return CEB_ENOMEM;
  }
  b->instances = v;
  b->instances[b->ninstances++] = inst;
  return CEB_OK;
}

/* plugin_dir from [bridge] before checking (the checker needs the loader):
 * a relative path is relative to the file that set it. */
static void resolve_plugin_dir(ceb_bridge *b, const ceb_bridge_opts *o) {
  if (o->plugin_dir) {
    snprintf(b->plugin_dir, sizeof b->plugin_dir, "%s", o->plugin_dir);
    return;
  }
  const ceb_conf_section *sec = ceb_conf_find(b->conf, "bridge", NULL);
  /* bound from the values as loaded (ceb_conf_load): not yet absolute */
  const char *v = sec ? sec->host.bridge.plugin_dir : NULL;
  if (v && *v && v[0] != '/') {
    char file[256];
    int line;
    key_origin(sec, sec->host.bridge.plugin_dir_origin, file, sizeof file,
               &line);
    char *slash = strrchr(file, '/');
    if (slash) *slash = '\0';
    snprintf(b->plugin_dir, sizeof b->plugin_dir, "%s/%s", slash ? file : ".",
             v);
  } else if (v && *v) {
    snprintf(b->plugin_dir, sizeof b->plugin_dir, "%s", v);
  } else {
    ceb_plugin_dir_default(b->plugin_dir, sizeof b->plugin_dir);
  }
}

int ceb_bridge_load(const ceb_bridge_opts *opts, ceb_bridge **out,
                    ceb_conf_errors *errs) {
  *out = NULL;
  ceb_bridge *b = calloc(1, sizeof *b);
  if (!b) return CEB_ENOMEM;
  b->clock = opts->clock;
  b->clock_arg = opts->clock_arg;
  b->dry_run = opts->dry_run;
  int st = ceb_conf_load(opts->config_dir, &b->conf, errs);
  if (st != CEB_OK) {
    ceb_bridge_free(b);
    return st;
  }
  resolve_plugin_dir(b, opts);
  b->loader = ceb_loader_new(b->plugin_dir);
  if (!b->loader) {
    ceb_bridge_free(b);
    return CEB_ENOMEM;
  }
  st = ceb_conf_check(b->conf, plugin_spec_cb, b, errs);
  check_admin_listen(b, errs);
  check_admin_tls(b, errs);
  if (st == CEB_OK) {
    check_maps_supported(b, errs);
    check_mappings(b, errs);
  }
  for (size_t i = 0; i < b->conf->count; i++)
    if (strcmp(b->conf->sections[i].kind, "route") == 0) {
      const ceb_conf_section *r = &b->conf->sections[i];
      check_topic_sink(b, r, "dlq", r->host.route.dlq, r->host.route.dlq_origin,
                       errs);
      check_topic_sink(b, r, "receipts", r->host.route.receipts,
                       r->host.route.receipts_origin, errs);
    }
  if (st != CEB_OK || errs->count) {
    ceb_bridge_free(b);
    return CEB_ECONFIG;
  }
  for (size_t i = 0; i < b->conf->count; i++) {
    const ceb_conf_section *sec = &b->conf->sections[i];
    if (role_of_kind(sec->kind) && (st = make_instance(b, sec)) != CEB_OK) {
      ceb_bridge_free(b);
      return st;
    }
  }
  *out = b;
  return CEB_OK;
}

const ceb_conf *ceb_bridge_conf(const ceb_bridge *b) {
  return b->conf;
}
ceb_metrics *ceb_bridge_metrics(ceb_bridge *b) {
  return b->metrics;
}
struct ceb_runtime *ceb_bridge_runtime(ceb_bridge *b) {
  return b->rt;
}
size_t ceb_bridge_instance_count(const ceb_bridge *b) {
  return b->ninstances;
}
ceb_instance *ceb_bridge_instance(ceb_bridge *b, size_t i) {
  return i < b->ninstances ? b->instances[i] : NULL;
}
const char *ceb_bridge_plugin_dir(const ceb_bridge *b) {
  return b->plugin_dir;
}

ceb_instance *ceb_bridge_find(ceb_bridge *b, uint32_t role, const char *name) {
  for (size_t i = 0; i < b->ninstances; i++)
    if (b->instances[i]->role == role &&
        strcmp(b->instances[i]->name, name) == 0)
      return b->instances[i];
  return NULL;
}

int64_t ceb_bridge_now_ms(const ceb_bridge *b) {
  if (b->clock) return b->clock(b->clock_arg);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}
