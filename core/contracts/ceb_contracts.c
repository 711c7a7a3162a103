/* Pins resolved against the register at start; the runtime hook. */
#include "contracts/ceb_contracts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/ceb_log.h"
#include "router/ceb_route.h"
#include <ceb/semver.h>

typedef struct pinned_route {
  char *route;
  char *pin;
  ceb_contract *contract; /* borrowed from the loaded list; NULL: warn mode */
} pinned_route;

struct ceb_contracts {
  pinned_route *routes;
  size_t nroutes;
  ceb_contract **loaded; /* one per (name, version) */
  size_t nloaded;
};

void ceb_contracts_free(ceb_contracts *cs) {
  if (!cs) return;
  for (size_t i = 0; i < cs->nroutes; i++) {
    free(cs->routes[i].route);
    free(cs->routes[i].pin);
  }
  free(cs->routes);
  for (size_t i = 0; i < cs->nloaded; i++)
    ceb_contract_free(cs->loaded[i]);
  free(cs->loaded);
  free(cs);
}

static int add_type(const char *key, const char *value, void *arg) {
  /* key is "types.<message>" */
  return json_object_set_new((json_t *)arg, key + 6, json_string(value)) ? 1
                                                                         : 0;
}

json_t *ceb_contracts_types(const ceb_conf *conf, const char *name) {
  json_t *types = json_object();
  const ceb_conf_section *s =
      conf ? ceb_conf_find(conf, "contracts", name) : NULL;
  if (types && s && s->cfg)
    ceb_config_foreach(s->cfg, "types.", add_type, types);
  return types;
}

int ceb_contracts_load_held(ceb_store *st, const ceb_conf *conf,
                            const char *name, const char *version, int compile,
                            ceb_contract **out, char *err, size_t errlen) {
  size_t len = 0;
  char *doc = ceb_store_contract_get(st, name, version, &len);
  if (!doc) {
    snprintf(err, errlen, "no contract %s@%s in the register", name, version);
    return CEB_ENOTFOUND;
  }
  json_t *types = ceb_contracts_types(conf, name);
  ceb_contract_opts o = {.types = types, .compile = compile};
  char why[256] = "";
  int rc = ceb_contract_load(name, doc, len, &o, out, why, sizeof why);
  json_decref(types);
  free(doc);
  if (rc != CEB_OK)
    snprintf(err, errlen, "contract %s@%s: %s", name, version, why);
  return rc;
}

char *ceb_contracts_resolve_pin(ceb_store *st, const char *text, char *err,
                                size_t errlen) {
  ceb_semver_pin pin;
  if (ceb_semver_pin_parse(text, &pin, err, errlen) != 0) return NULL;
  json_t *rows = ceb_store_contract_list(st, pin.name);
  if (!rows) {
    snprintf(err, errlen, "reading the contract register failed");
    return NULL;
  }
  size_t n = json_array_size(rows);
  const char **versions = calloc(n ? n : 1, sizeof *versions);
  char *out = NULL;
  if (versions) {
    for (size_t i = 0; i < n; i++)
      versions[i] = json_string_value(
          json_object_get(json_array_get(rows, i), "version"));
    long hit = ceb_semver_pin_resolve(&pin, versions, n);
    if (hit >= 0)
      out = strdup(versions[hit]);
    else if (n == 0)
      snprintf(err, errlen,
               "contract pin %s: no version of %s is in the register (run "
               "`cebridge contracts sync` first?)",
               text, pin.name);
    else
      snprintf(err, errlen,
               "contract pin %s: none of the %zu held versions of %s "
               "matches (see `cebridge contracts list --name %s`)",
               text, n, pin.name, pin.name);
  }
  free(versions);
  json_decref(rows);
  return out;
}

static ceb_contract *find_loaded(ceb_contracts *cs, const char *name,
                                 const char *version) {
  for (size_t i = 0; i < cs->nloaded; i++)
    if (strcmp(cs->loaded[i]->name, name) == 0 &&
        strcmp(cs->loaded[i]->version, version) == 0)
      return cs->loaded[i];
  return NULL;
}

/* Resolves and loads one route's pin; CEB_ECONFIG with err on failure. */
static int pin_route(ceb_contracts *cs, ceb_store *st, const ceb_conf *conf,
                     pinned_route *pr, char *err, size_t errlen) {
  ceb_semver_pin pin;
  if (ceb_semver_pin_parse(pr->pin, &pin, err, errlen) != 0) return CEB_ECONFIG;
  char *version = ceb_contracts_resolve_pin(st, pr->pin, err, errlen);
  if (!version) return CEB_ECONFIG;
  ceb_contract *c = find_loaded(cs, pin.name, version);
  if (!c) {
    ceb_contract **n =
        realloc(cs->loaded, (cs->nloaded + 1) * sizeof *cs->loaded);
    if (!n) {
      free(version);
      snprintf(err, errlen, "out of memory");
      return CEB_ENOMEM;
    }
    cs->loaded = n;
    int rc = ceb_contracts_load_held(st, conf, pin.name, version, 1, &c, err,
                                     errlen);
    if (rc != CEB_OK) {
      free(version);
      return CEB_ECONFIG;
    }
    cs->loaded[cs->nloaded++] = c;
    for (size_t i = 0; i < c->nmsgs; i++)
      if (c->msgs[i].compile_failed)
        ceb_log_warn("contracts: %s@%s message %s: %s; its events are "
                     "refused",
                     c->name, c->version, c->msgs[i].name, c->msgs[i].note);
  }
  pr->contract = c;
  ceb_log_info("contracts: route %s pins %s -> %s@%s (%zu messages)", pr->route,
               pr->pin, c->name, c->version, c->nmsgs);
  free(version);
  return CEB_OK;
}

int ceb_contracts_open(const ceb_conf *conf, ceb_store *st, ceb_contracts **out,
                       char *err, size_t errlen) {
  *out = NULL;
  ceb_contracts *cs = calloc(1, sizeof *cs);
  if (!cs) {
    snprintf(err, errlen, "out of memory");
    return CEB_ENOMEM;
  }
  for (size_t i = 0; i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    if (strcmp(s->kind, "route") != 0 || !s->cfg) continue;
    const char *pin = s->host.route.contract;
    if (!pin || !*pin) continue;
    const char *mode = s->host.route.contract_mode;
    int warn = mode && strcmp(mode, "warn") == 0;
    pinned_route *n = realloc(cs->routes, (cs->nroutes + 1) * sizeof *n);
    if (!n) {
      ceb_contracts_free(cs);
      snprintf(err, errlen, "out of memory");
      return CEB_ENOMEM;
    }
    cs->routes = n;
    pinned_route *pr = &cs->routes[cs->nroutes++];
    memset(pr, 0, sizeof *pr);
    pr->route = strdup(s->name);
    pr->pin = strdup(pin);
    if (!pr->route || !pr->pin) {
      ceb_contracts_free(cs);
      snprintf(err, errlen, "out of memory");
      return CEB_ENOMEM;
    }
    char why[512];
    int rc = pin_route(cs, st, conf, pr, why, sizeof why);
    if (rc == CEB_OK) continue;
    if (!warn || rc == CEB_ENOMEM) {
      snprintf(err, errlen, "route %s (%s:%d): %s", s->name, s->file, s->line,
               why);
      ceb_contracts_free(cs);
      return rc;
    }
    ceb_log_warn("contracts: route %s: %s; contract.mode = warn, so its "
                 "events pass unchecked",
                 s->name, why);
  }
  *out = cs;
  return CEB_OK;
}

const char *ceb_contracts_resolved(const ceb_contracts *cs, const char *route) {
  for (size_t i = 0; cs && i < cs->nroutes; i++)
    if (strcmp(cs->routes[i].route, route) == 0)
      return cs->routes[i].contract ? cs->routes[i].contract->version : NULL;
  return NULL;
}

int ceb_contracts_check(void *arg, const struct ceb_route *route,
                        const ceb_event *ev, ceb_violations *v) {
  ceb_contracts *cs = arg;
  for (size_t i = 0; cs && i < cs->nroutes; i++) {
    pinned_route *pr = &cs->routes[i];
    if (strcmp(pr->route, route->name) != 0) continue;
    if (!pr->contract) {
      ceb_contract_violation(v, "contract.unresolved", "",
                             "contract pin %s of route %s resolves to no "
                             "held version",
                             pr->pin, pr->route);
      return CEB_EVALIDATION;
    }
    return ceb_contract_check(pr->contract, ev, v);
  }
  /* A route whose pin was added by a reload this set was not built for. */
  ceb_contract_violation(v, "contract.unresolved", "",
                         "route %s pins %s, which was not resolved at start",
                         route->name, route->contract ? route->contract : "");
  return CEB_EVALIDATION;
}
