/* The Kafka source's offset book (plugins/kafka/kafka_offsets.c), driven
 * without a broker: an offset is committable only once every record before
 * it is durable, whatever order the settles come in; gaps in the offsets
 * (compaction, transaction markers) commit past the last durable record; a
 * failed record holds the watermark until it is rewound; a rewind or a
 * revoke detaches the records in flight, whose late settle frees them and
 * moves nothing; an assignment starts afresh; a failed commit is committed
 * again; partitions are independent; the book is kept while settles are
 * owed. */
#include <stdlib.h>

#include "ceb_test.h"
#include "kafka_offsets.h"

/* Appends a new in-flight record at `offset` to sp. */
static ko_rec *submit(ko_book *b, ko_part *sp, int64_t offset) {
  ko_rec *r = ko_rec_new(b, offset);
  CHECK(r != NULL);
  ko_append(sp, r);
  return r;
}

/* The commit point of sp, or -1 when nothing new is committable. */
static int64_t point(ko_part *sp) {
  int64_t to = -1;
  return ko_commit_point(sp, &to) ? to : -1;
}

static void out_of_order(ko_book *b) {
  ko_part *sp = ko_part_get(b, "orders", 0);
  CHECK(sp != NULL);
  ko_reset(b, sp, 1);
  ko_rec *r10 = submit(b, sp, 10), *r11 = submit(b, sp, 11),
         *r12 = submit(b, sp, 12);
  CHECK_INT((int)b->inflight, 3);
  CHECK_INT((int)sp->npending, 3);
  /* Later records durable first: nothing to commit while 10 is in flight. */
  ko_settle(r12, 1);
  ko_settle(r11, 1);
  CHECK_INT((int)point(sp), -1);
  CHECK_INT((int)sp->commit_to, -1);
  CHECK(ko_has_inflight(sp));
  ko_settle(r10, 1);
  CHECK_INT((int)b->inflight, 0);
  CHECK(!ko_has_inflight(sp));
  CHECK_INT((int)point(sp), 13); /* the next offset to read */
  CHECK_INT((int)sp->npending, 0);
  CHECK_INT((int)point(sp), -1); /* committed already */
  /* One in the middle durable: the prefix stops before the gap in
   * durability. */
  ko_rec *a = submit(b, sp, 13), *c = submit(b, sp, 14), *d = submit(b, sp, 15);
  ko_settle(a, 1);
  ko_settle(d, 1);
  CHECK_INT((int)point(sp), 14);
  ko_settle(c, 1);
  CHECK_INT((int)point(sp), 16);
}

static void gaps_and_failures(ko_book *b) {
  ko_part *sp = ko_part_get(b, "compacted", 3);
  ko_reset(b, sp, 1);
  /* Offsets with gaps: the watermark follows the records, not +1 steps. */
  ko_rec *r20 = submit(b, sp, 20), *r25 = submit(b, sp, 25),
         *r30 = submit(b, sp, 30);
  ko_settle(r20, 1);
  ko_settle(r25, 0); /* the host failed it for good */
  ko_settle(r30, 1);
  CHECK_INT((int)b->nfailed, 1);
  CHECK_INT((int)ko_first_failed(sp), 25);
  CHECK_INT((int)point(sp), 21); /* 25 holds the watermark */
  CHECK_INT((int)point(sp), -1);
  /* The source rewinds to the failed record: it and what follows are
   * forgotten (read again), the watermark stays. */
  ko_detach_from(sp, 25);
  CHECK_INT((int)b->nfailed, 0);
  CHECK_INT((int)sp->npending, 0);
  CHECK_INT((int)ko_first_failed(sp), -1);
  CHECK_INT((int)sp->commit_to, 21);
  /* Read again: 25 and 30 durable, the commit point passes the gap. */
  ko_settle(submit(b, sp, 25), 1);
  ko_settle(submit(b, sp, 30), 1);
  CHECK_INT((int)point(sp), 31);
}

static void detached_and_dropped(ko_book *b) {
  ko_part *sp = ko_part_get(b, "detach", 0);
  ko_reset(b, sp, 1);
  ko_rec *r0 = submit(b, sp, 0), *r1 = submit(b, sp, 1);
  ko_rec *r2 = submit(b, sp, 2);
  CHECK_INT((int)b->inflight, 3);
  /* Rewind to 1 with 1 and 2 in flight: detached, still owed a settle. */
  ko_detach_from(sp, 1);
  CHECK_INT((int)sp->npending, 1);
  CHECK_INT((int)b->inflight, 3);
  CHECK(r1->detached && r2->detached && !r0->detached);
  /* Their late settles free them (ASan: no leak, no use after free) and
   * move nothing, even a durable one. */
  ko_settle(r2, 1);
  ko_settle(r1, 0);
  CHECK_INT((int)b->inflight, 1);
  CHECK_INT((int)b->nfailed, 0);
  CHECK_INT((int)point(sp), -1);
  ko_settle(r0, 1);
  CHECK_INT((int)point(sp), 1);
  /* A submit the host did not take: its records are dropped, no settle. */
  submit(b, sp, 1);
  submit(b, sp, 2);
  CHECK_INT((int)b->inflight, 2);
  ko_drop_from(sp, 1);
  CHECK_INT((int)b->inflight, 0);
  CHECK_INT((int)sp->npending, 0);
  CHECK(sp->head == NULL && sp->tail == NULL);
  /* A skipped (dead-lettered without a topic) record is durable on append
   * and never counts in flight. */
  ko_rec *skip = ko_rec_new(b, 1);
  skip->state = KO_DURABLE;
  ko_append(sp, skip);
  CHECK_INT((int)b->inflight, 0);
  CHECK_INT((int)point(sp), 2);
}

static void revoke_assign(ko_book *b) {
  ko_part *p0 = ko_part_get(b, "events", 0), *p1 = ko_part_get(b, "events", 1);
  CHECK(p0 != p1);
  CHECK(ko_part_find(b, "events", 1) == p1);
  CHECK(ko_part_find(b, "events", 2) == NULL);
  CHECK(ko_part_find(b, "other", 0) == NULL);
  ko_reset(b, p0, 1);
  ko_reset(b, p1, 1);
  ko_rec *a = submit(b, p0, 100), *bb = submit(b, p0, 101);
  ko_rec *c = submit(b, p1, 7);
  ko_settle(a, 1);
  ko_settle(c, 1);
  /* Partitions are independent. */
  CHECK_INT((int)point(p1), 8);
  /* Revoke p0 while paused with 101 in flight: the durable prefix is what
   * is committed, then the partition is forgotten. */
  p0->paused = KO_PAUSE_BUSY;
  b->npaused++;
  CHECK_INT((int)point(p0), 101);
  ko_reset(b, p0, 0);
  CHECK(!p0->assigned);
  CHECK_INT(p0->paused, KO_PAUSE_NONE);
  CHECK_INT((int)b->npaused, 0);
  CHECK_INT((int)p0->commit_to, -1);
  CHECK_INT((int)p0->committed, -1);
  CHECK_INT((int)p0->npending, 0);
  CHECK(ko_has_inflight(p0) == 0);
  /* The settle of the revoked record arrives late: nothing moves. */
  ko_settle(bb, 1);
  CHECK_INT((int)point(p0), -1);
  /* Assigned again (same partition object): it starts afresh, and the first
   * durable record is committable even though it equals what was
   * committed before the revoke (the new owner's offset is unknown). */
  CHECK(ko_part_get(b, "events", 0) == p0);
  ko_reset(b, p0, 1);
  CHECK(p0->assigned);
  ko_settle(submit(b, p0, 100), 1);
  CHECK_INT((int)point(p0), 101);
}

static void commit_failures(ko_book *b) {
  ko_part *sp = ko_part_get(b, "retry", 0);
  ko_reset(b, sp, 1);
  ko_settle(submit(b, sp, 5), 1);
  CHECK_INT((int)point(sp), 6);
  /* An async failure report for an older offset: the newer one stands. */
  ko_settle(submit(b, sp, 6), 1);
  CHECK_INT((int)point(sp), 7);
  ko_commit_failed(sp, 6);
  CHECK_INT((int)point(sp), -1);
  /* For the last one asked: committed again. */
  ko_commit_failed(sp, 7);
  CHECK_INT((int)point(sp), 7);
  /* A synchronous failure forgets unconditionally. */
  ko_commit_failed(sp, -1);
  CHECK_INT((int)point(sp), 7);
}

int main(void) {
  ko_book b = {0};
  out_of_order(&b);
  gaps_and_failures(&b);
  detached_and_dropped(&b);
  revoke_assign(&b);
  commit_failures(&b);
  CHECK_INT((int)b.inflight, 0);
  /* Settles still owed: the book is kept, not freed under them. */
  ko_part *sp = ko_part_get(&b, "owed", 0);
  ko_reset(&b, sp, 1);
  ko_rec *r = submit(&b, sp, 0);
  CHECK_INT((int)ko_book_free(&b), 1);
  CHECK(b.parts != NULL);
  ko_settle(r, 1); /* detached by ko_book_free: frees itself */
  CHECK_INT((int)ko_book_free(&b), 0);
  CHECK(b.parts == NULL);
  return ceb_test_done("unit_kafka_offsets");
}
