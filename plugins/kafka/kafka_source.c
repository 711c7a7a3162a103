/* Kafka source: a consumer group whose offsets follow durability.
 *
 * One poll thread per instance consumes, decodes (CloudEvents Kafka binding,
 * binary or structured per record) and submits the events of what one read
 * returned (up to SRC_BATCH_MAX records, across partitions) in one submit:
 * one journal op for the batch instead of one per record. Each record in
 * flight is a ko_rec in its partition's FIFO (offset order). The
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
 * With `map` (ABI 1.2) a record is not decoded: its input document
 * (kafka_doc.h) goes to the host's mapping. With a 1.3 host the records of
 * one read go to host->submit_mapped_batch together (one worker round trip,
 * one journal op, as the unmapped batch); with a 1.2 host each goes to
 * host->submit_mapped on its own. A record the host refuses (the program
 * failed: "mapping: <the program's error>"; an event it made is invalid:
 * "refused: <code>: <message>") is dead-lettered like a malformed one with
 * that as ceb_dlq_reason: its offset is committed only once the dead
 * letter is acknowledged.
 *
 * The offset book (records in flight, the commit watermark) is
 * kafka_offsets.c, commits kafka_commit.c, rebalances kafka_rebalance.c and
 * the dead-letter producer kafka_dlq.c; this file holds the poll loop, the
 * submits, the pause / rewind / resume flow control and the lifecycle.
 *
 * Locking: s->lock guards the offset book. The poll thread never holds it
 * across a call into the host or librdkafka. A ko_rec is freed by the poll
 * thread once its callback ran, or by the callback once the poll thread
 * detached it (detached = 1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_doc.h"
#include "kafka_source_int.h"

#define SRC_POLL_MS 100
#define SRC_SEEK_TIMEOUT_MS 5000
#define SRC_BUSY_BACKOFF_MS                                                    \
  100 /* also bounds the retry rate when                                       \
         accepting() and submit() disagree */

/* One batch submit in flight: its callback settles every record. A mapped
 * batch (submit_mapped_batch) learns which records the host took only when
 * the call returns, and its callback may run before that: until resolved
 * (under s->lock) the callback only leaves its result here, and the poll
 * thread settles the taken records once it has sorted them out. */
typedef struct src_batch {
  struct kafka_source *s;
  size_t n;
  int resolved;   /* mapped: recs[0..n) are the records taken */
  int has_result; /* mapped: the callback came before resolved */
  int durable;
  ko_rec *recs[];
} src_batch;

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

/* ---- callbacks from the host and the DLQ producer ---- */

void ksrc_settle(ko_rec *r, int durable) {
  kafka_source *s = r->book->owner;
  pthread_mutex_lock(&s->lock);
  ko_settle(r, durable);
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

static void on_submitted(void *arg, const ceb_submit_result *res) {
  ksrc_settle(arg, res->status == CEB_OK);
}

static void on_batch_submitted(void *arg, const ceb_submit_result *res) {
  src_batch *b = arg;
  kafka_source *s = b->s;
  int durable = res->status == CEB_OK;
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < b->n; i++)
    ko_settle(b->recs[i], durable);
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  free(b);
}

/* s->lock held: settles a mapped batch's taken records and frees it. */
static void settle_mapped(src_batch *b, int durable) {
  for (size_t i = 0; i < b->n; i++)
    ko_settle(b->recs[i], durable);
  pthread_cond_broadcast(&b->s->cond);
  free(b);
}

static void on_mapped_batch(void *arg, const ceb_submit_result *res) {
  src_batch *b = arg;
  kafka_source *s = b->s;
  pthread_mutex_lock(&s->lock);
  if (b->resolved) {
    settle_mapped(b, res->status == CEB_OK);
  } else {
    b->has_result = 1;
    b->durable = res->status == CEB_OK;
  }
  pthread_mutex_unlock(&s->lock);
}

/* ---- pause, rewind, resume (poll thread or rebalance callback) ---- */

static rd_kafka_topic_partition_list_t *one_tp(const ko_part *sp,
                                               int64_t offset) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, sp->topic, sp->partition)->offset =
      offset;
  return l;
}

void ksrc_rewind(kafka_source *s, ko_part *sp, int64_t offset, int why,
                 int64_t backoff_ms) {
  pthread_mutex_lock(&s->lock);
  ko_detach_from(sp, offset);
  int was_paused = sp->paused;
  s->book.npaused += !was_paused;
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
  if (atomic_load(&s->draining) || s->book.npaused == 0) return;
  int accepting = -1;
  int64_t now = kafka_mono_ms();
  for (ko_part *sp = s->book.parts; sp; sp = sp->next) {
    pthread_mutex_lock(&s->lock);
    int ready =
        sp->assigned && sp->paused && now >= sp->resume_not_before &&
        (sp->paused != KO_PAUSE_FULL || sp->npending <= s->max_pending / 2);
    pthread_mutex_unlock(&s->lock);
    if (!ready) continue;
    if (accepting < 0) accepting = s->ki.host->accepting(s->ki.inst);
    if (!accepting) return;
    rd_kafka_topic_partition_list_t *l = one_tp(sp, RD_KAFKA_OFFSET_INVALID);
    rd_kafka_resume_partitions(s->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    pthread_mutex_lock(&s->lock);
    sp->paused = KO_PAUSE_NONE;
    s->book.npaused--;
    pthread_mutex_unlock(&s->lock);
  }
}

/* Rewinds partitions whose first failed record the host could not make
 * durable: it is read and submitted again after a back-off. */
static void rewind_failed(kafka_source *s) {
  pthread_mutex_lock(&s->lock);
  size_t nfailed = s->book.nfailed;
  pthread_mutex_unlock(&s->lock);
  for (ko_part *sp = nfailed ? s->book.parts : NULL; sp; sp = sp->next) {
    pthread_mutex_lock(&s->lock);
    int64_t at = ko_first_failed(sp);
    pthread_mutex_unlock(&s->lock);
    if (at >= 0 && sp->assigned) {
      CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
              "%s[%d] offset %lld was not made durable: reading it again",
              sp->topic, (int)sp->partition, (long long)at);
      ksrc_rewind(s, sp, at, KO_PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    }
  }
}

/* ---- records ---- */

void ksrc_count(kafka_source *s, const char *result, size_t n) {
  char labels[64];
  snprintf(labels, sizeof labels, "result=\"%s\"", result);
  s->ki.host->metric(s->ki.inst, CEB_METRIC_COUNTER,
                     "kafka_source_records_total", labels, (double)n);
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

static int part_takes(kafka_source *s, const ko_part *sp) {
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

/* A mapped source's submit of one record: its input document to the map
 * program (ABI 1.2). CEB_ENOMEM when the document could not be built;
 * else what submit_mapped returned, with err filled on a refusal. */
static int submit_doc(kafka_source *s, const rd_kafka_message_t *m,
                      const ceb_submit_opts *opts, ko_rec *r, char *err,
                      size_t errlen) {
  kafka_doc_rec in;
  kafka_doc_rec_of(m, &in);
  char *doc = NULL;
  size_t len = 0;
  if (kafka_doc_build(&in, &doc, &len) != CEB_OK) return CEB_ENOMEM;
  int rc = s->ki.host->submit_mapped(s->ki.inst, doc, len, opts, on_submitted,
                                     r, err, errlen);
  free(doc); /* borrowed for the call */
  return rc;
}

/* Submits one record's event on its own (e owns ev and r); for a mapped
 * source (e->ev NULL) the record's input document instead. */
static void submit_one(kafka_source *s, src_entry *e) {
  ko_part *sp = e->sp;
  const rd_kafka_message_t *m = e->m;
  ko_rec *r = e->r;
  ceb_event *ev = e->ev;
  pthread_mutex_lock(&s->lock);
  ko_append(sp, r);
  pthread_mutex_unlock(&s->lock);

  ceb_violations v = {0};
  size_t failed_index = 0;
  char err[400] = "";
  /* Distributed tracing extension, when the record carries one (a mapped
   * record: the events' own traceparent, if the program sets one). */
  ceb_submit_opts opts = {sizeof opts, NULL,
                          ev ? ceb_event_get(ev, "traceparent") : NULL, &v,
                          &failed_index};
  int rc = ev ? s->ki.host->submit(s->ki.inst, &ev, 1, &opts, on_submitted, r)
              : submit_doc(s, m, &opts, r, err, sizeof err);
  if (rc == CEB_OK) {
    ksrc_count(s, "submitted", 1);
    pthread_mutex_lock(&s->lock);
    int full = sp->npending >= s->max_pending;
    pthread_mutex_unlock(&s->lock);
    if (full) /* resume at the next record once half has drained */
      ksrc_rewind(s, sp, m->offset + 1, KO_PAUSE_FULL, 0);
    return;
  }
  /* Not taken: the callback will not run, the event is still ours. */
  ceb_event_unref(ev);
  pthread_mutex_lock(&s->lock);
  ko_drop_from(sp, m->offset);
  pthread_mutex_unlock(&s->lock);
  if (rc == CEB_EMAPPING) { /* the program refused the record: the host's
                               reason reads "mapping: <why>" */
    kafka_dlq_send(s, sp, m, err[0] ? err : "mapping: failed");
    return;
  }
  if (refused_for_content(rc)) {
    char reason[400];
    refusal_reason(rc, &v, reason, sizeof reason);
    kafka_dlq_send(s, sp, m, reason);
    return;
  }
  ksrc_count(s, "refused", 1);
  ksrc_rewind(s, sp, m->offset,
              rc == CEB_EBUSY ? KO_PAUSE_BUSY : KO_PAUSE_FAILED,
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
    if (full) ksrc_rewind(s, e[i].sp, e[i].m->offset + 1, KO_PAUSE_FULL, 0);
  }
}

/* Each partition's first entry of e[0..n): rewound to it (the entries not
 * taken, nothing of them appended), then every entry freed. */
static void rewind_entries(kafka_source *s, src_entry *e, size_t n, int rc) {
  for (size_t i = 0; i < n; i++) {
    int first = 1;
    for (size_t j = 0; j < i && first; j++)
      first = e[j].sp != e[i].sp;
    if (first)
      ksrc_rewind(s, e[i].sp, e[i].m->offset,
                  rc == CEB_EBUSY ? KO_PAUSE_BUSY : KO_PAUSE_FAILED,
                  refused_backoff(rc));
    ceb_event_unref(e[i].ev);
    free(e[i].r);
  }
}

/* A mapped source's entries e[0..n) (n >= 2, partitions taking) through
 * host->submit_mapped_batch (ABI 1.3): one worker round trip for every
 * record's input document and one journal op for the events of those the
 * program mapped. A record the host refuses (the program failed on it, or
 * an event it made is invalid) is dead-lettered with the host's reason;
 * its offset waits for the dead letter's report like any other. A refusal
 * of the whole batch (backpressure, draining, no worker) rewinds each
 * partition to its first entry. */
static void submit_mapped_range(kafka_source *s, src_entry *e, size_t n) {
  ceb_mapped_doc *docs = calloc(n, sizeof *docs);
  src_batch *b = malloc(sizeof *b + n * sizeof b->recs[0]);
  int ok = docs && b;
  for (size_t i = 0; ok && i < n; i++) {
    kafka_doc_rec in;
    kafka_doc_rec_of(e[i].m, &in);
    char *doc = NULL;
    ok = kafka_doc_build(&in, &doc, &docs[i].len) == CEB_OK;
    docs[i].struct_size = sizeof docs[i];
    docs[i].doc = doc;
  }
  int rc = CEB_ENOMEM;
  if (ok) {
    *b = (src_batch){.s = s, .n = n};
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
      ko_append(e[i].sp, e[i].r);
      b->recs[i] = e[i].r;
    }
    pthread_mutex_unlock(&s->lock);
    ceb_submit_opts opts = {.struct_size = sizeof opts};
    rc = s->ki.host->submit_mapped_batch(s->ki.inst, docs, n, &opts,
                                         on_mapped_batch, b);
    if (rc != CEB_OK) { /* nothing taken: the appended tails go */
      pthread_mutex_lock(&s->lock);
      for (size_t i = 0; i < n; i++) {
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
          first = e[j].sp != e[i].sp;
        if (first) ko_drop_from(e[i].sp, e[i].m->offset);
      }
      pthread_mutex_unlock(&s->lock);
      for (size_t i = 0; i < n; i++)
        e[i].r = NULL; /* freed by the drop */
    }
  }
  for (size_t i = 0; docs && i < n; i++)
    free((char *)docs[i].doc);
  if (rc != CEB_OK) {
    free(b);
    free(docs);
    ksrc_count(s, "refused", n);
    rewind_entries(s, e, n, rc);
    return;
  }
  size_t taken = 0;
  for (size_t i = 0; i < n; i++)
    if (docs[i].status == CEB_OK) b->recs[taken++] = e[i].r;
  pthread_mutex_lock(&s->lock);
  b->n = taken;
  b->resolved = 1;
  if (b->has_result)
    settle_mapped(b, b->durable);
  else if (taken == 0)
    free(b); /* no callback comes */
  pthread_mutex_unlock(&s->lock);
  if (taken) ksrc_count(s, "submitted", taken);
  for (size_t i = 0; i < n; i++)
    if (docs[i].status != CEB_OK && part_takes(s, e[i].sp))
      kafka_dlq_send_rec(s, e[i].sp, e[i].m, docs[i].reason, e[i].r, 1);
    else if (docs[i].status != CEB_OK) /* revoked meanwhile: not ours */
      ksrc_settle(e[i].r, 0);
  free(docs);
  pause_full(s, e, n);
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
  if (s->mapped) {
    submit_mapped_range(s, e, n);
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
        ksrc_rewind(s, e[i].sp, e[i].m->offset, KO_PAUSE_FAILED,
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
    ko_append(e[i].sp, e[i].r);
    b->recs[i] = e[i].r;
    evs[i] = e[i].ev;
  }
  pthread_mutex_unlock(&s->lock);
  ceb_violations v = {0};
  size_t bad = SIZE_MAX;
  /* No batch-wide trace context: each event keeps its own traceparent. */
  ceb_submit_opts opts = {sizeof opts, NULL, NULL, &v, &bad};
  int rc = s->ki.host->submit(s->ki.inst, evs, n, &opts, on_batch_submitted, b);
  if (rc == CEB_OK) {
    ksrc_count(s, "submitted", n);
    pause_full(s, e, n);
    return;
  }
  /* Not taken: the records appended above are each partition's tail and
   * get no callback; the events are still ours. */
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < n; i++) {
    int first = 1;
    for (size_t j = 0; j < i && first; j++)
      first = e[j].sp != e[i].sp;
    if (first) ko_drop_from(e[i].sp, e[i].m->offset);
  }
  pthread_mutex_unlock(&s->lock);
  free(b);
  int content = refused_for_content(rc), oom = 0;
  for (size_t i = 0; i < n; i++) {
    /* Dropped above; fresh ones for what is submitted again. */
    e[i].r = content ? ko_rec_new(&s->book, e[i].m->offset) : NULL;
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
    if (part_takes(s, odd.sp)) kafka_dlq_send(s, odd.sp, odd.m, reason);
    submit_range(s, e + bad + 1, n - bad - 1);
    return;
  }
  if (!content) ksrc_count(s, "refused", n);
  for (size_t i = 0; i < n; i++) {
    int first = 1;
    for (size_t j = 0; j < i && first; j++)
      first = e[j].sp != e[i].sp;
    if (first)
      ksrc_rewind(s, e[i].sp, e[i].m->offset,
                  rc == CEB_EBUSY ? KO_PAUSE_BUSY : KO_PAUSE_FAILED,
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
  ko_part *sp =
      ko_part_find(&s->book, rd_kafka_topic_name(m->rkt), m->partition);
  pthread_mutex_unlock(&s->lock);
  if (!sp || !part_takes(s, sp))
    return; /* paused or not ours: a seek/resume or the owner re-reads it */

  if (s->mapped && !CEB_HOST_HAS(s->ki.host, submit_mapped_batch)) {
    /* a 1.2 host: one submit_mapped per record, no batch to join */
    ko_rec *r = ko_rec_new(&s->book, m->offset);
    if (!r) {
      ksrc_rewind(s, sp, m->offset, KO_PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
      return;
    }
    src_entry e = {NULL, r, sp, m};
    submit_one(s, &e);
    return;
  }
  if (s->mapped) { /* joins the batch; mapped with it (submit_mapped_range) */
    ko_rec *r = ko_rec_new(&s->book, m->offset);
    if (!r) {
      flush(s);
      if (part_takes(s, sp))
        ksrc_rewind(s, sp, m->offset, KO_PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
      return;
    }
    if (s->npending_batch == SRC_BATCH_MAX) flush(s);
    s->pending[s->npending_batch++] = (src_entry){NULL, r, sp, m};
    return;
  }
  char reason[400];
  ceb_event *ev = decode(m, reason, sizeof reason);
  if (!ev) {
    flush(s); /* the FIFO stays in offset order */
    if (part_takes(s, sp)) kafka_dlq_send(s, sp, m, reason);
    return;
  }
  ko_rec *r = ko_rec_new(&s->book, m->offset);
  if (!r) {
    ceb_event_unref(ev);
    flush(s);
    /* Not when the flush rewound it already, to an earlier record. */
    if (part_takes(s, sp))
      ksrc_rewind(s, sp, m->offset, KO_PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    return;
  }
  if (s->npending_batch == SRC_BATCH_MAX) flush(s);
  s->pending[s->npending_batch++] = (src_entry){ev, r, sp, m};
}

/* ---- the poll thread ---- */

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
  int idle = s->book.inflight == 0;
  pthread_mutex_unlock(&s->lock);
  if (!idle) return;
  kafka_commit(s, NULL, 0);
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
    kafka_dlq_poll(s);
    rewind_failed(s);
    resume_ready(s);
    if (atomic_load(&s->draining)) {
      drain_step(s);
      continue;
    }
    int64_t now = kafka_mono_ms();
    if (now - s->last_commit >= s->commit_interval_ms) {
      s->last_commit = now;
      kafka_commit(s, NULL, 1);
    }
  }
  return NULL;
}

/* ---- lifecycle ---- */

int kafka_source_init(const ceb_host *host, ceb_instance *inst,
                      const ceb_config *cfg, int mapped, void **state) {
  char err[512];
  kafka_source *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->ki = (kafka_inst){CEB_ROLE_SOURCE, host, inst};
  s->book.owner = s;
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
  s->mapped = mapped;
  int rc = CEB_ECONFIG;
  rd_kafka_conf_t *conf = NULL;
  if (mapped && !CEB_HOST_HAS(host, submit_mapped)) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "map: this host cannot run mappings");
    goto fail;
  }

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
  rd_kafka_conf_set_rebalance_cb(conf, kafka_on_rebalance);
  rd_kafka_conf_set_offset_commit_cb(conf, kafka_on_commit);
  kafka_install_log(conf, &s->ki);

  if (kafka_dlq_open(s, cfg, source_reserved) != CEB_OK) goto fail;
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
  size_t n = s->book.inflight;
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
  kafka_dlq_close(s);
  if (s->subscription) rd_kafka_topic_partition_list_destroy(s->subscription);
  pthread_mutex_lock(&s->lock);
  size_t outstanding = ko_book_free(&s->book);
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
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
