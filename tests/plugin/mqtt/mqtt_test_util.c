#include "mqtt_test_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_map.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"

int mtest_mapped;

int mtest_init(mtest_inst *t, uint32_t role, const char *const *kv) {
  memset(t, 0, sizeof *t);
  t->dl = dlopen(CEB_PLUGIN_DIR "/mqtt.so", RTLD_NOW | RTLD_LOCAL);
  if (!t->dl) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return CEB_EINTERNAL;
  }
  ceb_plugin_query_fn q =
      (ceb_plugin_query_fn)dlsym(t->dl, CEB_PLUGIN_QUERY_SYMBOL);
  t->p = q ? q(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  if (!t->p) return CEB_EABI;
  t->fake = ceb_fake_host_new("test", role);
  t->cfg = cebi_config_new("test");
  if (!t->fake || !t->cfg) return CEB_ENOMEM;
  cebi_config_put(t->cfg, "plugin", "mqtt", "test.conf", 1);
  for (int i = 0; kv[i]; i += 2)
    cebi_config_put(t->cfg, kv[i], kv[i + 1], "test.conf", 2 + i / 2);
  if (role == CEB_ROLE_SOURCE)
    cebi_config_set_spec(t->cfg, t->p->config_source, ceb_spec_source_common);
  else
    cebi_config_set_spec(t->cfg, t->p->config_sink, ceb_spec_sink_common);
  ceb_instance_info info = {sizeof info, "test", role, "/tmp", mtest_mapped};
  if (mtest_mapped) ceb_fake_set_map(t->fake, ceb_fake_map_payload, "payload");
  return t->p->init(&t->fake->host, &t->fake->inst, &info, t->cfg, &t->state);
}

int mtest_start(mtest_inst *t) {
  int rc = t->p->start(t->state);
  t->started = rc == CEB_OK;
  return rc;
}

int mtest_drain(mtest_inst *t, int64_t ms) {
  return t->p->drain(t->state, t->fake->host.now_ms(&t->fake->inst) + ms);
}

void mtest_free(mtest_inst *t) {
  if (t->state) t->p->destroy(t->state);
  t->state = NULL;
  if (t->cfg) cebi_config_free(t->cfg);
  if (t->fake) ceb_fake_host_free(t->fake);
  if (t->dl) dlclose(t->dl);
  memset(t, 0, sizeof *t);
}

typedef struct gauge_wait {
  mtest_inst *t;
  const char *name;
  double value;
} gauge_wait;

static int gauge_is(void *arg) {
  gauge_wait *g = arg;
  char full[128];
  snprintf(full, sizeof full, "cebridge_%s", g->name);
  return ceb_metrics_get(g->t->fake->metrics, full, NULL) == g->value;
}

int mtest_wait_gauge(mtest_inst *t, const char *name, double value,
                     int64_t timeout_ms) {
  gauge_wait g = {t, name, value};
  return ceb_test_wait(gauge_is, &g, timeout_ms);
}

int mtest_publish_event(ceb_mqtt_client *c, const char *topic,
                        const ceb_event *ev, int version, ceb_mode mode) {
  return mtest_publish_event_qos(c, topic, ev, version, mode, 1);
}

int mtest_publish_event_qos(ceb_mqtt_client *c, const char *topic,
                            const ceb_event *ev, int version, ceb_mode mode,
                            int qos) {
  ceb_headers h = {0};
  char *ct = NULL, *payload = NULL;
  size_t len = 0;
  int rc = ceb_mqtt_encode(ev, version, mode, &h, &ct, &payload, &len);
  if (rc != CEB_OK) return rc;
  const char *props[66];
  size_t n = 0;
  for (size_t i = 0; i < h.count && n < 64; i++) {
    props[n++] = h.items[i].name;
    props[n++] = h.items[i].value;
  }
  props[n] = NULL;
  rc = ceb_mqtt_publish(c, topic, payload, len, qos, ct, props) == 0 ? CEB_OK
                                                                     : CEB_EIO;
  ceb_headers_clear(&h);
  ceb_free(ct);
  ceb_free(payload);
  return rc;
}

static int connected(void *arg) {
  mtest_inst *t = arg;
  return ceb_metrics_get(t->fake->metrics, "cebridge_mqtt_connected", NULL) ==
         1.0;
}

int mtest_wait_connected(mtest_inst *t, int64_t timeout_ms) {
  return ceb_test_wait(connected, t, timeout_ms);
}

ceb_event *mtest_event(const char *id, const char *type) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:test");
  ceb_event_set(ev, "type", type);
  ceb_event_set(ev, "subject", "student 42");
  ceb_event_set(ev, "partitionkey", "k-1");
  static const char data[] = "{\"naam\":\"Jan\",\"jaar\":2026}";
  ceb_event_set(ev, "datacontenttype", "application/json");
  ceb_event_set_data(ev, data, sizeof data - 1, CEB_DATA_JSON);
  return ev;
}

int mtest_event_equal(const ceb_event *a, const ceb_event *b) {
  if (!a || !b || ceb_event_attr_count(a) != ceb_event_attr_count(b)) return 0;
  for (size_t i = 0; i < ceb_event_attr_count(a); i++) {
    const char *n, *v;
    ceb_attr_type ty;
    ceb_event_attr_at(a, i, &n, &v, &ty);
    const char *w = ceb_event_get(b, n);
    if (!w || strcmp(v, w) != 0) {
      fprintf(stderr, "attribute %s: \"%s\" vs \"%s\"\n", n, v,
              w ? w : "(unset)");
      return 0;
    }
  }
  size_t la, lb;
  const void *da = ceb_event_data(a, &la), *db = ceb_event_data(b, &lb);
  if (la != lb || (la && memcmp(da, db, la) != 0)) {
    fprintf(stderr, "data differs (%zu vs %zu bytes)\n", la, lb);
    return 0;
  }
  return 1;
}

ceb_event *mtest_decode(const ceb_mqtt_msg *m, int version) {
  ceb_headers h = {0};
  for (size_t i = 0; i < m->nprops; i++)
    ceb_headers_add(&h, m->props[i].name, m->props[i].value,
                    strlen(m->props[i].value));
  ceb_event *ev = NULL;
  ceb_error err;
  int rc = ceb_mqtt_decode(version, &h, m->content_type, m->payload, m->len,
                           &ev, &err);
  ceb_headers_clear(&h);
  if (rc != CEB_OK) fprintf(stderr, "decode: %s: %s\n", err.code, err.message);
  return ev;
}

int mtest_start_source(mtest_inst *t, const char *const *kv,
                       ceb_fake_submit_mode mode) {
  if (mtest_init(t, CEB_ROLE_SOURCE, kv) != CEB_OK) return -1;
  t->fake->mode = mode;
  if (mtest_start(t) != CEB_OK || !mtest_wait_subscribed(t)) return -1;
  return 0;
}

void mtest_check_id(mtest_inst *t, size_t i, const char *id) {
  ceb_event *ev = ceb_fake_event(t->fake, i);
  CHECK(ev != NULL);
  if (ev) CHECK_STR(ceb_event_get(ev, "id"), id);
  ceb_event_unref(ev);
}
