#include "sink_fixture.h"

#include <stdio.h>
#include <string.h>

#include "ceb_test.h"
#include "config/ceb_core_spec.h"
#include "http_out.h"

int fx_init(sink_fx *fx, const char *const *kv) {
  memset(fx, 0, sizeof(*fx));
  fx->fake = ceb_fake_host_new("partner", CEB_ROLE_SINK);
  fx->cfg = cebi_config_new("partner");
  cebi_config_set_spec(fx->cfg, http_sink_spec, ceb_spec_sink_common);
  cebi_config_put(fx->cfg, "plugin", "http", "test.conf", 1);
  for (int i = 0; kv[i] && kv[i + 1]; i += 2)
    cebi_config_put(fx->cfg, kv[i], kv[i + 1], "test.conf", 2 + i / 2);
  ceb_instance_info info = {sizeof(info), "partner", CEB_ROLE_SINK, "/tmp"};
  int rc = http_sink_init(&fx->fake->host, &fx->fake->inst, &info, fx->cfg,
                          &fx->state);
  if (rc == CEB_OK) CHECK_INT(http_sink_start(fx->state), CEB_OK);
  return rc;
}

void fx_free(sink_fx *fx) {
  http_sink_destroy(fx->state);
  for (size_t i = 0; i < fx->nds; i++)
    ceb_fake_delivery_free(fx->ds[i]);
  cebi_config_free(fx->cfg);
  ceb_fake_host_free(fx->fake);
}

ceb_event *fx_event(const char *id, const char *data) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:test");
  ceb_event_set(ev, "type", "nl.edu.test.created");
  ceb_event_set(ev, "subject", "student 42/a");
  if (data) {
    ceb_event_set(ev, "datacontenttype", "application/json");
    ceb_event_set_data(ev, data, strlen(data), CEB_DATA_JSON);
  }
  return ev;
}

ceb_delivery *fx_deliver(sink_fx *fx, ceb_event *ev, uint32_t attempt,
                         int *rc) {
  ceb_delivery *d =
      ceb_fake_delivery_new(fx->fake, ev, "partners-out", NULL, attempt);
  if (fx->nds < FX_MAX_DELIVERIES) fx->ds[fx->nds++] = d;
  int r = http_sink_deliver(fx->state, d);
  if (rc)
    *rc = r;
  else
    CHECK_INT(r, CEB_OK);
  return d;
}

int fx_settle(sink_fx *fx, size_t i, ceb_fake_settle *out, long timeout_ms) {
  memset(out, 0, sizeof(*out));
  if (!ceb_fake_wait_settles(fx->fake, i + 1, timeout_ms)) return 0;
  return ceb_fake_settle_get(fx->fake, i, out);
}

const char *fx_url(char *buf, size_t n, int port, const char *path) {
  snprintf(buf, n, "http://127.0.0.1:%d%s", port, path);
  return buf;
}
