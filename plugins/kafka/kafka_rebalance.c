/* The Kafka source's rebalance callback (kafka_source_int.h). Eager by
 * default; cooperative-sticky works when configured. On revoke it waits,
 * bounded by `rebalance.wait`, for the in-flight records of the revoked
 * partitions, commits their durable prefix synchronously and forgets the
 * rest, which the next owner re-reads. Lost partitions are not committed. */
#include <time.h>

#include "kafka_source_int.h"

/* Callers hold s->lock. */
static int revoked_inflight(kafka_source *s,
                            const rd_kafka_topic_partition_list_t *parts) {
  for (int i = 0; i < parts->cnt; i++) {
    ko_part *sp = ko_part_find(&s->book, parts->elems[i].topic,
                               parts->elems[i].partition);
    if (sp && ko_has_inflight(sp)) return 1;
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
    kafka_commit(s, parts, 0);
  }
  pthread_mutex_lock(&s->lock);
  for (int i = 0; i < parts->cnt; i++) {
    ko_part *sp = ko_part_find(&s->book, parts->elems[i].topic,
                               parts->elems[i].partition);
    if (sp) ko_reset(&s->book, sp, 0);
  }
  pthread_mutex_unlock(&s->lock);
}

void kafka_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t *parts, void *opaque) {
  kafka_source *s = opaque;
  rd_kafka_error_t *e = NULL;
  rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < parts->cnt; i++) {
      ko_part *sp = ko_part_get(&s->book, parts->elems[i].topic,
                                parts->elems[i].partition);
      if (sp) ko_reset(&s->book, sp, 1);
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
