/* Kafka source: a consumer group whose offsets follow durability.
 *
 * One poll thread per instance consumes, decodes (CloudEvents Kafka binding,
 * binary or structured per record) and submits the events of what one read
 * returned (up to SRC_BATCH_MAX records, across partitions) in one submit:
 * one journal op for the batch instead of one per record. Each record in
 * flight is a src_rec in its partition's FIFO (offset order). The
 * host's submit callback, on a host thread, only marks a record durable or
 * failed; the poll thread pops the contiguous durable prefix of every
 * partition and commits it asynchronously. So an offset is committed only
 * once every record before it is durable (or dead-lettered).
 *
 * Backpressure: a submit refused with CEB_EBUSY (or the host draining, or
 * too many records pending on a partition) pauses the partition and seeks it
 * back to the first record not taken; it resumes when host->accepting()
 * says so. A record the host failed for good (CEB_EIO) rewinds its partition
 * the same way, so it is read and submitted again.
 *
 * Malformed records (decode fails, or the host, which validates, refuses
 * with CEB_EINVAL / CEB_EVALIDATION / CEB_ETOOLARGE) never block the
 * partition: they are produced raw to `dlq_topic` with ceb_dlq_* headers and
 * count as durable once that produce is acknowledged; without a dlq_topic
 * they are logged and skipped. The batch read so far is submitted before a
 * record is dead-lettered (FIFO order), and a batch the host refuses for one
 * event is submitted again record by record, which isolates that one.
 *
 * Rebalances (eager by default; cooperative-sticky works when configured):
 * on revoke the rebalance callback waits, bounded by `rebalance.wait`, for
 * the in-flight records of the revoked partitions, commits their durable
 * prefix synchronously and forgets the rest, which the next owner re-reads.
 * Lost partitions are not committed.
 *
 * Locking: s->lock guards record states, the FIFOs and the counters. The
 * poll thread never holds it across a call into the host or librdkafka.
 * A src_rec is freed by the poll thread once its callback ran, or by the
 * callback once the poll thread detached it (detached = 1). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_common.h"
#include "kafka_plugin.h"

#define SRC_POLL_MS 100
#define SRC_BATCH_MAX 256 /* records per read and per submit */
#define SRC_SEEK_TIMEOUT_MS 5000
#define SRC_FAIL_BACKOFF_MS 1000
#define SRC_BUSY_BACKOFF_MS                                                    \
  100 /* also bounds the retry rate when                                       \
         accepting() and submit() disagree */

enum { REC_INFLIGHT = 0, REC_DURABLE = 1, REC_FAILED = 2 };
enum { PAUSE_NONE = 0, PAUSE_BUSY, PAUSE_FULL, PAUSE_FAILED, PAUSE_DRAIN };

typedef struct src_rec {
  struct src_rec *next;
  struct kafka_source *s;
  int64_t offset;
  int state;    /* REC_* */
  int detached; /* no longer in a FIFO: the callback frees it */
} src_rec;

typedef struct src_part {
  struct src_part *next; /* every partition seen; freed at destroy */
  char *topic;
  int32_t partition;
  int assigned;
  src_rec *head, *tail; /* pending records, offset order */
  size_t npending;
  int64_t commit_to; /* next offset to commit (durable prefix end), -1 */
  int64_t committed; /* last committed next-offset, -1 unknown */
  int paused;        /* PAUSE_* */
  int64_t resume_not_before; /* monotonic ms */
} src_part;

/* A decoded record waiting for the batch submit (poll thread only). */
typedef struct src_entry {
  ceb_event *ev;
  src_rec *r;
  src_part *sp;
  const rd_kafka_message_t *m; /* alive until the batch is flushed */
} src_entry;

/* One batch submit in flight: its callback settles every record. */
typedef struct src_batch {
  struct kafka_source *s;
  size_t n;
  src_rec *recs[];
} src_batch;

typedef struct kafka_source {
  kafka_inst ki;
  rd_kafka_t *rk;
  rd_kafka_queue_t *queue;   /* the consumer queue, read in batches */
  rd_kafka_t *dlq;           /* NULL without dlq_topic; used by the poll thread
                                (and by revoke, which runs on it or after it) */
  rd_kafka_conf_t *dlq_conf; /* to rebuild dlq after a fatal error */
  const char *dlq_topic;
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
  src_part *parts;
  size_t inflight;  /* records whose callback has not run */
  size_t nfailed;   /* REC_FAILED records still in a FIFO */
  size_t npaused;   /* partitions paused; changed by the poll thread or
                       by the control thread once that one stopped */
  int drained;      /* poll thread: nothing in flight, final commit done */
  int drain_paused; /* poll thread: the assignment was paused for drain */
  int64_t last_commit;
  src_entry pending[SRC_BATCH_MAX]; /* poll thread: the batch being read */
  size_t npending_batch;
} kafka_source;

const ceb_config_spec kafka_source_spec[] = {
    {"brokers", CEB_CFG_LIST, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Bootstrap brokers, host:port[,host:port...]."},
    {"group.id", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Consumer group; offsets are committed for it once events are "
     "durable."},
    {"topics", CEB_CFG_LIST, 0, NULL, 0, 0, NULL,
     "Topics to consume (at least one of topics / topic.regex)."},
    {"topic.regex", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Subscribe to every topic matching this regular expression; must start "
     "with '^' (librdkafka's convention)."},
    {"dlq_topic", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Topic malformed records are produced to, raw, with ceb_dlq_reason, "
     "ceb_dlq_topic, ceb_dlq_partition and ceb_dlq_offset headers. Unset: "
     "they are logged and skipped."},
    {"commit.interval", CEB_CFG_DURATION, 0, "200ms", 0, 60000, NULL,
     "Least time between two asynchronous offset commits."},
    {"rebalance.wait", CEB_CFG_DURATION, 0, "10s", 0, 300000, NULL,
     "On partition revocation: how long to wait for events in flight to "
     "become durable before committing and giving the partitions up."},
    {"max_pending", CEB_CFG_INT, 0, "10000", 1, 10000000, NULL,
     "Records per partition submitted but not yet durable above which the "
     "partition pauses."},
    {"rdkafka.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL,
     "Any librdkafka consumer property (rdkafka.session.timeout.ms = 6000, "
     "rdkafka.security.protocol = SASL_SSL ...); a bad key fails start-up "
     "with librdkafka's message."},
    CEB_CONFIG_SPEC_END};

static const char *const source_defaults[] = {"enable.auto.commit",
                                              "false",
                                              "enable.auto.offset.store",
                                              "false",
                                              "auto.offset.reset",
                                              "earliest",
                                              "enable.partition.eof",
                                              "false",
                                              NULL};
static const char *const source_reserved[] = {
    "enable.auto.commit", "enable.auto.offset.store", "group.id",
    "rebalance_cb",       "offset_commit_cb",         NULL};
/* The DLQ producer shares brokers and security settings with the consumer;
 * librdkafka ignores (with a notice) consumer-only properties. */
static const char *const dlq_defaults[] = {"enable.idempotence", "true", "acks",
                                           "all", NULL};

/* ---- partitions and records (callers hold s->lock unless noted) ---- */

static src_part *part_find(kafka_source *s, const char *topic, int32_t p) {
  for (src_part *sp = s->parts; sp; sp = sp->next)
    if (sp->partition == p && !strcmp(sp->topic, topic)) return sp;
  return NULL;
}

static src_part *part_get(kafka_source *s, const char *topic, int32_t p) {
  src_part *sp = part_find(s, topic, p);
  if (sp) return sp;
  sp = calloc(1, sizeof *sp);
  if (!sp || !(sp->topic = strdup(topic))) {
    free(sp);
    return NULL;
  }
  sp->partition = p;
  sp->commit_to = sp->committed = -1;
  sp->next = s->parts;
  s->parts = sp;
  return sp;
}

static void rec_append(src_part *sp, src_rec *r) {
  if (sp->tail)
    sp->tail->next = r;
  else
    sp->head = r;
  sp->tail = r;
  sp->npending++;
}

/* Removes the tail record r (just appended, callback never to run). */
static void rec_drop_tail(src_part *sp, src_rec *r) {
  src_rec **pp = &sp->head;
  while (*pp != r)
    pp = &(*pp)->next;
  *pp = NULL;
  sp->tail = NULL;
  for (src_rec *x = sp->head; x; x = x->next)
    sp->tail = x;
  sp->npending--;
  free(r);
}

/* Unlinks the records at or after `from` (all when from < 0) from the
 * FIFO and returns them, in order; the caller disposes of them. */
static src_rec *recs_cut_from(src_part *sp, int64_t from) {
  src_rec **pp = &sp->head;
  while (*pp && from >= 0 && (*pp)->offset < from)
    pp = &(*pp)->next;
  src_rec *r = *pp;
  *pp = NULL;
  sp->tail = NULL;
  for (src_rec *x = sp->head; x; x = x->next)
    sp->tail = x;
  return r;
}

/* Frees the records at or after `from`: ones appended for a submit the
 * host did not take, so no callback will run for them. */
static void recs_drop_from(src_part *sp, int64_t from) {
  src_rec *r = recs_cut_from(sp, from);
  while (r) {
    src_rec *next = r->next;
    sp->npending--;
    free(r);
    r = next;
  }
}

/* Detaches every record at or after `from` (all when from < 0). */
static void recs_detach_from(src_part *sp, int64_t from) {
  src_rec *r = recs_cut_from(sp, from);
  while (r) {
    src_rec *next = r->next;
    sp->npending--;
    if (r->state == REC_INFLIGHT) {
      r->detached = 1; /* its callback frees it */
    } else {
      if (r->state == REC_FAILED) r->s->nfailed--;
      free(r);
    }
    r = next;
  }
}

/* Pops the durable prefix; returns 1 when commit_to moved. */
static int recs_pop_durable(src_part *sp) {
  int moved = 0;
  while (sp->head && sp->head->state == REC_DURABLE) {
    src_rec *r = sp->head;
    sp->head = r->next;
    if (!sp->head) sp->tail = NULL;
    sp->commit_to = r->offset + 1;
    sp->npending--;
    free(r);
    moved = 1;
  }
  return moved;
}

static int part_has_inflight(const src_part *sp) {
  for (const src_rec *r = sp->head; r; r = r->next)
    if (r->state == REC_INFLIGHT) return 1;
  return 0;
}

/* ---- callbacks from the host and the DLQ producer ---- */

static void rec_settle(src_rec *r, int durable) {
  kafka_source *s = r->s;
  pthread_mutex_lock(&s->lock);
  s->inflight--;
  if (r->detached) {
    free(r);
  } else {
    r->state = durable ? REC_DURABLE : REC_FAILED;
    s->nfailed += !durable;
  }
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

static void on_submitted(void *arg, const ceb_submit_result *res) {
  rec_settle(arg, res->status == CEB_OK);
}

static void on_batch_submitted(void *arg, const ceb_submit_result *res) {
  src_batch *b = arg;
  kafka_source *s = b->s;
  int durable = res->status == CEB_OK;
  pthread_mutex_lock(&s->lock);
  s->inflight -= b->n;
  for (size_t i = 0; i < b->n; i++) {
    src_rec *r = b->recs[i];
    if (r->detached) {
      free(r);
    } else {
      r->state = durable ? REC_DURABLE : REC_FAILED;
      s->nfailed += !durable;
    }
  }
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  free(b);
}

static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                            void *opaque) {
  (void)rk;
  kafka_source *s = opaque;
  src_rec *r = m->_private;
  if (m->err)
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
            "dead-lettering offset %lld to %s failed (%s): will re-read it",
            (long long)r->offset, s->dlq_topic, rd_kafka_err2str(m->err));
  rec_settle(r, m->err == RD_KAFKA_RESP_ERR_NO_ERROR);
}

/* ---- pause, rewind, resume (poll thread or rebalance callback) ---- */

static rd_kafka_topic_partition_list_t *one_tp(const src_part *sp,
                                               int64_t offset) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, sp->topic, sp->partition)->offset =
      offset;
  return l;
}

/* Pauses sp and seeks it back to `offset`: records from there on are
 * forgotten and read again after resume. */
static void part_rewind(kafka_source *s, src_part *sp, int64_t offset, int why,
                        int64_t backoff_ms) {
  pthread_mutex_lock(&s->lock);
  recs_detach_from(sp, offset);
  int was_paused = sp->paused;
  s->npaused += !was_paused;
  sp->paused = why;
  sp->resume_not_before = kafka_mono_ms() + backoff_ms;
  pthread_mutex_unlock(&s->lock);
  rd_kafka_topic_partition_list_t *l = one_tp(sp, offset);
  if (!was_paused) rd_kafka_pause_partitions(s->rk, l);
  /* A timed seek guarantees no record fetched before it is returned. */
  rd_kafka_error_t *e = rd_kafka_seek_partitions(s->rk, l, SRC_SEEK_TIMEOUT_MS);
  if (e) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "seek %s[%d] to %lld failed: %s", sp->topic, (int)sp->partition,
            (long long)offset, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
  }
  rd_kafka_topic_partition_list_destroy(l);
  if (!was_paused)
    s->ki.host->metric(s->ki.inst, CEB_METRIC_COUNTER,
                       "kafka_source_pauses_total", NULL, 1);
}

static void resume_ready(kafka_source *s) {
  if (atomic_load(&s->draining) || s->npaused == 0) return;
  int accepting = -1;
  int64_t now = kafka_mono_ms();
  for (src_part *sp = s->parts; sp; sp = sp->next) {
    pthread_mutex_lock(&s->lock);
    int ready =
        sp->assigned && sp->paused && now >= sp->resume_not_before &&
        (sp->paused != PAUSE_FULL || sp->npending <= s->max_pending / 2);
    pthread_mutex_unlock(&s->lock);
    if (!ready) continue;
    if (accepting < 0) accepting = s->ki.host->accepting(s->ki.inst);
    if (!accepting) return;
    rd_kafka_topic_partition_list_t *l = one_tp(sp, RD_KAFKA_OFFSET_INVALID);
    rd_kafka_resume_partitions(s->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    pthread_mutex_lock(&s->lock);
    sp->paused = PAUSE_NONE;
    s->npaused--;
    pthread_mutex_unlock(&s->lock);
  }
}

/* Rewinds partitions whose first failed record the host could not make
 * durable: it is read and submitted again after a back-off. */
static void rewind_failed(kafka_source *s) {
  pthread_mutex_lock(&s->lock);
  size_t nfailed = s->nfailed;
  pthread_mutex_unlock(&s->lock);
  for (src_part *sp = nfailed ? s->parts : NULL; sp; sp = sp->next) {
    int64_t at = -1;
    pthread_mutex_lock(&s->lock);
    for (src_rec *r = sp->head; r; r = r->next)
      if (r->state == REC_FAILED) {
        at = r->offset;
        break;
      }
    pthread_mutex_unlock(&s->lock);
    if (at >= 0 && sp->assigned) {
      CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
              "%s[%d] offset %lld was not made durable: reading it again",
              sp->topic, (int)sp->partition, (long long)at);
      part_rewind(s, sp, at, PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    }
  }
}

/* ---- commits ---- */

/* Collects the durable prefix of the given partitions (all assigned ones
 * when only is NULL) that is ahead of what was committed. */
static rd_kafka_topic_partition_list_t *
collect_commits(kafka_source *s, const rd_kafka_topic_partition_list_t *only) {
  rd_kafka_topic_partition_list_t *l = NULL;
  pthread_mutex_lock(&s->lock);
  for (src_part *sp = s->parts; sp; sp = sp->next) {
    if (only ? !rd_kafka_topic_partition_list_find(only, sp->topic,
                                                   sp->partition)
             : !sp->assigned)
      continue;
    recs_pop_durable(sp);
    if (sp->commit_to < 0 || sp->commit_to == sp->committed) continue;
    if (!l) l = rd_kafka_topic_partition_list_new(4);
    rd_kafka_topic_partition_list_add(l, sp->topic, sp->partition)->offset =
        sp->commit_to;
    sp->committed = sp->commit_to;
  }
  pthread_mutex_unlock(&s->lock);
  return l;
}

static void commit(kafka_source *s, const rd_kafka_topic_partition_list_t *only,
                   int async) {
  rd_kafka_topic_partition_list_t *l = collect_commits(s, only);
  if (!l) return;
  rd_kafka_resp_err_t e = rd_kafka_commit(s->rk, l, async);
  if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN, "offset commit failed: %s",
            rd_kafka_err2str(e));
    /* Commit again next time. */
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < l->cnt; i++) {
      src_part *sp = part_find(s, l->elems[i].topic, l->elems[i].partition);
      if (sp) sp->committed = -1;
    }
    pthread_mutex_unlock(&s->lock);
  }
  rd_kafka_topic_partition_list_destroy(l);
}

/* Async commit results, served by consumer_poll on the poll thread. */
static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque) {
  (void)rk;
  kafka_source *s = opaque;
  if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET || !offsets) return;
  CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN, "offset commit failed: %s",
          rd_kafka_err2str(err));
  pthread_mutex_lock(&s->lock);
  for (int i = 0; i < offsets->cnt; i++) {
    src_part *sp =
        part_find(s, offsets->elems[i].topic, offsets->elems[i].partition);
    if (sp && sp->committed == offsets->elems[i].offset) sp->committed = -1;
  }
  pthread_mutex_unlock(&s->lock);
}

/* ---- rebalance ---- */

static int revoked_inflight(kafka_source *s,
                            const rd_kafka_topic_partition_list_t *parts) {
  for (int i = 0; i < parts->cnt; i++) {
    src_part *sp =
        part_find(s, parts->elems[i].topic, parts->elems[i].partition);
    if (sp && part_has_inflight(sp)) return 1;
  }
  return 0;
}

static void revoke(kafka_source *s, rd_kafka_topic_partition_list_t *parts,
                   int lost) {
  /* Bounded wait for the revoked partitions' records in flight. */
  int64_t until = kafka_mono_ms() + s->rebalance_wait_ms;
  pthread_mutex_lock(&s->lock);
  while (!lost && revoked_inflight(s, parts) && kafka_mono_ms() < until) {
    pthread_mutex_unlock(&s->lock);
    if (s->dlq) rd_kafka_poll(s->dlq, 0); /* DLQ reports make records durable */
    pthread_mutex_lock(&s->lock);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 20 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
  }
  int still = revoked_inflight(s, parts);
  pthread_mutex_unlock(&s->lock);
  if (lost)
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
            "%d partitions lost: not committing, the new owner re-reads",
            parts->cnt);
  else {
    if (still)
      CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
              "rebalance.wait passed with events in flight: committing the "
              "durable prefix only, the rest will be read again");
    commit(s, parts, 0);
  }
  pthread_mutex_lock(&s->lock);
  for (int i = 0; i < parts->cnt; i++) {
    src_part *sp =
        part_find(s, parts->elems[i].topic, parts->elems[i].partition);
    if (!sp) continue;
    recs_detach_from(sp, -1);
    sp->assigned = 0;
    s->npaused -= sp->paused != PAUSE_NONE;
    sp->paused = PAUSE_NONE;
    sp->commit_to = sp->committed = -1;
  }
  pthread_mutex_unlock(&s->lock);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
  kafka_source *s = opaque;
  rd_kafka_error_t *e = NULL;
  rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < parts->cnt; i++) {
      src_part *sp =
          part_get(s, parts->elems[i].topic, parts->elems[i].partition);
      if (sp) {
        recs_detach_from(sp, -1);
        sp->assigned = 1;
        s->npaused -= sp->paused != PAUSE_NONE;
        sp->paused = PAUSE_NONE;
        sp->commit_to = sp->committed = -1;
      }
    }
    pthread_mutex_unlock(&s->lock);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_INFO, "assigned %d partitions",
            parts->cnt);
    if (s->cooperative)
      e = rd_kafka_incremental_assign(rk, parts);
    else
      re = rd_kafka_assign(rk, parts);
    /* A pause from before a revoke must not outlive it; while draining,
     * newly assigned partitions consume nothing. */
    if (atomic_load(&s->draining))
      rd_kafka_pause_partitions(rk, parts);
    else
      rd_kafka_resume_partitions(rk, parts);
  } else {
    if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
      CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN, "rebalance error: %s",
              rd_kafka_err2str(err));
    revoke(s, parts, rd_kafka_assignment_lost(rk));
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_INFO, "revoked %d partitions",
            parts->cnt);
    if (s->cooperative && err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
      e = rd_kafka_incremental_unassign(rk, parts);
    else
      re = rd_kafka_assign(rk, NULL);
  }
  if (e) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR, "assignment failed: %s",
            rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
  } else if (re) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR, "assignment failed: %s",
            rd_kafka_err2str(re));
  }
}

/* ---- records ---- */

static void count_n(kafka_source *s, const char *result, size_t n) {
  char labels[64];
  snprintf(labels, sizeof labels, "result=\"%s\"", result);
  s->ki.host->metric(s->ki.inst, CEB_METRIC_COUNTER,
                     "kafka_source_records_total", labels, (double)n);
}

static void count(kafka_source *s, const char *result) {
  count_n(s, result, 1);
}

/* Sends a malformed record to the DLQ topic (or skips it). */
static void dead_letter(kafka_source *s, src_part *sp,
                        const rd_kafka_message_t *m, const char *reason) {
  const char *topic = rd_kafka_topic_name(m->rkt);
  src_rec *r = calloc(1, sizeof *r);
  if (!r) {
    part_rewind(s, sp, m->offset, PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    return;
  }
  r->s = s;
  r->offset = m->offset;
  if (!s->dlq) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "skipping malformed record %s[%d]@%lld (no dlq_topic): %s", topic,
            (int)m->partition, (long long)m->offset, reason);
    count(s, "skipped");
    r->state = REC_DURABLE;
    pthread_mutex_lock(&s->lock);
    rec_append(sp, r);
    pthread_mutex_unlock(&s->lock);
    return;
  }
  CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
          "dead-lettering malformed record %s[%d]@%lld to %s: %s", topic,
          (int)m->partition, (long long)m->offset, s->dlq_topic, reason);
  rd_kafka_headers_t *orig = NULL, *h;
  if (rd_kafka_message_headers(m, &orig) == RD_KAFKA_RESP_ERR_NO_ERROR)
    h = rd_kafka_headers_copy(orig);
  else
    h = rd_kafka_headers_new(4);
  char part[16], off[24];
  snprintf(part, sizeof part, "%d", (int)m->partition);
  snprintf(off, sizeof off, "%lld", (long long)m->offset);
  rd_kafka_header_add(h, "ceb_dlq_reason", -1, reason, -1);
  rd_kafka_header_add(h, "ceb_dlq_topic", -1, topic, -1);
  rd_kafka_header_add(h, "ceb_dlq_partition", -1, part, -1);
  rd_kafka_header_add(h, "ceb_dlq_offset", -1, off, -1);
  pthread_mutex_lock(&s->lock);
  rec_append(sp, r);
  s->inflight++;
  pthread_mutex_unlock(&s->lock);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      s->dlq, RD_KAFKA_V_TOPIC(s->dlq_topic),
      RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(m->payload, m->len),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
      RD_KAFKA_V_OPAQUE(r), RD_KAFKA_V_END);
  if (e) {
    rd_kafka_headers_destroy(h);
    pthread_mutex_lock(&s->lock);
    s->inflight--;
    rec_drop_tail(sp, r);
    pthread_mutex_unlock(&s->lock);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
            "DLQ produce failed (%s): retrying", rd_kafka_err2str(e));
    part_rewind(s, sp, m->offset, PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    return;
  }
  count(s, "dead_lettered");
}

/* Decodes a record; NULL with reason filled when it is not a CloudEvent
 * in the Kafka binding. Validation is the host's (submit refuses an invalid
 * event with CEB_EVALIDATION and its violations): not done twice. */
static ceb_event *decode(const rd_kafka_message_t *m, char *reason,
                         size_t rsz) {
  ceb_headers hdrs = {0};
  ceb_event *ev = NULL;
  ceb_error err;
  ceb_error_clear(&err);
  if (kafka_headers_from_message(m, &hdrs) != CEB_OK) {
    snprintf(reason, rsz, "out of memory reading headers");
    ceb_headers_clear(&hdrs);
    return NULL;
  }
  int rc = ceb_kafka_decode(&hdrs, m->key, m->key_len, m->payload, m->len, &ev,
                            &err);
  ceb_headers_clear(&hdrs);
  if (rc != CEB_OK) {
    snprintf(reason, rsz, "decode: %s: %s", err.code[0] ? err.code : "error",
             err.message[0] ? err.message : ceb_strerror(rc));
    return NULL;
  }
  return ev;
}

/* The DLQ reason for a submit refused for an event's content: its first
 * error (the violations may start with profile warnings). */
static void refusal_reason(int rc, const ceb_violations *v, char *reason,
                           size_t rsz) {
  snprintf(reason, rsz, "refused: %s", ceb_strerror(rc));
  for (size_t i = 0;
       rc == CEB_EVALIDATION && i < v->count && i < CEB_MAX_VIOLATIONS; i++)
    if (v->items[i].severity == CEB_SEV_ERROR) {
      snprintf(reason, rsz, "refused: %s: %s", v->items[i].code,
               v->items[i].message);
      break;
    }
}

static int part_takes(kafka_source *s, const src_part *sp) {
  pthread_mutex_lock(&s->lock);
  int take = sp->assigned && !sp->paused && !atomic_load(&s->draining);
  pthread_mutex_unlock(&s->lock);
  return take;
}

static int refused_for_content(int rc) {
  return rc == CEB_EVALIDATION || rc == CEB_EINVAL || rc == CEB_ETOOLARGE;
}

static int64_t refused_backoff(int rc) {
  return rc == CEB_EBUSY || rc == CEB_ESHUTDOWN ? SRC_BUSY_BACKOFF_MS
                                                : SRC_FAIL_BACKOFF_MS;
}

/* Submits one record's event on its own (e owns ev and r). */
static void submit_one(kafka_source *s, src_entry *e) {
  src_part *sp = e->sp;
  const rd_kafka_message_t *m = e->m;
  src_rec *r = e->r;
  ceb_event *ev = e->ev;
  pthread_mutex_lock(&s->lock);
  rec_append(sp, r);
  s->inflight++;
  pthread_mutex_unlock(&s->lock);

  ceb_violations v = {0};
  size_t failed_index = 0;
  /* Distributed tracing extension, when the record carries one. */
  ceb_submit_opts opts = {sizeof opts, NULL, ceb_event_get(ev, "traceparent"),
                          &v, &failed_index};
  int rc = s->ki.host->submit(s->ki.inst, &ev, 1, &opts, on_submitted, r);
  if (rc == CEB_OK) {
    count(s, "submitted");
    pthread_mutex_lock(&s->lock);
    int full = sp->npending >= s->max_pending;
    pthread_mutex_unlock(&s->lock);
    if (full) /* resume at the next record once half has drained */
      part_rewind(s, sp, m->offset + 1, PAUSE_FULL, 0);
    return;
  }
  /* Not taken: the callback will not run, the event is still ours. */
  ceb_event_unref(ev);
  pthread_mutex_lock(&s->lock);
  s->inflight--;
  rec_drop_tail(sp, r);
  pthread_mutex_unlock(&s->lock);
  if (refused_for_content(rc)) {
    char reason[400];
    refusal_reason(rc, &v, reason, sizeof reason);
    dead_letter(s, sp, m, reason);
    return;
  }
  count(s, "refused");
  part_rewind(s, sp, m->offset, rc == CEB_EBUSY ? PAUSE_BUSY : PAUSE_FAILED,
              refused_backoff(rc));
}

/* After a batch was taken: partitions with too many records pending pause
 * after their last record of the batch and resume once half has drained. */
static void pause_full(kafka_source *s, const src_entry *e, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int last = 1; /* e[i] is its partition's last entry of the batch */
    for (size_t j = i + 1; j < n && last; j++)
      last = e[j].sp != e[i].sp;
    if (!last) continue;
    pthread_mutex_lock(&s->lock);
    int full = !e[i].sp->paused && e[i].sp->npending >= s->max_pending;
    pthread_mutex_unlock(&s->lock);
    if (full) part_rewind(s, e[i].sp, e[i].m->offset + 1, PAUSE_FULL, 0);
  }
}

/* Submits entries e[0..n) (offset order per partition) as one submit;
 * entries of partitions that stopped taking are dropped first. The host
 * refusing one event for its content (its failed_index) costs that record
 * only: the ones before it are submitted, it is dead-lettered, the ones
 * after it are submitted again. Any other refusal rewinds each partition
 * to its first entry. Consumes every entry (event and record). */
static void submit_range(kafka_source *s, src_entry *e, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (part_takes(s, e[i].sp)) {
      e[k++] = e[i];
    } else {
      ceb_event_unref(e[i].ev);
      free(e[i].r);
    }
  }
  n = k;
  if (n == 0) return;
  if (n == 1) {
    submit_one(s, &e[0]);
    return;
  }
  ceb_event *evs[SRC_BATCH_MAX];
  src_batch *b = malloc(sizeof *b + n * sizeof b->recs[0]);
  if (!b) {
    for (size_t i = 0; i < n; i++) {
      int first = 1;
      for (size_t j = 0; j < i && first; j++)
        first = e[j].sp != e[i].sp;
      if (first)
        part_rewind(s, e[i].sp, e[i].m->offset, PAUSE_FAILED,
                    SRC_FAIL_BACKOFF_MS);
      ceb_event_unref(e[i].ev);
      free(e[i].r);
    }
    return;
  }
  b->s = s;
  b->n = n;
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < n; i++) {
    rec_append(e[i].sp, e[i].r);
    b->recs[i] = e[i].r;
    evs[i] = e[i].ev;
  }
  s->inflight += n;
  pthread_mutex_unlock(&s->lock);
  ceb_violations v = {0};
  size_t bad = SIZE_MAX;
  /* No batch-wide trace context: each event keeps its own traceparent. */
  ceb_submit_opts opts = {sizeof opts, NULL, NULL, &v, &bad};
  int rc = s->ki.host->submit(s->ki.inst, evs, n, &opts, on_batch_submitted, b);
  if (rc == CEB_OK) {
    count_n(s, "submitted", n);
    pause_full(s, e, n);
    return;
  }
  /* Not taken: the records appended above are each partition's tail and
   * get no callback; the events are still ours. */
  pthread_mutex_lock(&s->lock);
  s->inflight -= n;
  for (size_t i = 0; i < n; i++) {
    int first = 1;
    for (size_t j = 0; j < i && first; j++)
      first = e[j].sp != e[i].sp;
    if (first) recs_drop_from(e[i].sp, e[i].m->offset);
  }
  pthread_mutex_unlock(&s->lock);
  free(b);
  int content = refused_for_content(rc), oom = 0;
  for (size_t i = 0; i < n; i++) {
    /* Dropped above; fresh ones for what is submitted again. */
    e[i].r = content ? calloc(1, sizeof *e[i].r) : NULL;
    if (e[i].r) {
      e[i].r->s = s;
      e[i].r->offset = e[i].m->offset;
    }
    oom |= content && !e[i].r;
  }
  if (content && !oom) {
    if (bad >= n) { /* no index: find the event one by one */
      for (size_t i = 0; i < n; i++)
        submit_range(s, &e[i], 1);
      return;
    }
    char reason[400];
    refusal_reason(rc, &v, reason, sizeof reason);
    src_entry odd = e[bad];
    submit_range(s, e, bad);
    ceb_event_unref(odd.ev);
    free(odd.r);
    if (part_takes(s, odd.sp)) dead_letter(s, odd.sp, odd.m, reason);
    submit_range(s, e + bad + 1, n - bad - 1);
    return;
  }
  if (!content) count_n(s, "refused", n);
  for (size_t i = 0; i < n; i++) {
    int first = 1;
    for (size_t j = 0; j < i && first; j++)
      first = e[j].sp != e[i].sp;
    if (first)
      part_rewind(s, e[i].sp, e[i].m->offset,
                  rc == CEB_EBUSY ? PAUSE_BUSY : PAUSE_FAILED,
                  refused_backoff(rc));
    ceb_event_unref(e[i].ev);
    free(e[i].r);
  }
}

/* Submits the batch read so far. */
static void flush(kafka_source *s) {
  size_t n = s->npending_batch;
  s->npending_batch = 0;
  submit_range(s, s->pending, n);
}

/* Decodes one record into the batch; a malformed one is dead-lettered
 * once the batch before it is submitted. */
static void handle(kafka_source *s, const rd_kafka_message_t *m) {
  if (m->err) {
    if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
      CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN, "consume error: %s",
              rd_kafka_message_errstr(m));
    return;
  }
  pthread_mutex_lock(&s->lock);
  src_part *sp = part_find(s, rd_kafka_topic_name(m->rkt), m->partition);
  pthread_mutex_unlock(&s->lock);
  if (!sp || !part_takes(s, sp))
    return; /* paused or not ours: a seek/resume or the owner re-reads it */

  char reason[400];
  ceb_event *ev = decode(m, reason, sizeof reason);
  if (!ev) {
    flush(s); /* the FIFO stays in offset order */
    if (part_takes(s, sp)) dead_letter(s, sp, m, reason);
    return;
  }
  src_rec *r = calloc(1, sizeof *r);
  if (!r) {
    ceb_event_unref(ev);
    flush(s);
    /* Not when the flush rewound it already, to an earlier record. */
    if (part_takes(s, sp))
      part_rewind(s, sp, m->offset, PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    return;
  }
  r->s = s;
  r->offset = m->offset;
  if (s->npending_batch == SRC_BATCH_MAX) flush(s);
  s->pending[s->npending_batch++] = (src_entry){ev, r, sp, m};
}

/* ---- the poll thread ---- */

/* Replaces a DLQ producer that raised a fatal (idempotence) error. Its
 * pending records fail, so their partitions are read again. */
static void replace_fatal_dlq(kafka_source *s) {
  char err[512];
  rd_kafka_resp_err_t why = rd_kafka_fatal_error(s->dlq, err, sizeof err);
  rd_kafka_conf_t *c = rd_kafka_conf_dup(s->dlq_conf);
  rd_kafka_t *fresh = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
  if (!fresh) {
    rd_kafka_conf_destroy(c);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "cannot replace the failed DLQ producer: %s", err);
    return;
  }
  rd_kafka_t *old = s->dlq;
  s->dlq = fresh;
  CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
          "DLQ producer replaced after fatal error %s", rd_kafka_err2name(why));
  rd_kafka_purge(old, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_flush(old, 1000);
  rd_kafka_destroy(old);
}

static void drain_step(kafka_source *s) {
  pthread_mutex_lock(&s->lock);
  int done = s->drained;
  pthread_mutex_unlock(&s->lock);
  if (done) return;
  /* Pause everything once, then wait for the records in flight. */
  rd_kafka_topic_partition_list_t *a = NULL;
  if (!s->drain_paused &&
      rd_kafka_assignment(s->rk, &a) == RD_KAFKA_RESP_ERR_NO_ERROR && a) {
    rd_kafka_pause_partitions(s->rk, a);
    rd_kafka_topic_partition_list_destroy(a);
    s->drain_paused = 1;
  }
  pthread_mutex_lock(&s->lock);
  int idle = s->inflight == 0;
  pthread_mutex_unlock(&s->lock);
  if (!idle) return;
  commit(s, NULL, 0);
  pthread_mutex_lock(&s->lock);
  s->drained = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

static void *source_main(void *arg) {
  kafka_source *s = arg;
  rd_kafka_message_t *msgs[SRC_BATCH_MAX];
  while (!atomic_load(&s->stop)) {
    /* Block for the first record, then take what is already queued: a
     * batch read with a timeout would wait for a full batch. */
    size_t n = 0;
    rd_kafka_message_t *m = rd_kafka_consumer_poll(s->rk, SRC_POLL_MS);
    if (m) {
      msgs[n++] = m;
      ssize_t more = rd_kafka_consume_batch_queue(s->queue, 0, msgs + 1,
                                                  SRC_BATCH_MAX - 1);
      if (more > 0) n += (size_t)more;
    }
    for (size_t i = 0; i < n; i++)
      handle(s, msgs[i]);
    flush(s);
    for (size_t i = 0; i < n; i++)
      rd_kafka_message_destroy(msgs[i]);
    if (s->dlq) {
      char fatal[8];
      rd_kafka_poll(s->dlq, 0);
      if (rd_kafka_fatal_error(s->dlq, fatal, sizeof fatal))
        replace_fatal_dlq(s);
    }
    rewind_failed(s);
    resume_ready(s);
    if (atomic_load(&s->draining)) {
      drain_step(s);
      continue;
    }
    int64_t now = kafka_mono_ms();
    if (now - s->last_commit >= s->commit_interval_ms) {
      s->last_commit = now;
      commit(s, NULL, 1);
    }
  }
  return NULL;
}

/* ---- lifecycle ---- */

int kafka_source_init(const ceb_host *host, ceb_instance *inst,
                      const ceb_config *cfg, void **state) {
  char err[512];
  kafka_source *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->ki = (kafka_inst){CEB_ROLE_SOURCE, host, inst};
  pthread_mutex_init(&s->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
  s->rebalance_wait_ms = ceb_config_duration_ms(cfg, "rebalance.wait", 10000);
  s->commit_interval_ms = ceb_config_duration_ms(cfg, "commit.interval", 200);
  s->max_pending = (size_t)ceb_config_int(cfg, "max_pending", 10000);
  s->dlq_topic = ceb_config_str(cfg, "dlq_topic");
  if (s->dlq_topic && !*s->dlq_topic) s->dlq_topic = NULL;
  int rc = CEB_ECONFIG;
  rd_kafka_conf_t *conf = NULL;

  const char *const *topics = NULL;
  size_t ntopics = ceb_config_list(cfg, "topics", &topics);
  const char *regex = ceb_config_str(cfg, "topic.regex");
  if (regex && !*regex) regex = NULL;
  if (ntopics == 0 && !regex) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "set topics or topic.regex");
    goto fail;
  }
  if (regex && regex[0] != '^') {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "topic.regex (%s) must start with '^' (librdkafka treats only "
            "such names as patterns)",
            ceb_config_origin(cfg, "topic.regex"));
    goto fail;
  }
  s->subscription = rd_kafka_topic_partition_list_new((int)ntopics + 1);
  for (size_t i = 0; i < ntopics; i++) {
    if (!kafka_topic_name_valid(topics[i])) {
      CEB_LOG(host, inst, CEB_LOG_ERROR,
              "topics: '%s' is not a legal Kafka topic name", topics[i]);
      goto fail;
    }
    rd_kafka_topic_partition_list_add(s->subscription, topics[i],
                                      RD_KAFKA_PARTITION_UA);
  }
  if (regex)
    rd_kafka_topic_partition_list_add(s->subscription, regex,
                                      RD_KAFKA_PARTITION_UA);
  if (s->dlq_topic && !kafka_topic_name_valid(s->dlq_topic)) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "dlq_topic: '%s' is not a legal Kafka topic name", s->dlq_topic);
    goto fail;
  }

  kafka_conf_rules rules = {source_defaults, source_reserved};
  conf = kafka_conf_build(cfg, &rules, err, sizeof err);
  if (!conf) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "%s", err);
    goto fail;
  }
  if (rd_kafka_conf_set(conf, "group.id", ceb_config_str(cfg, "group.id"), err,
                        sizeof err)) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "group.id: %s", err);
    goto fail;
  }
  char strategy[256];
  size_t ssz = sizeof strategy;
  if (rd_kafka_conf_get(conf, "partition.assignment.strategy", strategy,
                        &ssz) == RD_KAFKA_CONF_OK)
    s->cooperative = strstr(strategy, "cooperative") != NULL;
  rd_kafka_conf_set_opaque(conf, s);
  rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
  rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
  kafka_install_log(conf, &s->ki);

  if (s->dlq_topic) {
    kafka_conf_rules drules = {dlq_defaults, source_reserved};
    rd_kafka_conf_t *dconf = kafka_conf_build(cfg, &drules, err, sizeof err);
    if (!dconf) {
      CEB_LOG(host, inst, CEB_LOG_ERROR, "%s", err);
      goto fail;
    }
    rd_kafka_conf_set_opaque(dconf, s);
    rd_kafka_conf_set_dr_msg_cb(dconf, on_dlq_delivery);
    kafka_install_log(dconf, &s->ki);
    s->dlq_conf = rd_kafka_conf_dup(dconf);
    s->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, dconf, err, sizeof err);
    if (!s->dlq) {
      rd_kafka_conf_destroy(dconf);
      CEB_LOG(host, inst, CEB_LOG_ERROR, "DLQ producer: %s", err);
      goto fail;
    }
  }
  s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!s->rk) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "consumer: %s", err);
    goto fail;
  }
  conf = NULL; /* owned by rk */
  rd_kafka_poll_set_consumer(s->rk);
  s->queue = rd_kafka_queue_get_consumer(s->rk);
  *state = s;
  return CEB_OK;
fail:
  if (conf) rd_kafka_conf_destroy(conf);
  kafka_source_destroy(s);
  return rc;
}

int kafka_source_start(void *state) {
  kafka_source *s = state;
  rd_kafka_resp_err_t e = rd_kafka_subscribe(s->rk, s->subscription);
  if (e) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR, "subscribe: %s",
            rd_kafka_err2str(e));
    return CEB_EIO;
  }
  if (pthread_create(&s->thread, NULL, source_main, s) != 0) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "cannot start the poll thread");
    return CEB_EINTERNAL;
  }
  /* Named for top -H, perf and the benchmark's per-thread CPU. */
  pthread_setname_np(s->thread, "kafka-source");
  s->thread_started = 1;
  return CEB_OK;
}

int kafka_source_drain(void *state, int64_t deadline_ms) {
  kafka_source *s = state;
  const ceb_host *h = s->ki.host;
  atomic_store(&s->draining, 1);
  if (!s->thread_started) return CEB_OK;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    if (s->drained) {
      pthread_mutex_unlock(&s->lock);
      return CEB_OK;
    }
    int64_t left = deadline_ms - h->now_ms(s->ki.inst);
    if (left <= 0) break;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (left < 50 ? left : 50) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
  }
  size_t n = s->inflight;
  pthread_mutex_unlock(&s->lock);
  CEB_LOG(h, s->ki.inst, CEB_LOG_WARN,
          "drain deadline passed with %zu events not yet durable: their "
          "offsets stay uncommitted",
          n);
  return CEB_ETIMEOUT;
}

void kafka_source_destroy(void *state) {
  kafka_source *s = state;
  if (!s) return;
  if (s->thread_started) {
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
  }
  if (s->rk) {
    /* Leaves the group: the revoke callback commits what is durable. */
    rd_kafka_consumer_close(s->rk);
    if (s->queue) rd_kafka_queue_destroy(s->queue);
    rd_kafka_destroy(s->rk);
  }
  if (s->dlq) {
    rd_kafka_flush(s->dlq, 5000);
    rd_kafka_purge(s->dlq, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(s->dlq, 0);
    rd_kafka_destroy(s->dlq);
  }
  if (s->dlq_conf) rd_kafka_conf_destroy(s->dlq_conf);
  if (s->subscription) rd_kafka_topic_partition_list_destroy(s->subscription);
  pthread_mutex_lock(&s->lock);
  size_t outstanding = s->inflight;
  for (src_part *sp = s->parts; sp; sp = sp->next)
    recs_detach_from(sp, -1);
  pthread_mutex_unlock(&s->lock);
  if (outstanding) {
    /* The host still owes callbacks that would touch this state: keep it
     * rather than free memory they will write. */
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "destroyed with %zu submits not settled by the host; keeping "
            "their state",
            outstanding);
    return;
  }
  while (s->parts) {
    src_part *sp = s->parts;
    s->parts = sp->next;
    free(sp->topic);
    free(sp);
  }
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
