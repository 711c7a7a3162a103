/* The Kafka source's dead-letter producer (kafka_source_int.h). Malformed
 * records never block their partition: they are produced raw to
 * `dlq_topic` with ceb_dlq_* headers and count as durable once that produce
 * is acknowledged; without a dlq_topic they are logged and skipped. */
#include <stdio.h>

#include "kafka_source_int.h"

/* The DLQ producer shares brokers and security settings with the consumer;
 * librdkafka ignores (with a notice) consumer-only properties. */
static const char *const dlq_defaults[] = {"enable.idempotence", "true", "acks",
                                           "all", NULL};

static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                            void *opaque) {
  (void)rk;
  kafka_source *s = opaque;
  ko_rec *r = m->_private;
  if (m->err)
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
            "dead-lettering offset %lld to %s failed (%s): will re-read it",
            (long long)r->offset, s->dlq_topic, rd_kafka_err2str(m->err));
  ksrc_settle(r, m->err == RD_KAFKA_RESP_ERR_NO_ERROR);
}

int kafka_dlq_open(kafka_source *s, const ceb_config *cfg,
                   const char *const *reserved) {
  if (!s->dlq_topic) return CEB_OK;
  char err[512];
  kafka_conf_rules drules = {dlq_defaults, reserved};
  rd_kafka_conf_t *dconf = kafka_conf_build(cfg, &drules, err, sizeof err);
  if (!dconf) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR, "%s", err);
    return CEB_ECONFIG;
  }
  rd_kafka_conf_set_opaque(dconf, s);
  rd_kafka_conf_set_dr_msg_cb(dconf, on_dlq_delivery);
  kafka_install_log(dconf, &s->ki);
  s->dlq_conf = rd_kafka_conf_dup(dconf);
  s->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, dconf, err, sizeof err);
  if (!s->dlq) {
    rd_kafka_conf_destroy(dconf);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR, "DLQ producer: %s", err);
    return CEB_ECONFIG;
  }
  return CEB_OK;
}

void kafka_dlq_send(kafka_source *s, ko_part *sp, const rd_kafka_message_t *m,
                    const char *reason) {
  ko_rec *r = ko_rec_new(&s->book, m->offset);
  if (!r) {
    ksrc_rewind(s, sp, m->offset, KO_PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    return;
  }
  kafka_dlq_send_rec(s, sp, m, reason, r, 0);
}

void kafka_dlq_send_rec(kafka_source *s, ko_part *sp,
                        const rd_kafka_message_t *m, const char *reason,
                        ko_rec *r, int appended) {
  const char *topic = rd_kafka_topic_name(m->rkt);
  if (!s->dlq) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "skipping malformed record %s[%d]@%lld (no dlq_topic): %s", topic,
            (int)m->partition, (long long)m->offset, reason);
    ksrc_count(s, "skipped", 1);
    if (appended) {
      ksrc_settle(r, 1);
      return;
    }
    r->state = KO_DURABLE;
    pthread_mutex_lock(&s->lock);
    ko_append(sp, r);
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
  if (!appended) {
    pthread_mutex_lock(&s->lock);
    ko_append(sp, r); /* in flight until the delivery report */
    pthread_mutex_unlock(&s->lock);
  }
  rd_kafka_resp_err_t e = rd_kafka_producev(
      s->dlq, RD_KAFKA_V_TOPIC(s->dlq_topic),
      RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(m->payload, m->len),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
      RD_KAFKA_V_OPAQUE(r), RD_KAFKA_V_END);
  if (e && appended) {
    /* records after it are in flight too: it fails, and the partition is
     * read again from it (rewind_failed) */
    rd_kafka_headers_destroy(h);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
            "DLQ produce failed (%s): retrying", rd_kafka_err2str(e));
    ksrc_settle(r, 0);
    return;
  }
  if (e) {
    rd_kafka_headers_destroy(h);
    pthread_mutex_lock(&s->lock);
    ko_drop_from(sp, m->offset); /* no report will come */
    pthread_mutex_unlock(&s->lock);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
            "DLQ produce failed (%s): retrying", rd_kafka_err2str(e));
    ksrc_rewind(s, sp, m->offset, KO_PAUSE_FAILED, SRC_FAIL_BACKOFF_MS);
    return;
  }
  ksrc_count(s, "dead_lettered", 1);
}

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

void kafka_dlq_poll(kafka_source *s) {
  if (!s->dlq) return;
  char fatal[8];
  rd_kafka_poll(s->dlq, 0);
  if (rd_kafka_fatal_error(s->dlq, fatal, sizeof fatal)) replace_fatal_dlq(s);
}

void kafka_dlq_close(kafka_source *s) {
  if (s->dlq) {
    rd_kafka_flush(s->dlq, 5000);
    rd_kafka_purge(s->dlq, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(s->dlq, 0);
    rd_kafka_destroy(s->dlq);
    s->dlq = NULL;
  }
  if (s->dlq_conf) rd_kafka_conf_destroy(s->dlq_conf);
  s->dlq_conf = NULL;
}
