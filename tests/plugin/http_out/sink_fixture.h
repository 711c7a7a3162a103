/* A webhook sink instance on the fake host for the http_out tests: config
 * from key/value pairs, deliveries tracked and freed at the end. */
#ifndef SINK_FIXTURE_H
#define SINK_FIXTURE_H

#include <ceb/ceb.h>

#include "ceb_fake_host.h"
#include "config/ceb_config_build.h"

#define FX_MAX_DELIVERIES 256

typedef struct sink_fx {
  ceb_fake_host *fake;
  ceb_config *cfg;
  void *state;
  ceb_delivery *ds[FX_MAX_DELIVERIES];
  size_t nds;
} sink_fx;

/* kv: "key", "value", ..., NULL. Returns http_sink_init's status; on CEB_OK
 * the sink is started. fx_free cleans up in every case. */
int fx_init(sink_fx *fx, const char *const *kv);
/* Destroys the sink (settling leftovers), frees deliveries and the host. */
void fx_free(sink_fx *fx);
/* A valid event with JSON data; the caller owns the reference. */
ceb_event *fx_event(const char *id, const char *data);
/* Delivers ev (attempt n) and returns the delivery (owned by fx). */
ceb_delivery *fx_deliver(sink_fx *fx, ceb_event *ev, uint32_t attempt, int *rc);
/* Waits for n settles and copies the i-th. */
int fx_settle(sink_fx *fx, size_t i, ceb_fake_settle *out, long timeout_ms);
/* "http://127.0.0.1:<port><path>" into buf. */
const char *fx_url(char *buf, size_t n, int port, const char *path);

#endif
