/* The http plugin's source role: the partner-facing intermediary endpoint.
 *
 * Partners POST CloudEvents (binary, structured or batch mode); each request
 * is authenticated (OAuth2 bearer JWT), authorised per client and event type,
 * rate limited, checked for an Idempotency-Key, decoded with libceb and
 * submitted to the host. The 202 is sent only from the submit callback, i.e.
 * once the events are durable; the connection is suspended until then.
 *
 * Lifecycle functions run on the host's control thread (see plugin.h). */
#ifndef HTTP_IN_H
#define HTTP_IN_H

#include <ceb/ceb.h>

/* The source role's config keys (README.md documents them). */
extern const ceb_config_spec http_source_spec[];

/* Creates the instance from its checked config: parses TLS material, the
 * JWKS, clients and limits. Does not listen yet. cfg is borrowed until
 * http_source_destroy. *state is owned by the caller (free with destroy). */
int http_source_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state);
/* Starts the libmicrohttpd daemon; logs the bound port and writes it to
 * port_file when configured. */
int http_source_start(void *state);
/* Answers new requests with 503, waits (until deadline_ms, host clock) for
 * requests whose submit is pending to be answered, then stops listening.
 * CEB_OK when none was left, CEB_ETIMEOUT otherwise. */
int http_source_drain(void *state, int64_t deadline_ms);
/* Stops the daemon if still running and frees everything. Submit callbacks
 * that arrive later only touch their own refcounted request record. */
void http_source_destroy(void *state);

#endif
