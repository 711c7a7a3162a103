/* The plugin's MQTT client (MQTT 5 or 3.1.1) on libmosquitto, for both
 * roles: one I/O thread per instance drives the client itself (poll on its
 * socket, mosquitto_loop_read / _write / _misc), hands queued publishes to
 * mosquitto_publish_v5 in batches and is woken by a caller only when it
 * sleeps, never per message. Completions come from libmosquitto's
 * on_publish (PUBACK for QoS 1, PUBCOMP for QoS 2, written for QoS 0).
 * The sink publishes through it (paho MQTTAsync spent 55-65 us of CPU per
 * binary-mode event there, bench/mqtt/README.md, session 4); the source
 * subscribes through it, connected to the ack gate's loopback end
 * (mqtt_gate.h) with a persistent session, and publishes its dead letters.
 *
 * Lifecycle: the connection is made at start and remade after a failure or
 * loss with doubling backoff (reconnect.min .. reconnect.max); each
 * connect, refusal and loss is logged with its reason and the gauge
 * cebridge_mqtt_connected follows the state. Every session runs on a fresh
 * client (the sink's start clean; the source's resume the broker's
 * session): publishes in flight when a connection goes fail and are never
 * resent by the library. keepalive below libmosquitto's minimum of 5 s is
 * raised to 5 s (logged).
 *
 * Threading: new/start/disconnect/free on the control thread; send from
 * any thread; subscribe from the ops only; the ops run on the I/O thread,
 * never concurrently with free and never while the client holds its lock
 * (they may call send). */
#ifndef CEB_MQTT_PUB_H
#define CEB_MQTT_PUB_H

#include <mosquitto.h>
#include <pthread.h>
#include <stdint.h>

#include "mqtt_conf.h"

typedef struct mqtt_pub_ops {
  void (*connected)(void *arg); /* after every successful (re)connect */
  void (*lost)(void *arg);      /* the connection went away */
  void (*tick)(void *arg);      /* about every 50 ms */
  /* A send's outcome: ok with the broker's reason code (MQTT 5; 0 for
   * 3.1.1 and QoS 0), or not ok with reason >= 0x80 (the broker refused)
   * or 0 and a detail (not delivered: connection lost, shutdown). */
  void (*done)(void *arg, void *ctx, int ok, int reason, const char *detail);
  /* A PUBLISH from the broker (NULL: none expected); m and props are
   * libmosquitto's, valid during the call. */
  void (*message)(void *arg, const struct mosquitto_message *m,
                  const mosquitto_property *props);
  /* The SUBACK of mqtt_pub_subscribe: one reason code (granted QoS, or
   * >= 0x80 refused) per filter. */
  void (*subscribed)(void *arg, int count, const int *codes);
} mqtt_pub_ops;

/* How the client connects; NULL for mqtt_pub_new: conf's broker, clean
 * start, TLS per conf (the sink). */
typedef struct mqtt_pub_opts {
  const char *host;         /* where to connect instead of conf's broker */
  int port;                 /* (logs still name conf's broker) */
  int plain;                /* no TLS on this hop (the gate does it) */
  int resume;               /* persistent session: clean start off */
  int64_t session_expiry_s; /* MQTT 5, with resume */
  int receive_max;          /* MQTT 5 Receive Maximum, 0: none sent */
} mqtt_pub_opts;

/* One MQTT 5 property of a PUBLISH: a User Property (user = 1: name and
 * value) or the Content Type (user = 0: name only). Lengths in bytes; no
 * NUL needed. */
typedef struct mqtt_pub_prop {
  int user;
  const char *name, *value;
  size_t name_len, value_len;
} mqtt_pub_prop;

typedef struct mqtt_pub mqtt_pub;

/* Creates the client (nothing connects before start; a client is
 * configured here once to check the options and TLS files). conf, opts'
 * host and arg are borrowed until destroy; client_id is copied; opts may
 * be NULL. CEB_OK, CEB_ENOMEM, or CEB_ECONFIG (TLS files, logged). */
int mqtt_pub_new(const ceb_host *host, ceb_instance *inst,
                 const mqtt_conf *conf, const char *client_id,
                 const mqtt_pub_opts *opts, const mqtt_pub_ops *ops, void *arg,
                 mqtt_pub **out);
/* Starts the I/O thread, which connects at once. */
int mqtt_pub_start(mqtt_pub *p);
/* 1 while a session is up. Any thread. */
int mqtt_pub_is_connected(mqtt_pub *p);
/* 1 once a first connection succeeded. Any thread. */
int mqtt_pub_ever_connected(mqtt_pub *p);
/* How many QoS 1/2 publishes may await acknowledgement: the broker's MQTT 5
 * Receive Maximum (65535 for 3.1.1). Any thread. */
int mqtt_pub_window(mqtt_pub *p);
/* Queues one PUBLISH (topic, payload and the MQTT 5 properties, only
 * Content Type and User Property, are copied; props may be NULL and are
 * ignored for 3.1.1). done(ctx) follows exactly once, on the I/O thread,
 * unless this returns an error (CEB_ESHUTDOWN when not connected,
 * CEB_ETOOLARGE, CEB_EINVAL for a property that is not UTF-8 or not one of
 * those two, CEB_ENOMEM): then it never does. Any thread. */
int mqtt_pub_send(mqtt_pub *p, const char *topic, int qos,
                  const mqtt_pub_prop *props, size_t nprops,
                  const void *payload, size_t len, void *ctx);
/* SUBSCRIBE to n filters at qos; ops.subscribed follows with the SUBACK.
 * MOSQ_ERR_SUCCESS or libmosquitto's error. From the ops only (the
 * connected op resubscribes after every connect). */
int mqtt_pub_subscribe(mqtt_pub *p, size_t n, const char *const *filters,
                       int qos);
/* Sends DISCONNECT (waiting up to timeout_ms for queued publishes to be
 * written) and stops reconnecting; publishes still unacknowledged then
 * fail. Control thread. */
void mqtt_pub_disconnect(mqtt_pub *p, int timeout_ms);
/* Stops the I/O thread and frees; no op is called after return, and
 * publishes still pending are dropped without done. NULL is ignored. */
void mqtt_pub_free(mqtt_pub *p);

#endif
