#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ceb_config_spec k_empty[] = {CEB_CONFIG_SPEC_END};

static const ceb_plugin *plugin_named(const char *name) {
  if (name && strcmp(name, "testsink") == 0) return &ceb_testsink_plugin;
  if (name && strcmp(name, "testsource") == 0) return &ceb_testsource_plugin;
  return NULL;
}

static const ceb_config_spec *spec_cb(void *arg, const ceb_conf_section *s,
                                      ceb_conf_errors *errs) {
  (void)arg;
  const ceb_plugin *p = plugin_named(ceb_config_str(s->cfg, "plugin"));
  if (!p) {
    ceb_conf_error_add(errs, s->file, s->line, NULL, "unknown plugin");
    return NULL;
  }
  const ceb_config_spec *sp = strcmp(s->kind, "sink") == 0 ? p->config_sink
                              : strcmp(s->kind, "source") == 0
                                  ? p->config_source
                                  : NULL;
  return sp ? sp : k_empty;
}

static int64_t clock_fn(void *arg) {
  harness *h = arg;
  return atomic_load(&h->clock);
}

static int start(harness *h) {
  ceb_conf_errors errs = {0};
  if (ceb_conf_load(h->dir, &h->conf, &errs) != CEB_OK ||
      ceb_conf_check(h->conf, spec_cb, NULL, &errs) != CEB_OK) {
    ceb_conf_errors_print(&errs, stderr);
    CHECK_MSG(0, "config rejected");
    return -1;
  }
  h->metrics = ceb_metrics_new();
  h->ninst = 0;
  for (size_t i = 0; i < h->conf->count && h->ninst < HARNESS_MAX_INST; i++) {
    ceb_conf_section *s = &h->conf->sections[i];
    uint32_t role = strcmp(s->kind, "sink") == 0     ? CEB_ROLE_SINK
                    : strcmp(s->kind, "source") == 0 ? CEB_ROLE_SOURCE
                                                     : 0;
    if (!role) continue;
    ceb_instance *inst = calloc(1, sizeof *inst);
    inst->name = strdup(s->name);
    inst->role = role;
    inst->plugin = plugin_named(ceb_config_str(s->cfg, "plugin"));
    inst->cfg = s->cfg;
    snprintf(inst->component, sizeof inst->component, "%s:%s:%s", s->kind,
             inst->plugin->name, s->name);
    snprintf(inst->labels, sizeof inst->labels,
             "role=\"%s\",plugin=\"%s\",instance=\"%s\"", s->kind,
             inst->plugin->name, s->name);
    h->inst[h->ninst++] = inst;
  }
  ceb_runtime_opts o = {.conf = h->conf,
                        .instances = h->inst,
                        .ninstances = h->ninst,
                        .metrics = h->metrics,
                        .clock = clock_fn,
                        .clock_arg = h};
  char err[512] = "";
  int rc = ceb_runtime_open(&o, &h->rt, err, sizeof err);
  CHECK_MSG(rc == CEB_OK, "runtime open: %s", err);
  if (rc != CEB_OK) return -1;
  for (size_t i = 0; i < h->ninst; i++) {
    ceb_instance *inst = h->inst[i];
    ceb_instance_info info = {.struct_size = sizeof info,
                              .name = inst->name,
                              .role = inst->role,
                              .data_dir = h->dir};
    CHECK_INT(inst->plugin->init(ceb_runtime_host(), inst, &info, inst->cfg,
                                 &inst->state),
              CEB_OK);
  }
  /* the bridge's order (ceb_bridge_run.c): sinks, engine, sources */
  for (size_t i = 0; i < h->ninst; i++)
    if (h->inst[i]->role == CEB_ROLE_SINK)
      CHECK_INT(h->inst[i]->plugin->start(h->inst[i]->state), CEB_OK);
  CHECK_INT(ceb_runtime_start(h->rt), CEB_OK);
  for (size_t i = 0; i < h->ninst; i++)
    if (h->inst[i]->role != CEB_ROLE_SINK)
      CHECK_INT(h->inst[i]->plugin->start(h->inst[i]->state), CEB_OK);
  return 0;
}

static void stop(harness *h) {
  if (!h->rt) return;
  int64_t deadline = harness_now(h) + 300; /* spent in real time */
  for (size_t i = 0; i < h->ninst; i++)
    if (h->inst[i]->role == CEB_ROLE_SOURCE)
      h->inst[i]->plugin->drain(h->inst[i]->state, deadline);
  ceb_runtime_drain(h->rt, deadline);
  for (size_t i = 0; i < h->ninst; i++)
    if (h->inst[i]->role == CEB_ROLE_SINK)
      h->inst[i]->plugin->drain(h->inst[i]->state, deadline);
  for (size_t i = 0; i < h->ninst; i++) {
    h->inst[i]->plugin->destroy(h->inst[i]->state);
  }
  ceb_runtime_close(h->rt);
  h->rt = NULL;
  for (size_t i = 0; i < h->ninst; i++) {
    free(h->inst[i]->name);
    free(h->inst[i]);
  }
  h->ninst = 0;
  ceb_conf_free(h->conf);
  h->conf = NULL;
  ceb_metrics_free(h->metrics);
  h->metrics = NULL;
}

int harness_open(harness *h, const char *tag, const char *bridge_extra,
                 const char *conf_text) {
  return harness_open_store(h, tag, NULL, bridge_extra, conf_text);
}

int harness_open_store(harness *h, const char *tag, const char *store,
                       const char *bridge_extra, const char *conf_text) {
  memset(h, 0, sizeof *h);
  atomic_store(&h->clock, HARNESS_T0);
  h->dir = ceb_test_tmpdir(tag);
  char path[1024];
  snprintf(path, sizeof path, "%s/bridge.conf", h->dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    CHECK_MSG(0, "cannot write %s", path);
    return -1;
  }
  if (store)
    fprintf(f, "[bridge]\nstore = %s\n%s\n%s", store,
            bridge_extra ? bridge_extra : "", conf_text);
  else
    fprintf(f,
            "[bridge]\nstore = %s/store.db\nstore.synchronous = normal\n%s\n%s",
            h->dir, bridge_extra ? bridge_extra : "", conf_text);
  fclose(f);
  return start(h);
}

int harness_restart(harness *h) {
  stop(h);
  return start(h);
}

void harness_close(harness *h) {
  stop(h);
  free(h->dir);
  h->dir = NULL;
}

static ceb_instance *find(harness *h, uint32_t role, const char *name) {
  for (size_t i = 0; i < h->ninst; i++)
    if (h->inst[i]->role == role && strcmp(h->inst[i]->name, name) == 0)
      return h->inst[i];
  return NULL;
}

testsink *harness_sink(harness *h, const char *name) {
  ceb_instance *i = find(h, CEB_ROLE_SINK, name);
  return i ? i->state : NULL;
}

testsource *harness_source(harness *h, const char *name) {
  ceb_instance *i = find(h, CEB_ROLE_SOURCE, name);
  return i ? i->state : NULL;
}

void harness_advance(harness *h, int64_t ms) {
  atomic_fetch_add(&h->clock, ms);
  ceb_runtime_kick(h->rt);
}

int64_t harness_now(harness *h) {
  return atomic_load(&h->clock);
}

ceb_event *harness_event(const char *id, const char *type, const char *key) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:test");
  ceb_event_set(ev, "type", type);
  ceb_event_set(ev, "time", "2026-11-22T12:00:00Z");
  if (key) ceb_event_set(ev, "partitionkey", key);
  ceb_event_set(ev, "datacontenttype", "application/json");
  ceb_event_set_data(ev, "{\"n\":1}", 7, CEB_DATA_JSON);
  return ev;
}

int harness_submit(harness *h, const char *src, ceb_event *ev) {
  ceb_submit_result res = {0};
  int rc = testsource_submit(harness_source(h, src), &ev, 1, NULL, &res);
  if (rc != CEB_OK) {
    ceb_event_unref(ev);
    return rc;
  }
  return res.status;
}

typedef struct count_arg {
  testsink *s;
  size_t n;
} count_arg;

static int count_reached(void *arg) {
  count_arg *a = arg;
  return testsink_count(a->s) >= a->n;
}

int harness_wait_count(testsink *s, size_t n) {
  count_arg a = {s, n};
  return ceb_test_wait(count_reached, &a, 10000);
}

typedef struct id_arg {
  testsink *s;
  const char *id;
  size_t n;
} id_arg;

static int id_reached(void *arg) {
  id_arg *a = arg;
  return testsink_count_id(a->s, a->id) >= a->n;
}

int harness_wait_id(testsink *s, const char *id, size_t n) {
  id_arg a = {s, id, n};
  return ceb_test_wait(id_reached, &a, 10000);
}

const char *harness_state(harness *h, const char *id, const char *route,
                          char *buf, size_t n) {
  buf[0] = '\0';
  json_t *st = ceb_runtime_event_status(h->rt, id, NULL);
  json_t *ev = json_array_get(st, 0);
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(ev, "routes"), i, r) {
    if (strcmp(json_string_value(json_object_get(r, "route")), route) == 0)
      snprintf(buf, n, "%s", json_string_value(json_object_get(r, "state")));
  }
  json_decref(st);
  return buf;
}

long long harness_route_int(harness *h, const char *id, const char *route,
                            const char *field) {
  json_t *st = ceb_runtime_event_status(h->rt, id, NULL);
  size_t i;
  json_t *r;
  long long v = -1;
  json_array_foreach(json_object_get(json_array_get(st, 0), "routes"), i, r) {
    json_t *f = json_object_get(r, field);
    if (strcmp(json_string_value(json_object_get(r, "route")), route) == 0 &&
        json_is_integer(f))
      v = (long long)json_integer_value(f);
  }
  json_decref(st);
  return v;
}

typedef struct route_int_arg {
  harness *h;
  const char *id, *route, *field;
  long long value;
} route_int_arg;

static int route_int_reached(void *arg) {
  route_int_arg *a = arg;
  return harness_route_int(a->h, a->id, a->route, a->field) == a->value;
}

int harness_wait_route_int(harness *h, const char *id, const char *route,
                           const char *field, long long value) {
  route_int_arg a = {h, id, route, field, value};
  return ceb_test_wait(route_int_reached, &a, 10000);
}

typedef struct state_arg {
  harness *h;
  const char *id, *route, *state;
} state_arg;

static int state_reached(void *arg) {
  state_arg *a = arg;
  char buf[32];
  return strcmp(harness_state(a->h, a->id, a->route, buf, sizeof buf),
                a->state) == 0;
}

int harness_wait_state(harness *h, const char *id, const char *route,
                       const char *state) {
  state_arg a = {h, id, route, state};
  return ceb_test_wait(state_reached, &a, 10000);
}

long long harness_queued(harness *h, const char *route) {
  long long n = -1;
  json_t *routes = ceb_runtime_routes(h->rt);
  size_t i;
  json_t *r;
  json_array_foreach(routes, i, r) {
    if (strcmp(json_string_value(json_object_get(r, "route")), route) == 0)
      n = (long long)json_integer_value(json_object_get(r, "queued"));
  }
  json_decref(routes);
  return n;
}

typedef struct queued_arg {
  harness *h;
  const char *route;
  long long n;
} queued_arg;

static int queued_reached(void *arg) {
  queued_arg *a = arg;
  return harness_queued(a->h, a->route) == a->n;
}

int harness_wait_queued(harness *h, const char *route, long long n) {
  queued_arg a = {h, route, n};
  return ceb_test_wait(queued_reached, &a, 10000);
}

long long harness_metric(harness *h, const char *needle) {
  char *text = ceb_metrics_render(h->metrics);
  long long v = -1;
  const char *p = text ? strstr(text, needle) : NULL;
  const char *sp = p ? strchr(p, ' ') : NULL;
  if (sp) v = atoll(sp + 1);
  free(text);
  return v;
}
