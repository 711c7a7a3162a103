/* The Kafka source's offset book: per partition, the records submitted and
 * not yet settled in a FIFO (offset order), and the commit watermark, the
 * end of the durable prefix. An offset becomes committable only once every
 * record before it is durable (or dead-lettered / skipped).
 *
 * No librdkafka handle and no lock in here, so it can be driven without a
 * broker (unit_kafka_offsets). Threading: not thread-safe; the source calls
 * every function with its own lock held (the poll thread, the rebalance
 * callback and the host's submit callbacks share one book). */
#ifndef CEB_KAFKA_OFFSETS_H
#define CEB_KAFKA_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

/* A record's state. */
enum { KO_INFLIGHT = 0, KO_DURABLE = 1, KO_FAILED = 2 };

/* Why a partition is paused (the source's flow control; kept here because
 * an assignment or a revoke resets it). */
enum {
  KO_PAUSE_NONE = 0,
  KO_PAUSE_BUSY,
  KO_PAUSE_FULL,
  KO_PAUSE_FAILED,
  KO_PAUSE_DRAIN
};

struct ko_book;

typedef struct ko_rec {
  struct ko_rec *next;
  struct ko_book *book;
  int64_t offset;
  int state;    /* KO_* */
  int detached; /* no longer in a FIFO: ko_settle frees it */
} ko_rec;

typedef struct ko_part {
  struct ko_part *next; /* every partition seen; freed by ko_book_free */
  char *topic;
  int32_t partition;
  int assigned;
  ko_rec *head, *tail; /* pending records, offset order */
  size_t npending;
  int64_t commit_to; /* next offset to commit (durable prefix end), -1 */
  int64_t committed; /* last committed next-offset, -1 unknown */
  int paused;        /* KO_PAUSE_* */
  int64_t resume_not_before; /* monotonic ms */
} ko_part;

typedef struct ko_book {
  ko_part *parts;
  size_t inflight; /* records appended KO_INFLIGHT whose settle has not run */
  size_t nfailed;  /* KO_FAILED records still in a FIFO */
  size_t npaused;  /* partitions with paused != KO_PAUSE_NONE */
  void *owner;     /* the source, for ko_settle's callers */
} ko_book;

/* The partition, or NULL when never seen. */
ko_part *ko_part_find(ko_book *b, const char *topic, int32_t partition);

/* The partition, created (unassigned, nothing committed) when new; NULL
 * when out of memory. */
ko_part *ko_part_get(ko_book *b, const char *topic, int32_t partition);

/* A new record of b at `offset`, state KO_INFLIGHT, not in a FIFO; NULL when
 * out of memory. The caller appends it (ko_append) or frees it. */
ko_rec *ko_rec_new(ko_book *b, int64_t offset);

/* Appends r (its offset above every pending one) to sp's FIFO; a
 * KO_INFLIGHT record counts in b->inflight until ko_settle or a ko_drop. */
void ko_append(ko_part *sp, ko_rec *r);

/* Removes and frees the records at or after `from` (all when from < 0),
 * which were appended for a submit or produce that was not taken: no settle
 * will run for them. */
void ko_drop_from(ko_part *sp, int64_t from);

/* Takes the records at or after `from` (all when from < 0) out of the FIFO:
 * settled ones are freed, in-flight ones are detached (ko_settle frees
 * them). What was detached is read again, so it never counts as durable. */
void ko_detach_from(ko_part *sp, int64_t from);

/* The settle of an in-flight record: durable or failed for good. Frees a
 * detached record. */
void ko_settle(ko_rec *r, int durable);

/* Moves the watermark over the durable prefix (freeing those records);
 * returns 1 when commit_to moved. */
int ko_pop_durable(ko_part *sp);

/* Pops the durable prefix; when the watermark is ahead of what was
 * committed, writes it to *to, records it as committed and returns 1. */
int ko_commit_point(ko_part *sp, int64_t *to);

/* A commit of `offset` failed: commit again next time (only when it is
 * still the last one asked for; offset < 0 forgets unconditionally). */
void ko_commit_failed(ko_part *sp, int64_t offset);

/* 1 when a record of sp is still in flight. */
int ko_has_inflight(const ko_part *sp);

/* The offset of sp's first failed record, or -1. */
int64_t ko_first_failed(const ko_part *sp);

/* An assignment (assigned = 1) or a revoke (assigned = 0): forgets the
 * pending records (detached), the pause and the watermark; the committed
 * offset is librdkafka's to tell from here on. */
void ko_reset(ko_book *b, ko_part *sp, int assigned);

/* Detaches every record and returns how many settles are still owed. When
 * none, frees the partitions; otherwise keeps them (settles would write
 * into them). */
size_t ko_book_free(ko_book *b);

#endif
