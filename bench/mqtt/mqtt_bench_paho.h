/* The bench's MQTT 5 publisher on paho MQTTAsync (the library the plugin
 * uses), on a broker at 127.0.0.1: it sends bench events (binary or
 * structured mode, QoS 1) keeping its in-flight window one below the
 * broker's Receive Maximum (paho 1.3 stalls when the window is full, see
 * plugins/mqtt/README.md), optionally paced to a rate. The far-end
 * subscriber is mqtt_bench_rawsub.h.
 *
 * Threading: start/stop/publish on one bench thread. */
#ifndef MQTT_BENCH_PAHO_H
#define MQTT_BENCH_PAHO_H

#include <stddef.h>
#include <stdint.h>

#include "mqtt_bench_track.h"

typedef struct mb_mqtt mb_mqtt;

/* Connects a publisher (clean start). NULL on failure. */
mb_mqtt *mb_pub_start(const char *url, const char *client_id);
/* Disconnects and frees. NULL is ignored. */
void mb_mqtt_stop(mb_mqtt *c);

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
  long sent, acked, failed;
  double elapsed_s; /* first publish -> last PUBACK */
  int window;       /* in-flight publishes allowed */
} mb_pub_result;

/* Publishes and waits for every PUBACK (at most 120 s after the last send).
 * 0, or -1 when the client could not publish at all. */
int mb_pub_run(mb_mqtt *c, const mb_pub_opts *o, mb_pub_result *r);

#endif
