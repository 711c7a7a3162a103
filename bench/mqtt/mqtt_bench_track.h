/* What every MQTT bench scenario checks at its far end: each bench event
 * carries id "PREFIX-STREAM-SEQ" (PREFIX: "mb" for measured events, "mw"
 * for the warm-up; STREAM: the sending connection or publisher,
 * SEQ: that stream's sequence number, increasing in send order),
 * partitionkey "key-K" and the extension benchsent (CLOCK_MONOTONIC
 * microseconds of the bench process when it was sent). A stream sends the
 * events of one key one after the other, so per (key, stream) the sequence
 * numbers must never go backwards: a lower one is disorder, the same one a
 * duplicate (a redelivery of the latest). The end-to-end latency of each
 * first delivery is now - benchsent.
 *
 * Thread-safe: record from any thread (one lock), snapshot from any. */
#ifndef MQTT_BENCH_TRACK_H
#define MQTT_BENCH_TRACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct mb_track mb_track;

typedef struct mb_counts {
  long delivered;            /* first deliveries */
  long duplicates;           /* the latest of a (key, stream) again */
  long disorder;             /* older than the latest of its (key, stream) */
  long unparsable;           /* no bench id, key or stamp */
  int64_t first_us, last_us; /* CLOCK_MONOTONIC of first / last delivery */
  /* the first disorder seen: key, stream, its seq, the pair's latest */
  long bad_key, bad_stream, bad_seq, bad_last;
} mb_counts;

/* keys * streams pairs are tracked; expect: first deliveries to keep
 * latencies for (more are counted but not kept). NULL on bad sizes. */
mb_track *mb_track_new(int keys, int streams, long expect);
void mb_track_free(mb_track *t);
/* One delivery, given the attribute texts as received (NULL or not
 * NUL-terminated: pass the lengths; -1 means NUL-terminated). */
void mb_track_record(mb_track *t, const char *id, int id_len, const char *key,
                     int key_len, const char *sent, int sent_len);
void mb_track_snapshot(mb_track *t, mb_counts *out);
/* Latency percentiles (microseconds) over the first deliveries so far:
 * sorts a copy. p in 0..100. Returns -1 when there is none. */
int mb_track_latency(mb_track *t, const double *p, int64_t *out, int n);

/* CLOCK_MONOTONIC in microseconds. */
int64_t mb_now_us(void);

#endif
