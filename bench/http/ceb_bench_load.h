/* HTTP load generator for the intermediary: N keep-alive connections on raw
 * non-blocking sockets driven by one epoll loop (one request in flight per
 * connection, no pipelining), POSTing CloudEvents of a fixed size with
 * unique ids and a configurable number of distinct `subject` ordering keys.
 * Ids are PREFIX-CCCC-SSSSSSSSSS (connection, global sequence number) and
 * the subject of sequence S is key-(S mod keys): two events of one key sent
 * on one connection are causally ordered (the second is written after the
 * first's answer), which is what a FIFO-per-key check can rely on.
 * Measures each request from its first byte written to its last response
 * byte read. Always stops by itself: after `count` requests or `duration_ms`,
 * whichever comes first, then waits at most `drain_ms` for the answers still
 * outstanding (those count as timeouts).
 *
 * Single-threaded: one run per thread; results belong to the caller. */
#ifndef CEB_BENCH_LOAD_H
#define CEB_BENCH_LOAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Counters another thread may read while a run goes on (a stall watchdog:
 * bench/kafka/bench_kafka_stall.c). Zeroed by the caller; the run only
 * adds. Waiting requests = sent - answered. */
typedef struct ceb_bench_load_live {
  atomic_long sent;     /* requests whose first byte was written */
  atomic_long answered; /* full responses read, or given up on */
  atomic_long ok;       /* 2xx responses */
} ceb_bench_load_live;

typedef struct ceb_bench_load_opts {
  int port;                  /* 127.0.0.1:port */
  const char *path;          /* request path, e.g. "/events" */
  int connections;           /* 1 .. 4096 */
  long count;                /* requests to send; 0: no limit (duration only) */
  int64_t duration_ms;       /* stop sending after this; 0: no limit (count) */
  int64_t drain_ms;          /* wait for outstanding answers; 0: 30 s */
  int event_size;            /* bytes per event (see ceb_bench_load.c) */
  int keys;                  /* distinct subject values, 1 .. 999999 */
  int binary;                /* 1: binary mode (ce-* headers), 0: structured */
  const char *id_prefix;     /* unique per run; no '#', '@' or '%' */
  const char *source;        /* CloudEvents source */
  const char *type;          /* CloudEvents type */
  ceb_bench_load_live *live; /* NULL, or counters updated as the run goes */
} ceb_bench_load_opts;

/* Latency percentiles in microseconds over the completed requests. */
typedef struct ceb_bench_latency {
  int64_t p50, p90, p99, max;
} ceb_bench_latency;

typedef struct ceb_bench_load_result {
  long sent;             /* requests whose first byte was written */
  long completed;        /* full responses read */
  long status[600];      /* completed responses by HTTP status */
  long transport_errors; /* connection failed / closed without an answer */
  long timeouts;         /* still unanswered when drain_ms ran out */
  double elapsed_s;      /* first request written → last response read */
  ceb_bench_latency lat; /* over completed responses (any status) */
} ceb_bench_load_result;

/* Runs the load. Returns 0 (r filled, even when requests failed) or -1
 * with a one-line reason in err (bad options, no memory, epoll failure). */
int ceb_bench_load_run(const ceb_bench_load_opts *o, ceb_bench_load_result *r,
                       char *err, size_t errlen);

/* Requests answered with a 2xx status. */
long ceb_bench_load_ok(const ceb_bench_load_result *r);

/* Prints "label: N req, X ev/s (2xx), p50 .. p99 .. max .. ms" and one line
 * of non-2xx statuses and transport errors when there were any. */
void ceb_bench_load_print(const char *label, const ceb_bench_load_result *r);

#endif
