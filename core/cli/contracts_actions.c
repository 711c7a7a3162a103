#include "cli/contracts_actions.h"

#include <ceb/codec.h>
#include <ceb/semver.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bridge/ceb_bridge.h"
#include "contracts/ceb_contracts.h"
#include "runtime/ceb_runtime.h"

/* <state_dir>/data/contracts-<name> (as core/bridge names it),
 * created; "" when it cannot be. */
static void instance_dir(const ceb_conf *conf, const char *name, char *buf,
                         size_t size) {
  char dir[PATH_MAX / 2];
  ceb_bridge_state_dir(ceb_conf_bridge_cfg(conf), dir, sizeof dir);
  if (snprintf(buf, size, "%s/data/contracts-%s", dir, name) >= (int)size) {
    buf[0] = '\0';
    return;
  }
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(buf, 0750);
      *p = '/';
    }
  if (mkdir(buf, 0750) != 0 && errno != EEXIST) buf[0] = '\0';
}

int ceb_contracts_cmd_sync(const char *config_dir, const char *name) {
  ceb_bridge_opts o = {.config_dir = config_dir};
  ceb_conf_errors *errs = calloc(1, sizeof *errs);
  ceb_bridge *b = NULL;
  if (!errs) return 2;
  if (ceb_bridge_load(&o, &b, errs) != CEB_OK) {
    ceb_conf_errors_print(errs, stderr);
    free(errs);
    return 2;
  }
  free(errs);
  size_t n = ceb_bridge_instance_count(b);
  ceb_instance **insts = calloc(n ? n : 1, sizeof *insts);
  for (size_t i = 0; insts && i < n; i++)
    insts[i] = ceb_bridge_instance(b, i);
  ceb_runtime_opts ro = {.conf = ceb_bridge_conf(b),
                         .instances = insts,
                         .ninstances = n,
                         .metrics = ceb_bridge_metrics(b)};
  ceb_runtime *rt = NULL;
  char err[512] = "";
  if (!insts || ceb_runtime_open(&ro, &rt, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "cannot open the store: %s\n", err);
    free(insts);
    ceb_bridge_free(b);
    return 2;
  }
  int failures = 0, synced = 0;
  for (size_t i = 0; i < n; i++) {
    ceb_instance *inst = insts[i];
    if (inst->role != CEB_ROLE_CONTRACTS ||
        (name && strcmp(name, inst->name) != 0))
      continue;
    /* The directory the running bridge gives the instance, so both share
     * the plugin's files (its ETag cache). */
    char data_dir[PATH_MAX];
    instance_dir(ceb_bridge_conf(b), inst->name, data_dir, sizeof data_dir);
    ceb_instance_info info = {sizeof info, inst->name, inst->role,
                              data_dir[0] ? data_dir : NULL};
    void *state = NULL;
    int st =
        inst->plugin->init(ceb_runtime_host(), inst, &info, inst->cfg, &state);
    if (st == CEB_OK) {
      st = inst->plugin->sync(state, inst->name);
      inst->plugin->destroy(state);
    }
    synced++;
    if (st != CEB_OK) {
      failures++;
      fprintf(stderr, "contracts %s: sync failed: %s (see the log above)\n",
              inst->name, ceb_strerror(st));
    } else {
      printf("contracts %s: synced\n", inst->name);
    }
  }
  ceb_runtime_close(rt);
  free(insts);
  ceb_bridge_free(b);
  if (!synced) {
    fprintf(stderr,
            name ? "no [contracts %s] section in %s\n"
                 : "no [contracts%s] section in %s\n",
            name ? name : "", config_dir);
    return 1;
  }
  return failures ? 1 : 0;
}

static ceb_conf *load_conf(const char *config_dir) {
  ceb_conf *conf = NULL;
  ceb_conf_errors *errs = calloc(1, sizeof *errs);
  if (config_dir && errs && ceb_conf_load(config_dir, &conf, errs) != CEB_OK)
    conf = NULL; /* the mappings are optional here */
  free(errs);
  return conf;
}

/* Loads NAME@VERSION (VERSION may be a range); prints why not. */
static ceb_contract *load_pin(ceb_store *st, const ceb_conf *conf,
                              const char *text, int compile) {
  char err[512] = "";
  ceb_semver_pin pin;
  if (ceb_semver_pin_parse(text, &pin, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return NULL;
  }
  char *version = ceb_contracts_resolve_pin(st, text, err, sizeof err);
  if (!version) {
    fprintf(stderr, "%s\n", err);
    return NULL;
  }
  ceb_contract *c = NULL;
  if (ceb_contracts_load_held(st, conf, pin.name, version, compile, &c, err,
                              sizeof err) != CEB_OK)
    fprintf(stderr, "%s\n", err);
  free(version);
  return c;
}

int ceb_contracts_cmd_messages(ceb_store *st, const char *config_dir,
                               const char *pin, int json) {
  ceb_conf *conf = load_conf(config_dir);
  ceb_contract *c = load_pin(st, conf, pin, 0);
  ceb_conf_free(conf);
  if (!c) return 1;
  if (json) {
    json_t *arr = json_array();
    for (size_t i = 0; i < c->nmsgs; i++) {
      const ceb_contract_msg *m = &c->msgs[i];
      json_array_append_new(
          arr, json_pack("{s:s,s:s?,s:s?,s:s?,s:s?,s:s,s:s?,s:b}", "name",
                         m->name, "type", m->ce_type, "content_type",
                         m->content_type, "channel", m->channel, "operation",
                         m->operation, "pointer", m->pointer, "payload_pointer",
                         m->payload_pointer, "structured", m->envelope));
    }
    char *s = json_dumps(arr, JSON_INDENT(2));
    printf("%s\n", s ? s : "[]");
    free(s);
    json_decref(arr);
  } else {
    printf("%s@%s (AsyncAPI %s), %zu messages\n", c->name, c->version,
           c->asyncapi, c->nmsgs);
    printf("%-28s %-36s %-24s %s\n", "MESSAGE", "TYPE", "CONTENT TYPE",
           "CHANNEL");
    for (size_t i = 0; i < c->nmsgs; i++) {
      const ceb_contract_msg *m = &c->msgs[i];
      printf("%-28s %-36s %-24s %s\n", m->name, m->ce_type ? m->ce_type : "-",
             m->content_type ? m->content_type : "-",
             m->channel ? m->channel : "-");
    }
  }
  ceb_contract_free(c);
  return 0;
}

int ceb_contracts_cmd_diff(ceb_store *st, const char *config_dir, const char *a,
                           const char *b) {
  ceb_conf *conf = load_conf(config_dir);
  ceb_contract *ca = load_pin(st, conf, a, 0);
  ceb_contract *cb = ca ? load_pin(st, conf, b, 0) : NULL;
  ceb_conf_free(conf);
  int rc = 1;
  if (ca && cb) {
    ceb_contract_diff(ca, cb, stdout);
    rc = 0;
  }
  ceb_contract_free(ca);
  ceb_contract_free(cb);
  return rc;
}

int ceb_contracts_cmd_check(ceb_store *st, const char *config_dir,
                            const char *pin, const char *event_file) {
  FILE *f = fopen(event_file, "rb");
  if (!f) {
    perror(event_file);
    return 2;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  char chunk[8192];
  size_t r;
  while (mem && (r = fread(chunk, 1, sizeof chunk, f)) > 0)
    fwrite(chunk, 1, r, mem);
  fclose(f);
  if (!mem) return 2;
  fclose(mem);
  ceb_event *ev = NULL;
  ceb_error e;
  ceb_error_clear(&e);
  if (ceb_json_decode(buf, len, &ev, &e) != CEB_OK) {
    fprintf(stderr, "%s: not a CloudEvent in JSON format: %s\n", event_file,
            e.message);
    free(buf);
    return 1;
  }
  free(buf);
  ceb_conf *conf = load_conf(config_dir);
  ceb_contract *c = load_pin(st, conf, pin, 1);
  ceb_conf_free(conf);
  if (!c) {
    ceb_event_unref(ev);
    return 1;
  }
  ceb_violations *v = calloc(1, sizeof *v);
  int rc = v ? ceb_contract_check(c, ev, v) : CEB_ENOMEM;
  if (rc == CEB_OK) {
    printf("valid against %s@%s\n", c->name, c->version);
  } else if (v) {
    printf("invalid against %s@%s:\n", c->name, c->version);
    for (size_t i = 0; i < v->count; i++)
      printf("  %s: %s\n", v->items[i].code, v->items[i].message);
  }
  free(v);
  ceb_contract_free(c);
  ceb_event_unref(ev);
  return rc == CEB_OK ? 0 : 1;
}

void ceb_contracts_cmd_pins(ceb_store *st, const char *config_dir) {
  ceb_conf *conf = load_conf(config_dir);
  for (size_t i = 0; conf && i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    const char *pin =
        strcmp(s->kind, "route") == 0 ? s->host.route.contract : NULL;
    ceb_semver_pin p;
    char err[512];
    if (!pin || ceb_semver_pin_parse(pin, &p, err, sizeof err) != 0) continue;
    char *v = ceb_contracts_resolve_pin(st, pin, err, sizeof err);
    json_t *rows = ceb_store_contract_list(st, p.name);
    const char *newest = NULL;
    size_t k;
    json_t *row;
    json_array_foreach(rows, k, row) {
      const char *rv = json_string_value(json_object_get(row, "version"));
      if (rv && (!newest || ceb_semver_cmp_text(rv, newest) > 0)) newest = rv;
    }
    if (!v)
      printf("route %s: pin %s resolves to nothing: %s\n", s->name, pin, err);
    else if (newest && ceb_semver_cmp_text(newest, v) > 0)
      printf("route %s: pin %s -> %s; new version %s available (change the "
             "pin to take it)\n",
             s->name, pin, v, newest);
    else
      printf("route %s: pin %s -> %s (newest held)\n", s->name, pin, v);
    free(v);
    json_decref(rows);
  }
  ceb_conf_free(conf);
}
