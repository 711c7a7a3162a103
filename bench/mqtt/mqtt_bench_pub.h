/* The bench's MQTT 5 publisher for mqtt2kafka / mqtt2http: a plain TCP
 * client (mqtt_bench_wire.h, no MQTT library) on a broker at 127.0.0.1. It
 * sends bench events at QoS 1 in binary mode (every attribute a user
 * property, datacontenttype the Content Type) or structured mode (the event
 * as JSON), keeping at most one below the broker's Receive Maximum
 * unacknowledged (the window the earlier paho publisher kept: paho 1.3
 * stalls when the window is full, plugins/mqtt/README.md), optionally paced
 * to a rate. It writes all the PUBLISHes the window allows with one send
 * and reads the PUBACKs in bulk, so that it takes little of the two cores
 * the bridge is measured on (the paho publisher took about 35 us per
 * binary-mode event; bench/mqtt/README.md, session 4).
 *
 * Threading: a publisher is used by one thread at a time (start, run, stop);
 * several publishers may run on their own threads. */
#ifndef MQTT_BENCH_PUB_H
#define MQTT_BENCH_PUB_H

#include <stddef.h>
#include <stdint.h>

typedef struct mb_pub mb_pub;

/* Connects a publisher (clean start, no keep-alive). NULL on failure
 * (reason on stderr). */
mb_pub *mb_pub_start(const char *url, const char *client_id);
/* Sends DISCONNECT and frees. NULL is ignored. */
void mb_pub_stop(mb_pub *c);

typedef struct mb_pub_opts {
  const char *topic;
  long count;
  int keys;    /* event i has partitionkey key-(i mod keys) */
  int size;    /* attribute values + data, about this many bytes */
  double rate; /* events/s, 0: as fast as the window allows */
  const char *source, *type;
  const char *id_prefix; /* NULL: "mb" */
  /* This publisher is stream `stream` of `streams` (0 / 0: the only one):
   * its i-th event has id PREFIX-STREAM-i and a key that no other stream
   * uses (as mb_http_key assigns keys to connections). */
  int stream, streams;
  int structured; /* the event as JSON in the payload, else binary mode */
} mb_pub_opts;

typedef struct mb_pub_result {
  long sent, acked, failed; /* failed: refused, or never acknowledged */
  double elapsed_s;         /* first publish -> last PUBACK */
  int window;               /* in-flight publishes allowed */
} mb_pub_result;

/* Publishes and waits for every PUBACK (giving up after 30 s without
 * one). 0, or -1 when the client could not publish at all. */
int mb_pub_run(mb_pub *c, const mb_pub_opts *o, mb_pub_result *r);

#endif
