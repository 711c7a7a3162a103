/* A webhook receiver for the delivery benchmark: libmicrohttpd on
 * 127.0.0.1 (ephemeral port) answering every POST with 204 once its body is
 * read. It counts deliveries of bench events (ce-id "PREFIX-CONN-SEQ",
 * ce-subject "key-K", binary mode; see ceb_bench_load.h) and checks FIFO per
 * key where the load made the order defined: per (key, sending connection)
 * the sequence numbers never go backwards (a redelivery of the latest one is
 * counted as a duplicate). Events of one key sent concurrently on different
 * connections have no defined order, so none is asserted between them.
 * Callbacks run on libmicrohttpd's threads; the counters are read through
 * ceb_bench_receiver_snapshot from any thread. */
#ifndef CEB_BENCH_RECEIVER_H
#define CEB_BENCH_RECEIVER_H

#include <stdint.h>

typedef struct ceb_bench_receiver ceb_bench_receiver;

typedef struct ceb_bench_rx_counts {
  long delivered;            /* first deliveries of an event */
  long duplicates;           /* redeliveries of a key's latest event */
  long disorder;             /* an event older than its key's latest one */
  long unparsable;           /* requests without a bench ce-id / ce-subject */
  int64_t first_us, last_us; /* CLOCK_MONOTONIC of the first / last one */
  /* the first disorder: key, connection, event seq, the pair's latest */
  long bad_key, bad_conn, bad_seq, bad_last;
} ceb_bench_rx_counts;

/* Starts the receiver for `keys` ordering keys and `conns` load connections
 * (keys * conns <= 16M) on `threads` threads; NULL on failure (reason on
 * stderr). */
ceb_bench_receiver *ceb_bench_receiver_start(int keys, int conns, int threads);
int ceb_bench_receiver_port(const ceb_bench_receiver *rx);
/* Zeroes the counters; keeps the order state, so a later phase is still
 * checked against what earlier phases delivered. */
void ceb_bench_receiver_reset(ceb_bench_receiver *rx);
void ceb_bench_receiver_snapshot(ceb_bench_receiver *rx,
                                 ceb_bench_rx_counts *out);
/* Stops the daemon and frees. NULL is ignored. */
void ceb_bench_receiver_stop(ceb_bench_receiver *rx);

#endif
