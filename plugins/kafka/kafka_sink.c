/* Kafka sink: one idempotent producer per instance.
 *
 * deliver() encodes the event with the SDK's Kafka binding and enqueues it;
 * it never settles on enqueue. The sink's own poll thread serves delivery
 * reports and settles from them (ACK, RETRY, REJECT), and settles RETRY for
 * deliveries whose host deadline passes first (the later report is then
 * ignored: at-least-once, receivers dedupe on source + id).
 *
 * Every enqueued message carries a sink_msg (the producer opaque). A
 * sink_msg is freed only by its delivery report, which librdkafka guarantees
 * for every accepted message (purged ones included); `d` is cleared under
 * the lock by whoever settles first. The value is copied into librdkafka's
 * message (RD_KAFKA_MSG_F_COPY): measured cheaper than lending the encoded
 * buffer until the report, which moves its free to the report thread.
 *
 * The settle counters are atomics published as one metric call per outcome
 * per poll round, not one formatted call per message.
 *
 * An idempotent producer that hit a fatal error (e.g. the broker lost its
 * sequence state) refuses everything from then on; the poll thread then
 * replaces it with a new one built from the same configuration. Callers of
 * librdkafka on s->rk hold rk_lock for reading; only the poll thread swaps
 * it, holding it for writing. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_common.h"
#include "kafka_plugin.h"
#include "kafka_record.h"
#include "kafka_topic.h"

#define SINK_POLL_MS 50
#define SINK_EXPIRE_EVERY_MS 100

typedef struct sink_msg {
  struct sink_msg *prev, *next; /* in the unsettled list while d != NULL */
  ceb_delivery *d;              /* NULL once settled */
  int64_t deadline_ms;          /* host clock */
} sink_msg;

typedef struct kafka_sink {
  kafka_inst ki;
  rd_kafka_t *rk;
  rd_kafka_conf_t *conf_tmpl; /* to rebuild rk after a fatal error */
  pthread_rwlock_t rk_lock;
  kafka_topic_tmpl *topic;
  ceb_mode mode;
  const char *key_attr;  /* borrowed from the config */
  int64_t busy_retry_ms; /* retry_after when the local queue is full */
  pthread_t thread;
  int thread_started;
  atomic_int stop;
  atomic_int draining;
  pthread_mutex_t lock;
  sink_msg unsettled; /* list head (circular) */
  size_t nunsettled;
  /* Settles per ceb_outcome not yet published as a metric: settles come
   * from deliver callers, the poll thread and drain's flush at once. */
  atomic_long settled[3];
} kafka_sink;

const ceb_config_spec kafka_sink_spec[] = {
    {"brokers", CEB_CFG_LIST, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Bootstrap brokers, host:port[,host:port...]."},
    {"topic", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Destination topic; ${attr} expands an event attribute or extension "
     "(edu.${type}). An event it cannot expand to a legal topic is "
     "rejected (dead-lettered)."},
    {"mode", CEB_CFG_ENUM, 0, "binary", 0, 0, "binary|structured",
     "CloudEvents Kafka binding mode: ce_ headers (binary) or "
     "application/cloudevents+json value (structured)."},
    {"key_attribute", CEB_CFG_STRING, 0, "partitionkey", 0, 0, NULL,
     "Attribute or extension whose value becomes the record key (unset: no "
     "key)."},
    {"queue_full.retry_after", CEB_CFG_DURATION, 0, "100ms", 1, 60000, NULL,
     "Retry delay asked of the host when the producer's local queue is full "
     "(backpressure)."},
    {"rdkafka.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL,
     "Any librdkafka producer property (rdkafka.compression.type = zstd, "
     "rdkafka.security.protocol = SASL_SSL ...); a bad key fails start-up "
     "with librdkafka's message."},
    CEB_CONFIG_SPEC_END};

/* enable.idempotence implies acks=all, retries and in-order delivery.
 * linger.ms 20 (librdkafka: 5): a route feeds the sink at the rate it
 * accepts, spread over many partitions, so 5 ms batches hold a few records
 * each and every record pays for its own produce request, wake-ups and
 * report round in the producer, the report thread and the broker; 20 ms
 * cuts that by a third to a half at ~10k records/s (bench/kafka/README.md,
 * "Session 4") and adds up to 15 ms to the time a record reaches the topic,
 * which caps a single ordering key (one delivery in flight) at ~40/s.
 * rdkafka.linger.ms overrides it. */
static const char *const sink_defaults[] = {
    "enable.idempotence", "true", "acks", "all", "linger.ms", "20", NULL};
static const char *const sink_reserved[] = {"enable.idempotence",
                                            "acks",
                                            "request.required.acks",
                                            "enable.gapless.guarantee",
                                            "dr_msg_cb",
                                            "dr_cb",
                                            NULL};

static void list_unlink(kafka_sink *s, sink_msg *m) {
  m->prev->next = m->next;
  m->next->prev = m->prev;
  m->prev = m->next = m;
  s->nunsettled--;
}

/* Takes m's delivery if still unsettled (caller holds no lock). */
static ceb_delivery *take_delivery(kafka_sink *s, sink_msg *m) {
  pthread_mutex_lock(&s->lock);
  ceb_delivery *d = m->d;
  if (d) {
    m->d = NULL;
    list_unlink(s, m);
  }
  pthread_mutex_unlock(&s->lock);
  return d;
}

static void settle(kafka_sink *s, ceb_delivery *d, ceb_outcome outcome,
                   int64_t retry_after_ms, int code, const char *reason,
                   const char *detail) {
  ceb_settle_info info = {sizeof info, outcome, retry_after_ms, code, reason,
                          detail,      0};
  atomic_fetch_add_explicit(&s->settled[outcome], 1, memory_order_relaxed);
  s->ki.host->settle(s->ki.inst, d, &info);
}

/* Adds the settles counted since the last call to the metric. */
static void publish_settled(kafka_sink *s) {
  static const char *const labels[] = {"outcome=\"ack\"", "outcome=\"retry\"",
                                       "outcome=\"reject\""};
  for (int i = 0; i < 3; i++) {
    long n = atomic_exchange_explicit(&s->settled[i], 0, memory_order_relaxed);
    if (n)
      s->ki.host->metric(s->ki.inst, CEB_METRIC_COUNTER,
                         "kafka_sink_settled_total", labels[i], (double)n);
  }
}

/* Errors that no retry can fix: the record or the topic is refused. */
static int err_permanent(rd_kafka_resp_err_t e) {
  switch (e) {
  case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
  case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
  case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
  case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
  case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
  case RD_KAFKA_RESP_ERR_INVALID_RECORD:
  case RD_KAFKA_RESP_ERR__INVALID_ARG:
    return 1;
  default:
    return 0;
  }
}

static void settle_err(kafka_sink *s, ceb_delivery *d, rd_kafka_resp_err_t e) {
  char reason[80];
  snprintf(reason, sizeof reason, "kafka.%s", rd_kafka_err2name(e));
  if (err_permanent(e))
    settle(s, d, CEB_REJECT, -1, (int)e, reason, rd_kafka_err2str(e));
  else if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
    settle(s, d, CEB_RETRY, s->busy_retry_ms, (int)e, reason,
           rd_kafka_err2str(e));
  else
    settle(s, d, CEB_RETRY, -1, (int)e, reason, rd_kafka_err2str(e));
}

/* Delivery report: on the sink's poll thread (or the caller of flush). */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque) {
  (void)rk;
  kafka_sink *s = opaque;
  sink_msg *sm = m->_private;
  ceb_delivery *d = take_delivery(s, sm);
  if (d) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
      settle(s, d, CEB_ACK, -1, 0, NULL, NULL);
    else
      settle_err(s, d, m->err);
  }
  free(sm);
}

/* Settles RETRY every unsettled delivery whose deadline (host clock) is at
 * or before `now`; now = INT64_MAX settles all. Returns how many. */
static size_t expire(kafka_sink *s, int64_t now, const char *reason) {
  size_t n = 0;
  for (;;) {
    ceb_delivery *d = NULL;
    pthread_mutex_lock(&s->lock);
    for (sink_msg *m = s->unsettled.next; m != &s->unsettled; m = m->next) {
      if (m->deadline_ms <= now) {
        d = m->d;
        m->d = NULL;
        list_unlink(s, m);
        break;
      }
    }
    pthread_mutex_unlock(&s->lock);
    if (!d) return n;
    settle(s, d, CEB_RETRY, -1, 0, reason,
           "no delivery report before the deadline");
    n++;
  }
}

/* Replaces a producer that raised a fatal error (poll thread only). Its
 * queued and in-flight messages are purged: their reports settle RETRY. */
static void replace_fatal_producer(kafka_sink *s) {
  char err[512];
  rd_kafka_resp_err_t why = rd_kafka_fatal_error(s->rk, err, sizeof err);
  rd_kafka_conf_t *c = rd_kafka_conf_dup(s->conf_tmpl);
  rd_kafka_t *fresh = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
  if (!fresh) {
    rd_kafka_conf_destroy(c);
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "cannot replace the failed producer: %s", err);
    return;
  }
  pthread_rwlock_wrlock(&s->rk_lock);
  rd_kafka_t *old = s->rk;
  s->rk = fresh;
  pthread_rwlock_unlock(&s->rk_lock);
  CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_WARN,
          "producer replaced after fatal error %s; its pending deliveries "
          "are retried",
          rd_kafka_err2name(why));
  rd_kafka_purge(old, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_flush(old, 1000);
  rd_kafka_destroy(old);
  s->ki.host->metric(s->ki.inst, CEB_METRIC_COUNTER,
                     "kafka_sink_producer_restarts_total", NULL, 1);
}

static void *sink_main(void *arg) {
  kafka_sink *s = arg;
  int64_t next_expire = 0;
  while (!atomic_load(&s->stop)) {
    char fatal[8];
    rd_kafka_poll(s->rk, SINK_POLL_MS);
    publish_settled(s);
    if (rd_kafka_fatal_error(s->rk, fatal, sizeof fatal) !=
        RD_KAFKA_RESP_ERR_NO_ERROR)
      replace_fatal_producer(s);
    int64_t mono = kafka_mono_ms();
    if (mono >= next_expire) {
      next_expire = mono + SINK_EXPIRE_EVERY_MS;
      expire(s, s->ki.host->now_ms(s->ki.inst), "timeout");
    }
  }
  return NULL;
}

int kafka_sink_init(const ceb_host *host, ceb_instance *inst,
                    const ceb_config *cfg, void **state) {
  char err[512];
  kafka_sink *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->ki = (kafka_inst){CEB_ROLE_SINK, host, inst};
  pthread_mutex_init(&s->lock, NULL);
  pthread_rwlock_init(&s->rk_lock, NULL);
  s->unsettled.next = s->unsettled.prev = &s->unsettled;
  const char *mode = ceb_config_str(cfg, "mode");
  s->mode = mode && !strcmp(mode, "structured") ? CEB_MODE_STRUCTURED
                                                : CEB_MODE_BINARY;
  s->key_attr = ceb_config_str(cfg, "key_attribute");
  if (s->key_attr && !*s->key_attr) s->key_attr = NULL;
  s->busy_retry_ms = ceb_config_duration_ms(cfg, "queue_full.retry_after", 100);
  s->topic =
      kafka_topic_tmpl_parse(ceb_config_str(cfg, "topic"), err, sizeof err);
  if (!s->topic) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "topic: %s", err);
    kafka_sink_destroy(s);
    return CEB_ECONFIG;
  }
  kafka_conf_rules rules = {sink_defaults, sink_reserved};
  rd_kafka_conf_t *conf = kafka_conf_build(cfg, &rules, err, sizeof err);
  if (!conf) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "%s", err);
    kafka_sink_destroy(s);
    return CEB_ECONFIG;
  }
  rd_kafka_conf_set_opaque(conf, s);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  kafka_install_log(conf, &s->ki);
  s->conf_tmpl = rd_kafka_conf_dup(conf);
  s->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!s->rk) {
    rd_kafka_conf_destroy(conf);
    CEB_LOG(host, inst, CEB_LOG_ERROR, "producer: %s", err);
    kafka_sink_destroy(s);
    return CEB_ECONFIG;
  }
  *state = s;
  return CEB_OK;
}

int kafka_sink_start(void *state) {
  kafka_sink *s = state;
  if (pthread_create(&s->thread, NULL, sink_main, s) != 0) {
    CEB_LOG(s->ki.host, s->ki.inst, CEB_LOG_ERROR,
            "cannot start the poll thread");
    return CEB_EINTERNAL;
  }
  /* Named for top -H, perf and the benchmark's per-thread CPU. */
  pthread_setname_np(s->thread, "kafka-sink");
  s->thread_started = 1;
  return CEB_OK;
}

/* Resolves the destination topic into buf; on failure the delivery was
 * settled REJECT and CEB_EINVAL returned. */
static int resolve_topic(kafka_sink *s, ceb_delivery *d, char *buf,
                         size_t bufsz) {
  char err[256];
  /* a dead-letter or receipt topic first (never mapped), then an egress
   * mapping's topic (ABI 1.2) */
  const ceb_mapped_out *mo = ceb_delivery_mapped(d);
  const char *given = d->topic ? d->topic : mo ? mo->topic : NULL;
  if (given) {
    if (kafka_topic_name_valid(given) && strlen(given) < bufsz) {
      strcpy(buf, given);
      return CEB_OK;
    }
    snprintf(err, sizeof err, "'%.100s' is not a legal Kafka topic name%s",
             given, d->topic ? "" : " (the mapping's topic)");
  } else if (kafka_topic_tmpl_expand(s->topic, d->event, buf, bufsz, err,
                                     sizeof err) == CEB_OK) {
    return CEB_OK;
  }
  settle(s, d, CEB_REJECT, -1, 0, "kafka.topic", err);
  return CEB_EINVAL;
}

int kafka_sink_deliver(void *state, ceb_delivery *d) {
  kafka_sink *s = state;
  if (atomic_load(&s->draining)) return CEB_ESHUTDOWN;
  char topic[256];
  if (resolve_topic(s, d, topic, sizeof topic) != CEB_OK)
    return CEB_OK; /* settled REJECT */

  kafka_record rec;
  size_t json_len;
  const char *json = ceb_delivery_encoded(d, &json_len);
  const ceb_mapped_out *mo = ceb_delivery_mapped(d);
  int rc = mo ? kafka_record_mapped(mo, d->event, s->key_attr, &rec)
              : kafka_record_build(d->event, s->mode, s->key_attr, json,
                                   json_len, &rec);
  if (rc != CEB_OK) {
    if (rc == CEB_ENOMEM) return CEB_ENOMEM;
    settle(s, d, CEB_REJECT, -1, 0, "kafka.encode", ceb_strerror(rc));
    return CEB_OK;
  }
  sink_msg *m = calloc(1, sizeof *m);
  if (!m) {
    kafka_record_clear(&rec);
    return CEB_ENOMEM;
  }
  m->d = d;
  m->deadline_ms = d->deadline_ms > 0 ? d->deadline_ms : INT64_MAX;
  /* Listed before producev: the report may arrive before it returns. */
  pthread_mutex_lock(&s->lock);
  m->prev = s->unsettled.prev;
  m->next = &s->unsettled;
  s->unsettled.prev->next = m;
  s->unsettled.prev = m;
  s->nunsettled++;
  pthread_mutex_unlock(&s->lock);

  /* F_COPY: the value borrows the event, which the host may free once this
   * delivery settles, possibly before librdkafka has sent it. */
  pthread_rwlock_rdlock(&s->rk_lock);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      s->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(rec.key, rec.key_len),
      RD_KAFKA_V_VALUE((void *)rec.value, rec.value_len),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(rec.headers),
      RD_KAFKA_V_OPAQUE(m), RD_KAFKA_V_END);
  pthread_rwlock_unlock(&s->rk_lock);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) rec.headers = NULL; /* taken */
  kafka_record_clear(&rec);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ceb_delivery *mine = take_delivery(s, m);
    free(m);
    if (mine) settle_err(s, mine, e);
  }
  return CEB_OK;
}

int kafka_sink_drain(void *state, int64_t deadline_ms) {
  kafka_sink *s = state;
  const ceb_host *h = s->ki.host;
  atomic_store(&s->draining, 1);
  for (;;) {
    pthread_mutex_lock(&s->lock);
    size_t left = s->nunsettled;
    pthread_mutex_unlock(&s->lock);
    int64_t remaining = deadline_ms - h->now_ms(s->ki.inst);
    if (left == 0) {
      publish_settled(s);
      return CEB_OK;
    }
    if (remaining <= 0) break;
    pthread_rwlock_rdlock(&s->rk_lock);
    rd_kafka_flush(s->rk, (int)(remaining < 100 ? remaining : 100));
    pthread_rwlock_unlock(&s->rk_lock);
  }
  size_t n = expire(s, INT64_MAX, "drain");
  publish_settled(s);
  CEB_LOG(h, s->ki.inst, CEB_LOG_WARN,
          "drain deadline passed: %zu deliveries settled for retry", n);
  return n ? CEB_ETIMEOUT : CEB_OK;
}

void kafka_sink_destroy(void *state) {
  kafka_sink *s = state;
  if (!s) return;
  if (s->thread_started) {
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
  }
  if (s->rk) {
    /* Purged messages still get a report: it settles RETRY and frees. */
    rd_kafka_purge(s->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_flush(s->rk, 5000);
    expire(s, INT64_MAX, "shutdown");
    publish_settled(s);
    rd_kafka_destroy(s->rk);
  }
  if (s->conf_tmpl) rd_kafka_conf_destroy(s->conf_tmpl);
  kafka_topic_tmpl_free(s->topic);
  pthread_rwlock_destroy(&s->rk_lock);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
