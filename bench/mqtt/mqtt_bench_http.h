/* HTTP load for http2mqtt: `conns` keep-alive connections on raw
 * non-blocking sockets in one epoll loop, one request in flight each, POSTing
 * structured CloudEvents of about `size` bytes to 127.0.0.1:port/events.
 * Every event is a bench event (mqtt_bench_track.h): id PREFIX-CONN-SEQ,
 * partitionkey key-K, benchsent = the time its request is written. Each key
 * is sent by one connection only when keys >= conns (connection c sends keys
 * c, c + conns, ...), so FIFO per key is fully defined; with fewer keys each
 * connection uses key c % keys and order is defined per (key, connection).
 * Stops after `count` requests, then waits at most 60 s for the answers.
 *
 * Single-threaded: one run per calling thread. */
#ifndef MQTT_BENCH_HTTP_H
#define MQTT_BENCH_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mb_http_opts {
  int port;
  int conns; /* 1 .. 1024 */
  long count;
  int size; /* target event size in bytes */
  int keys;
  const char *source, *type;
  const char *id_prefix; /* NULL: "mb" */
} mb_http_opts;

typedef struct mb_http_result {
  long sent, accepted /* 202 */, other /* any other status */, errors;
  double elapsed_s;      /* first request written -> last answer read */
  int64_t p50, p99, max; /* request latency, microseconds */
} mb_http_result;

/* 0 with r filled (even when requests failed), -1 with a reason in err. */
int mb_http_run(const mb_http_opts *o, mb_http_result *r, char *err,
                size_t errlen);

/* The key connection `conn` uses for its n-th event (see above). */
int mb_http_key(int conn, long n, int conns, int keys);

#endif
