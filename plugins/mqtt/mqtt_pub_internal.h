/* Internals of the sink's publisher (mqtt_pub.h), shared by its two files:
 * mqtt_pub.c (the queue, the session loop, the API) and mqtt_pub_link.c
 * (the socket and TLS layer, CONNECT / CONNACK). Not for other files.
 *
 * Threading: as mqtt_pub.h; the I/O-thread-only fields are touched by the
 * I/O thread alone. */
#ifndef CEB_MQTT_PUB_INTERNAL_H
#define CEB_MQTT_PUB_INTERNAL_H

#include <sys/types.h>

#include "mqtt_pub.h"
#include "mqtt_tls.h"

#define MQTT_PUB_TICK_MS 50

/* One PUBLISH packet, encoded whole; the packet id is patched in when it
 * is written. */
typedef struct pub_pkt {
  struct pub_pkt *next;
  void *ctx;
  int qos;
  int stage;     /* QoS 2: 0 awaiting PUBREC, 1 awaiting PUBCOMP */
  unsigned id;   /* assigned when written (QoS 1/2) */
  size_t id_off; /* where the packet id goes */
  size_t len;
  unsigned char buf[]; /* the packet */
} pub_pkt;

typedef struct pkt_list {
  pub_pkt *head, *tail;
  size_t n;
} pkt_list;

struct mqtt_pub {
  const ceb_host *host;
  ceb_instance *inst;
  const mqtt_conf *conf;
  mqtt_pub_ops ops;
  void *arg;
  char *client_id;
  pthread_t thread;
  int started;
  int efd; /* wakes the I/O thread */
  /* shared, under lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pkt_list queue; /* sent by callers, not yet taken by the I/O thread */
  int sleeping;   /* the I/O thread waits in poll: a send wakes it */
  int connected, ever_connected, stopping, disconnecting, disconnected;
  int bye_timeout_ms; /* how long disconnecting may write what is queued */
  int window;
  unsigned long connects;
  SSL_CTX *ctx; /* tls: made at init */
  /* I/O thread only */
  int fd;
  SSL *ssl;          /* tls: the session's connection over fd */
  pkt_list pending;  /* taken, not yet written (window full) */
  pkt_list inflight; /* written, awaiting PUBACK / PUBREC / PUBCOMP */
  pkt_list flushing; /* QoS 0 in the write buffer: done once written */
  unsigned next_id;
  unsigned char *wbuf;
  size_t wlen, woff, wcap;
  unsigned char *rbuf;
  size_t rlen, rcap;
  int keepalive_ms;
  int64_t last_write_ms, ping_sent_ms, next_tick_ms;
  int64_t backoff_ms, next_attempt_ms;
};

/* Monotonic ms: I/O timing (keep-alive, ticks, backoff, connect timeouts)
 * runs on it, the broker's timers being real time whatever the host's
 * clock says. */
int64_t mqtt_pub_now_ms(void);
/* Writes up to n bytes of the session: how many, 0 when it would block, -1
 * when the connection broke. I/O thread. */
ssize_t mqtt_pub_io_send(mqtt_pub *p, const void *b, size_t n);
/* Reads up to n bytes: how many, 0 when nothing is there now, -1 when the
 * connection closed or broke. I/O thread. */
ssize_t mqtt_pub_io_recv(mqtt_pub *p, void *b, size_t n);
/* Closes the session's TLS and socket. I/O thread. */
void mqtt_pub_io_close(mqtt_pub *p);
/* Waits until fd is ready for events (1), the deadline passes (0) or the
 * publisher stops (-1). I/O thread. */
int mqtt_pub_wait_fd(mqtt_pub *p, int fd, short events, int64_t deadline);
/* Sets the gauge cebridge_mqtt_connected. */
void mqtt_pub_gauge(mqtt_pub *p, int up);
/* Encoding: a variable byte integer, a 2-byte length and bytes. */
size_t mqtt_pub_put_varint(unsigned char *b, uint32_t v);
size_t mqtt_pub_put_bytes(unsigned char *b, const void *s, size_t n);
/* One connection attempt (TCP, TLS, CONNECT / CONNACK): on success the
 * session is up (logged, gauge, ops.connected called); on failure the next
 * attempt is scheduled with backoff and the reason logged. I/O thread. */
void mqtt_pub_connect_once(mqtt_pub *p);

#endif
