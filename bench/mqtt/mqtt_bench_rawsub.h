/* The bench's far-end MQTT 5 subscriber for http2mqtt: a plain TCP client
 * (no library) that subscribes at QoS 1, feeds every bench event it
 * receives to an mb_track and acknowledges it. It reads whatever the socket
 * has and answers all the PUBACKs of one read with one write, so it takes
 * little of the two cores the bridge is measured on: the paho subscriber it
 * replaces cost about 33 us per binary-mode event (paho's tracked heap,
 * one wake-up per message), more than the broker (bench/mqtt/README.md,
 * session 4). The bridge's own MQTT handling is unchanged by this.
 *
 * Binary mode: the user properties id, partitionkey and benchsent; a
 * message without an id property is read as a structured event (its JSON
 * payload's members).
 *
 * Threading: start/set_track/stop on one bench thread; messages are read
 * and recorded on the subscriber's own thread. */
#ifndef MQTT_BENCH_RAWSUB_H
#define MQTT_BENCH_RAWSUB_H

#include "mqtt_bench_track.h"

typedef struct mb_rsub mb_rsub;

/* Connects to url ("tcp://127.0.0.1:PORT") with a clean start, Receive
 * Maximum 1000 and no keep-alive, subscribes to filter at QoS 1 and starts
 * reading. NULL on failure (reason on stderr). */
mb_rsub *mb_rsub_start(const char *url, const char *client_id,
                       const char *filter, mb_track *t);
/* Points the subscriber at another tracker (the warm-up has its own). */
void mb_rsub_set_track(mb_rsub *s, mb_track *t);
/* 0 while the connection is healthy; -1 after a protocol error or a
 * connection the broker closed (reason on stderr). */
int mb_rsub_status(mb_rsub *s);
/* Stops the reader, sends DISCONNECT and frees. NULL is ignored. */
void mb_rsub_stop(mb_rsub *s);

#endif
