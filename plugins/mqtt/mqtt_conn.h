/* One paho MQTTAsync client (the source's; it reaches the broker through
 * the ack gate, which does TLS) with its connection lifecycle: the first
 * connection is retried with doubling backoff by a supervisor thread, later
 * losses by paho's automatic reconnect (reconnect.min .. reconnect.max).
 * Every connect, loss and refusal is logged with its reason code, and the
 * gauge cebridge_mqtt_connected follows the state.
 *
 * Threading: init/start/disconnect/destroy on the control thread; the ops
 * callbacks run on paho's threads (connected, lost, message) or on the
 * supervisor thread (tick), never concurrently with destroy. */
#ifndef CEB_MQTT_CONN_H
#define CEB_MQTT_CONN_H

#include <MQTTAsync.h>
#include <pthread.h>

#include "mqtt_conf.h"

typedef struct mqtt_conn_ops {
  void (*connected)(void *arg); /* after every successful (re)connect */
  void (*lost)(void *arg);      /* the connection went away */
  void (*tick)(void *arg);      /* about every 50 ms */
  /* Called with arg (not the conn); NULL for a publisher. */
  MQTTAsync_messageArrived *message;
} mqtt_conn_ops;

typedef struct mqtt_conn_opts {
  const char *uri;          /* "tcp://h:p" (copied) */
  int clean;                /* clean start / clean session */
  int64_t session_expiry_s; /* MQTT 5, with clean == 0 */
  int receive_max;          /* MQTT 5 Receive Maximum, 0: broker default */
  int max_inflight;         /* paho in-flight and buffered messages */
} mqtt_conn_opts;

typedef struct mqtt_conn {
  const ceb_host *host;
  ceb_instance *inst;
  const mqtt_conf *conf; /* borrowed from the owner */
  mqtt_conn_ops ops;
  void *arg;
  MQTTAsync h;
  char *uri;
  char *client_id;
  mqtt_conn_opts opts;
  MQTTProperties props;
  pthread_t thread;
  int thread_started;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int connected;      /* a session is up */
  int connecting;     /* the supervisor's attempt is running */
  int ever_connected; /* paho reconnects on its own from then on */
  int stopping;
  int64_t next_attempt_ms;
  int64_t backoff_ms;
  unsigned long connects; /* successful connects, for tests and logs */
} mqtt_conn;

/* Creates the paho client. client_id is copied. CEB_OK or < 0 logged. */
int mqtt_conn_init(mqtt_conn *c, const ceb_host *host, ceb_instance *inst,
                   const mqtt_conf *conf, const char *client_id,
                   const mqtt_conn_opts *opts, const mqtt_conn_ops *ops,
                   void *arg);
/* Starts the supervisor, which connects at once. */
int mqtt_conn_start(mqtt_conn *c);
/* 1 while a session is up. Any thread. */
int mqtt_conn_is_connected(mqtt_conn *c);
/* 1 once a first connection succeeded. Any thread. */
int mqtt_conn_ever_connected(mqtt_conn *c);
/* Sends DISCONNECT (waiting up to timeout_ms) and stops reconnecting. */
void mqtt_conn_disconnect(mqtt_conn *c, int timeout_ms);
/* Stops the supervisor and frees the client; no callback after return. */
void mqtt_conn_destroy(mqtt_conn *c);

/* Wall-clock ms through the host clock. */
int64_t mqtt_now_ms(const mqtt_conn *c);

/* Adds a string or user property to props; 0 on success. */
int mqtt_props_add(MQTTProperties *props, int id, const char *name,
                   size_t name_len, const char *value, size_t value_len);

#endif
