/* The Kafka source's state and the functions its files share
 * (kafka_source.c: poll loop, submit, flow control, lifecycle;
 * kafka_commit.c: offset commits; kafka_rebalance.c: assign / revoke;
 * kafka_dlq.c: the dead-letter producer; kafka_offsets.c: the offset book).
 *
 * Locking: s->lock guards s->book (record states, the FIFOs, the counters).
 * No thread holds it across a call into the host or librdkafka. The list of
 * partitions and each one's topic, partition and `assigned` change only on
 * the poll thread (the rebalance callback runs there, or on the control
 * thread at close once the poll thread was joined): the poll thread walks
 * and reads them without the lock; the host's and the DLQ producer's
 * callbacks touch only records (ko_settle). */
#ifndef CEB_KAFKA_SOURCE_INT_H
#define CEB_KAFKA_SOURCE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "kafka_common.h"
#include "kafka_offsets.h"
#include "kafka_plugin.h"

#define SRC_BATCH_MAX 256 /* records per read and per submit */
#define SRC_FAIL_BACKOFF_MS 1000

/* A decoded record waiting for the batch submit (poll thread only). */
typedef struct src_entry {
  ceb_event *ev;
  ko_rec *r;
  ko_part *sp;
  const rd_kafka_message_t *m; /* alive until the batch is flushed */
} src_entry;

typedef struct kafka_source {
  kafka_inst ki;
  rd_kafka_t *rk;
  rd_kafka_queue_t *queue;   /* the consumer queue, read in batches */
  rd_kafka_t *dlq;           /* NULL without dlq_topic; used by the poll thread
                                (and by revoke, which runs on it or after it) */
  rd_kafka_conf_t *dlq_conf; /* to rebuild dlq after a fatal error */
  const char *dlq_topic;
  int mapped; /* the section has `map` (ABI 1.2): each record's input
                 document (kafka_doc.h) goes to host->submit_mapped */
  int cooperative;
  int64_t rebalance_wait_ms;
  int64_t commit_interval_ms;
  size_t max_pending;
  rd_kafka_topic_partition_list_t *subscription;
  pthread_t thread;
  int thread_started;
  atomic_int stop;
  atomic_int draining;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* record state changes; drain progress */
  ko_book book;        /* npaused: changed by the poll thread or by the
                          control thread once that one stopped */
  int drained;         /* poll thread: nothing in flight, final commit done */
  int drain_paused;    /* poll thread: the assignment was paused for drain */
  int64_t last_commit;
  src_entry pending[SRC_BATCH_MAX]; /* poll thread: the batch being read */
  size_t npending_batch;
} kafka_source;

/* kafka_source.c */

/* Settles one record (takes s->lock): any thread. */
void ksrc_settle(ko_rec *r, int durable);

/* Pauses sp and seeks it back to `offset`: records from there on are
 * forgotten and read again after resume. Poll thread or rebalance callback;
 * takes s->lock. */
void ksrc_rewind(kafka_source *s, ko_part *sp, int64_t offset, int why,
                 int64_t backoff_ms);

/* Counts n records in cebridge_kafka_source_records_total{result}. */
void ksrc_count(kafka_source *s, const char *result, size_t n);

/* kafka_commit.c */

/* Commits the durable prefix of the given partitions (all assigned ones
 * when only is NULL) that is ahead of what was committed; async or not.
 * Poll thread or rebalance callback; takes s->lock. */
void kafka_commit(kafka_source *s, const rd_kafka_topic_partition_list_t *only,
                  int async);

/* librdkafka's offset_commit_cb (opaque = s): a failed async commit is
 * committed again next time. Poll thread. */
void kafka_on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                     rd_kafka_topic_partition_list_t *offsets, void *opaque);

/* kafka_rebalance.c */

/* librdkafka's rebalance_cb (opaque = s), eager or cooperative: on assign
 * the partitions start afresh; on revoke it waits (bounded by
 * rebalance.wait) for their records in flight and commits the durable
 * prefix; lost partitions are not committed. Poll thread (or close). */
void kafka_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t *parts, void *opaque);

/* kafka_dlq.c */

/* Builds the DLQ producer when dlq_topic is set (CEB_OK without one);
 * CEB_ECONFIG with the reason logged. Control thread, at init. */
int kafka_dlq_open(kafka_source *s, const ceb_config *cfg,
                   const char *const *reserved);

/* Sends a malformed record to the DLQ topic (or skips it, logged, when
 * there is none); its offset counts as durable once the produce is
 * acknowledged. Poll thread; takes s->lock. */
void kafka_dlq_send(kafka_source *s, ko_part *sp, const rd_kafka_message_t *m,
                    const char *reason);
/* The same for a record r already in sp's FIFO (appended = 1: a mapped
 * batch's record the host refused, in flight): r is settled by the dead
 * letter's delivery report (durable), at once without a dlq_topic, or as
 * failed when the produce cannot be queued (the partition is read again
 * from it). appended = 0: r is new and appended here. Poll thread. */
void kafka_dlq_send_rec(kafka_source *s, ko_part *sp,
                        const rd_kafka_message_t *m, const char *reason,
                        ko_rec *r, int appended);

/* Serves delivery reports and replaces a producer that raised a fatal
 * error (its records fail, so their partitions are read again). Poll
 * thread. */
void kafka_dlq_poll(kafka_source *s);

/* Flushes (bounded) and destroys the producer. After the poll thread. */
void kafka_dlq_close(kafka_source *s);

#endif
