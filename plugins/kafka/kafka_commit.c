/* The Kafka source's offset commits: the offset book's watermark handed to
 * the group coordinator through librdkafka (kafka_source_int.h). */
#include "kafka_source_int.h"

/* Collects the durable prefix of the given partitions (all assigned ones
 * when only is NULL) that is ahead of what was committed. */
static rd_kafka_topic_partition_list_t *
collect_commits(kafka_source *s, const rd_kafka_topic_partition_list_t *only) {
  rd_kafka_topic_partition_list_t *l = NULL;
  pthread_mutex_lock(&s->lock);
  for (ko_part *sp = s->book.parts; sp; sp = sp->next) {
    if (only ? !rd_kafka_topic_partition_list_find(only, sp->topic,
                                                   sp->partition)
             : !sp->assigned)
      continue;
    int64_t to;
    if (!ko_commit_point(sp, &to)) continue;
    if (!l) l = rd_kafka_topic_partition_list_new(4);
    rd_kafka_topic_partition_list_add(l, sp->topic, sp->partition)->offset = to;
  }
  pthread_mutex_unlock(&s->lock);
  return l;
}

void kafka_commit(kafka_source *s, const rd_kafka_topic_partition_list_t *only,
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
      ko_part *sp =
          ko_part_find(&s->book, l->elems[i].topic, l->elems[i].partition);
      if (sp) ko_commit_failed(sp, -1);
    }
    pthread_mutex_unlock(&s->lock);
  }
  rd_kafka_topic_partition_list_destroy(l);
}

/* Async commit results, served by consumer_poll on the poll thread. */
void kafka_on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                     rd_kafka_topic_partition_list_t *offsets, void *opaque) {
  (void)rk;
  kafka_source *s = opaque;
  if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET || !offsets) return;
  CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN, "offset commit failed: %s",
          rd_kafka_err2str(err));
  pthread_mutex_lock(&s->lock);
  for (int i = 0; i < offsets->cnt; i++) {
    ko_part *sp = ko_part_find(&s->book, offsets->elems[i].topic,
                               offsets->elems[i].partition);
    if (sp) ko_commit_failed(sp, offsets->elems[i].offset);
  }
  pthread_mutex_unlock(&s->lock);
}
