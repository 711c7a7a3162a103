/* The http plugin's sink side: delivers events to a partner's webhook
 * endpoint (CloudEvents HTTP binding, binary / structured / batch mode) with
 * OAuth2 client credentials, Standard Webhooks signatures and an
 * Idempotency-Key per event. The descriptor (http_plugin.c) dispatches the
 * SINK role of its callbacks here.
 *
 * One instance owns one libcurl multi handle driven by one event-loop thread
 * (started by http_sink_start): every transfer, token fetch and handshake of
 * the instance runs there, and every settle() is called from there (or from
 * drain/destroy on the control thread once the loop is gone). */
#ifndef HTTP_OUT_H
#define HTTP_OUT_H

#include <stdint.h>

#include <ceb/plugin.h>

/* The sink's typed config (CEB_CONFIG_SPEC_END-terminated, static). */
extern const ceb_config_spec http_sink_spec[];

/* Control thread. Checks the config (https only unless allow_insecure_http,
 * URL template, secrets, OAuth2 key) and builds the instance; starts no
 * thread. cfg is borrowed until destroy. On CEB_OK *state is the instance's;
 * on error a line is logged and nothing is left allocated. */
int http_sink_init(const ceb_host *host, ceb_instance *inst,
                   const ceb_instance_info *info, const ceb_config *cfg,
                   void **state);
/* Control thread. Starts the event-loop thread. */
int http_sink_start(void *state);
/* Control thread. Stops taking deliveries (deliver returns CEB_ESHUTDOWN),
 * sends what is queued (a partial batch at once) and waits for in-flight
 * transfers until deadline_ms (host clock); then settles the rest RETRY
 * "shutdown". CEB_OK when everything settled by itself, else CEB_ETIMEOUT. */
int http_sink_drain(void *state, int64_t deadline_ms);
/* Control thread. Stops the loop, settles anything still held RETRY
 * "shutdown" and frees the instance. NULL is ignored. */
void http_sink_destroy(void *state);
/* Any host worker thread; never blocks on the network. Queues d (borrowed
 * until settle) and wakes the loop. CEB_OK, or CEB_ESHUTDOWN while draining,
 * CEB_EBUSY when max_pending deliveries are outstanding, CEB_EINVAL for a
 * bad argument; on error d is not settled. */
int http_sink_deliver(void *state, ceb_delivery *d);

#endif
