/* The sink through the real ABI: dlopen http.so (RTLD_NOW | RTLD_LOCAL),
 * query the descriptor, check the SINK role and its config spec, then init,
 * start, deliver (signed, binary mode), drain and destroy through the
 * descriptor's callbacks on the fake host. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <ceb/ceb.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"
#include "ceb_test_rx.h"

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 200;
}

static int has_key(const ceb_config_spec *spec, const char *key) {
  for (; spec && spec->key; spec++)
    if (strcmp(spec->key, key) == 0) return 1;
  return 0;
}

int main(void) {
  void *so = dlopen(CEB_PLUGIN_DIR "/http.so", RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(so != NULL, "dlopen: %s", dlerror());
  if (!so) return ceb_test_done("plugin_http_out_dlopen");
  ceb_plugin_query_fn query =
      (ceb_plugin_query_fn)dlsym(so, CEB_PLUGIN_QUERY_SYMBOL);
  CHECK(query != NULL);
  /* only the query function is exported */
  CHECK(dlsym(so, "http_sink_deliver") == NULL);
  const ceb_plugin *p = query ? query(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  CHECK(p != NULL);
  if (!p) {
    dlclose(so);
    return ceb_test_done("plugin_http_out_dlopen");
  }
  CHECK(p->roles & CEB_ROLE_SINK);
  CHECK(!(p->roles & CEB_ROLE_TOPICS));
  CHECK(p->deliver != NULL);
  CHECK(has_key(p->config_sink, "url"));
  CHECK(has_key(p->config_sink, "webhook.secrets"));
  CHECK(has_key(p->config_sink, "oauth2.private_key"));

  rx_server *rx = rx_start(respond, NULL);
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/abi", rx_port(rx));
  ceb_fake_host *fake = ceb_fake_host_new("partner", CEB_ROLE_SINK);
  ceb_config *cfg = cebi_config_new("partner");
  cebi_config_set_spec(cfg, p->config_sink, ceb_spec_sink_common);
  cebi_config_put(cfg, "plugin", "http", "t.conf", 1);
  cebi_config_put(cfg, "url", url, "t.conf", 2);
  cebi_config_put(cfg, "allow_insecure_http", "true", "t.conf", 3);
  cebi_config_put(cfg, "webhook.secrets",
                  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "t.conf", 4);
  ceb_instance_info info = {sizeof(info), "partner", CEB_ROLE_SINK, "/tmp"};
  void *state = NULL;
  CHECK_INT(p->init(&fake->host, &fake->inst, &info, cfg, &state), CEB_OK);
  if (state) {
    CHECK_INT(p->start(state), CEB_OK);
    ceb_event *ev = ceb_event_new();
    ceb_event_set(ev, "specversion", "1.0");
    ceb_event_set(ev, "id", "abi-1");
    ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:t");
    ceb_event_set(ev, "type", "nl.edu.test.created");
    ceb_delivery *d = ceb_fake_delivery_new(fake, ev, "r", NULL, 1);
    CHECK_INT(p->deliver(state, d), CEB_OK);
    CHECK(ceb_fake_wait_settles(fake, 1, 5000));
    ceb_fake_settle st;
    CHECK(ceb_fake_settle_get(fake, 0, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
    const rx_request *r = rx_get(rx, 0);
    CHECK(r && ceb_headers_get(&r->headers, "webhook-signature") != NULL);
    CHECK(r && strcmp(ceb_headers_get(&r->headers, "ce-id"), "abi-1") == 0);
    CHECK_INT(p->drain(state, fake->host.now_ms(&fake->inst) + 2000), CEB_OK);
    p->destroy(state);
    ceb_fake_delivery_free(d);
    ceb_event_unref(ev);
  }
  /* an http:// URL without the flag is refused through the ABI too */
  ceb_config *bad = cebi_config_new("partner");
  cebi_config_set_spec(bad, p->config_sink, ceb_spec_sink_common);
  cebi_config_put(bad, "url", url, "t.conf", 1);
  state = NULL;
  CHECK_INT(p->init(&fake->host, &fake->inst, &info, bad, &state), CEB_ECONFIG);
  CHECK(state == NULL);
  cebi_config_free(bad);
  cebi_config_free(cfg);
  ceb_fake_host_free(fake);
  rx_stop(rx);
  dlclose(so);
  return ceb_test_done("plugin_http_out_dlopen");
}
