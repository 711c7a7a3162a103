/* Internals of the plugin's MQTT client (mqtt_pub.h; both roles), shared by
 * its two files: mqtt_pub.c (the queue, the session loop, the API) and
 * mqtt_pub_link.c (one libmosquitto client per session: its options, TLS,
 * the connection attempt and the callbacks, the subscription). Not for
 * other files.
 *
 * Threading: as mqtt_pub.h; the I/O-thread-only fields are touched by the
 * I/O thread alone. */
#ifndef CEB_MQTT_PUB_INTERNAL_H
#define CEB_MQTT_PUB_INTERNAL_H

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "mqtt_pub.h"

#define MQTT_PUB_TICK_MS 50
#define MQTT_PUB_MIDS 65536        /* message ids 1..65535 */
#define MQTT_PUB_MIN_KEEPALIVE_S 5 /* libmosquitto refuses less */

/* One publish handed to mqtt_pub_send, waiting for the I/O thread. */
typedef struct pub_rec {
  struct pub_rec *next;
  void *ctx;
  int qos;
  mosquitto_property *props; /* MQTT 5 only */
  size_t len;
  char *payload; /* points into data */
  char data[];   /* topic, NUL, payload */
} pub_rec;

typedef struct rec_list {
  pub_rec *head, *tail;
  size_t n;
} rec_list;

struct mqtt_pub {
  const ceb_host *host;
  ceb_instance *inst;
  const mqtt_conf *conf;
  mqtt_pub_ops ops;
  void *arg;
  char *client_id;
  mqtt_pub_opts opts; /* host: conf's broker unless given */
  pthread_t thread;
  int started;
  int efd; /* wakes the I/O thread */
  /* shared, under lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  rec_list queue; /* sent by callers, not yet taken by the I/O thread */
  int sleeping;   /* the I/O thread waits in poll: a send wakes it */
  int connected, ever_connected, stopping, disconnecting, disconnected;
  int bye_timeout_ms; /* how long disconnecting may write what is queued */
  int window;
  unsigned long connects;
  int keepalive_s; /* conf->keepalive_s, at least libmosquitto's minimum */
  /* I/O thread only */
  struct mosquitto *mosq; /* the session's client; NULL between sessions */
  int connecting;         /* CONNECT sent, CONNACK awaited */
  int refused;            /* the CONNACK's refusal reason, or 0 */
  int gone;               /* libmosquitto reported the connection closed */
  int64_t connect_deadline;
  rec_list pending; /* taken, not yet published (all message ids in use) */
  void **by_mid;    /* ctx of each publish awaiting completion, by mid */
  size_t outstanding;
  void *cur_ctx; /* the publish being handed over (completes by cur_mid) */
  int cur_mid;
  int64_t next_tick_ms, backoff_ms, next_attempt_ms;
};

/* Monotonic ms: I/O timing (ticks, backoff, connect timeouts) runs on it,
 * whatever the host's clock says. */
int64_t mqtt_pub_now_ms(void);
/* Sets the gauge cebridge_mqtt_connected. */
void mqtt_pub_gauge(mqtt_pub *p, int up);
/* Makes a configured client (protocol version, credentials, TLS) with the
 * callbacks; NULL with the reason logged. Any thread (init or I/O). */
struct mosquitto *mqtt_pub_client_new(mqtt_pub *p);
/* One connection attempt: a fresh client, TCP (and TLS) connect and the
 * CONNECT; the CONNACK comes through the session loop. On failure the next
 * attempt is scheduled with backoff and the reason logged. I/O thread. */
void mqtt_pub_connect_once(mqtt_pub *p);
/* The attempt in progress failed (no CONNACK in time, refused, closed):
 * frees the client, logs, schedules the next attempt. I/O thread. */
void mqtt_pub_connect_failed(mqtt_pub *p, const char *why);
/* A publish completed: ok, the broker's reason code, detail. I/O thread. */
void mqtt_pub_complete(mqtt_pub *p, int mid, int ok, int reason,
                       const char *detail);

#endif
