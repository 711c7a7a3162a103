/* The host's own sections come out of ceb_conf_check typed and bound
 * (core/config/ceb_host_cfg.h): [bridge] with its spec defaults when a key
 * is unset or the section is absent, set values parsed (durations in ms,
 * sizes in bytes, lists split), paths made absolute, secrets resolved,
 * origins as file:line; [route], [source] and [sink] likewise, and plugin
 * of every plugin section. Every binding names a key of its spec. */
#include "config/ceb_conf.h"
#include "config/ceb_core_spec.h"

#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "conf_fixture.h"

static const ceb_conf_section *find(const ceb_conf *c, const char *kind,
                                    const char *name) {
  const ceb_conf_section *s = ceb_conf_find(c, kind, name);
  CHECK_MSG(s != NULL, "no [%s %s]", kind, name ? name : "");
  return s;
}

static ceb_conf *load(const char *dir) {
  ceb_conf *c = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &c, &errs), CEB_OK);
  if (!c) return NULL;
  if (ceb_conf_check(c, NULL, NULL, &errs) != CEB_OK) fx_dump(&errs);
  CHECK_INT((int)errs.count, 0);
  return c;
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  char tdir[512];
  snprintf(tdir, sizeof tdir, "%s/ceb_host_cfg_XXXXXX", tmp ? tmp : "/tmp");
  CHECK(mkdtemp(tdir) != NULL);

  /* No [bridge]: every field is its spec default. */
  fx_write(tdir, "10-a.conf", "[source in]\nplugin = web\n");
  ceb_conf *c = load(tdir);
  const ceb_bridge_cfg *b = c ? ceb_conf_bridge_cfg(c) : NULL;
  CHECK(b != NULL);
  if (b) {
    CHECK_STR(b->store.path, "/var/lib/cebridge/store.db");
    CHECK_STR(b->admin.listen, "127.0.0.1:8081");
    CHECK_STR(b->admin.listen_origin, "default");
    CHECK(b->admin.token == NULL);
    CHECK_INT(b->admin.allowed_hosts.count, 0);
    CHECK_STR(b->log.format, "json");
    CHECK_STR(b->log.level, "info");
    CHECK_STR(b->profile, "warn");
    CHECK_INT(b->max_event_size, 65536);
    CHECK_INT(b->drain_timeout_ms, 30000);
    CHECK_INT(b->workers, 2);
    CHECK_INT(b->store.group_max, 512);
    CHECK_INT(b->store.group_wait_ms, 0);
    CHECK_STR(b->store.synchronous, "full");
    CHECK_STR(b->store.check, "quick");
    CHECK_INT(b->idempotency_ttl_ms, 7LL * 86400 * 1000);
    CHECK_INT(b->retention_ms, 7LL * 86400 * 1000);
    CHECK_INT(b->backpressure_max_queued, 1000000);
    CHECK(b->cfg == ceb_conf_bridge(c));
  }
  const ceb_conf_section *in = c ? find(c, "source", "in") : NULL;
  if (in) {
    CHECK_STR(in->plugin, "web");
    CHECK(strstr(in->plugin_origin, "10-a.conf:2") != NULL);
    CHECK(in->host.source.profile == NULL);
  }
  ceb_conf_free(c);

  /* Set values, parsed and bound. */
  setenv("CEB_TEST_HOST_CFG_TOKEN", "s3cret", 1);
  fx_write(tdir, "10-a.conf",
           "[bridge]\n"
           "store = data/s.db\n"
           "admin.listen = 0.0.0.0:9000\n"
           "admin.token = ${CEB_TEST_HOST_CFG_TOKEN}\n"
           "admin.allowed_hosts = a.example, b.example:9000\n"
           "log.level = debug\n"
           "max_event_size = 1MiB\n"
           "drain_timeout = 1m30s\n"
           "workers = 4\n"
           "store.group_wait = 5ms\n"
           "store.synchronous = normal\n"
           "[source in]\nplugin = web\nprofile = enforce\n"
           "[sink out]\nplugin = web\nrate_limit = 120/min\n"
           "circuit.open_for = 2s\n"
           "[route r]\nfrom = in\nto = out\nmax_inflight = 7\n"
           "retry.schedule = 0s 1s\ndeadline = 2h\nreceipts = out\n");
  c = load(tdir);
  b = c ? ceb_conf_bridge_cfg(c) : NULL;
  if (b) {
    CHECK(b->store.path[0] == '/' &&
          strstr(b->store.path, "/data/s.db") != NULL);
    CHECK_STR(b->admin.listen, "0.0.0.0:9000");
    CHECK(strstr(b->admin.listen_origin, "10-a.conf:3") != NULL);
    CHECK_STR(b->admin.token, "s3cret");
    CHECK_INT(b->admin.allowed_hosts.count, 2);
    CHECK_STR(b->admin.allowed_hosts.items[1], "b.example:9000");
    CHECK_STR(b->log.level, "debug");
    CHECK_INT(b->max_event_size, 1048576);
    CHECK_INT(b->drain_timeout_ms, 90000);
    CHECK_INT(b->workers, 4);
    CHECK_INT(b->store.group_wait_ms, 5);
    CHECK_STR(b->store.synchronous, "normal");
  }
  in = c ? find(c, "source", "in") : NULL;
  if (in) CHECK_STR(in->host.source.profile, "enforce");
  const ceb_conf_section *out = c ? find(c, "sink", "out") : NULL;
  if (out) {
    CHECK(out->host.sink.rate_limit > 1.99 && out->host.sink.rate_limit < 2.01);
    CHECK_INT(out->host.sink.rate_limit_burst, 0);
    CHECK_INT(out->host.sink.circuit_failures, 5);
    CHECK_INT(out->host.sink.circuit_open_for_ms, 2000);
  }
  const ceb_conf_section *r = c ? find(c, "route", "r") : NULL;
  if (r) {
    const ceb_route_cfg *rc = &r->host.route;
    CHECK(rc->cfg == r->cfg);
    CHECK_INT(rc->from.count, 1);
    CHECK_STR(rc->from.items[0], "in");
    CHECK_STR(rc->to, "out");
    CHECK_STR(rc->dlq, "store");
    CHECK_STR(rc->dlq_origin, "default");
    CHECK_INT(rc->max_inflight, 7);
    CHECK(strstr(rc->max_inflight_origin, "10-a.conf:") != NULL);
    CHECK_INT(rc->retry_schedule.count, 2);
    CHECK_INT(rc->deadline_ms, 2LL * 3600 * 1000);
    CHECK_INT(rc->timeout_ms, 15000);
    CHECK_STR(rc->retry_mode, "schedule");
    CHECK_STR(rc->receipts, "out");
    CHECK_STR(rc->receipts_type_prefix, "nl.cebridge.delivery");
  }
  ceb_conf_free(c);
  fx_rmdir(tdir);
  return ceb_test_done("unit_host_cfg");
}
