/* The MQTT source: subscribes with a persistent session and submits each
 * PUBLISH as one CloudEvent. Its acknowledgement (PUBACK at QoS 1, PUBREC at
 * QoS 2) is held by the ack gate (mqtt_gate.h) until the host's
 * submit callback reports the event durable; malformed messages are
 * republished raw to dlq_topic and acknowledged once that publish is. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt_conn.h"
#include "mqtt_gate.h"
#include "mqtt_plugin.h"

typedef struct src_ack {
  struct src_ack *prev, *next;
  struct mqtt_source *s;
  uint64_t gen;
  int packet_id; /* 0 for QoS 0: nothing to acknowledge */
  int dlq;       /* a dead-letter publish (paho calls back), else a submit */
} src_ack;

/* A decoded message waiting for the host to accept it (backpressure). */
typedef struct backlog_item {
  struct backlog_item *next;
  ceb_event *ev;
  MQTTAsync_message *m; /* kept raw for a dead letter */
  char *topic;
  uint64_t gen;
  int packet_id;
} backlog_item;

typedef struct mqtt_source {
  uint32_t role; /* first: see role_of() */
  const ceb_host *host;
  ceb_instance *inst;
  mqtt_conf conf;
  mqtt_conn conn;
  int conn_ready;
  mqtt_gate *gate;
  const char *const *topics;
  size_t ntopics;
  int qos;
  const char *dlq_topic;
  int max_inflight;
  int64_t session_expiry_s;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  src_ack *acks;  /* submits and dead-letter publishes awaiting completion */
  size_t pending; /* of which submits: the host calls back for those */
  size_t pending_dlq;
  int stopping;
  int paused;  /* backpressure was logged */
  int pumping; /* one thread submits the backlog at a time */
  backlog_item *backlog, *backlog_tail;
  size_t nbacklog;
} mqtt_source;

static src_ack *ack_new(mqtt_source *s, uint64_t gen, int packet_id, int dlq) {
  src_ack *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->s = s;
  a->gen = gen;
  a->packet_id = packet_id;
  a->dlq = dlq;
  pthread_mutex_lock(&s->lock);
  a->next = s->acks;
  if (s->acks) s->acks->prev = a;
  s->acks = a;
  if (dlq)
    s->pending_dlq++;
  else
    s->pending++;
  pthread_mutex_unlock(&s->lock);
  return a;
}

/* Forgets a completion record without touching the acknowledgement. */
static void ack_drop(src_ack *a) {
  mqtt_source *s = a->s;
  pthread_mutex_lock(&s->lock);
  if (a->prev)
    a->prev->next = a->next;
  else
    s->acks = a->next;
  if (a->next) a->next->prev = a->prev;
  if (a->dlq)
    s->pending_dlq--;
  else
    s->pending--;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  free(a);
}

/* Ends a completion: ok lets the acknowledgement through, otherwise the
 * connection is dropped so that the broker redelivers. */
static void ack_done(src_ack *a, int ok, const char *why) {
  mqtt_source *s = a->s;
  if (ok && a->packet_id)
    mqtt_gate_release(s->gate, a->gen, a->packet_id);
  else if (!ok)
    mqtt_gate_reset(s->gate, why);
  ack_drop(a);
}

static void on_submitted(void *arg, const ceb_submit_result *r) {
  src_ack *a = arg;
  int ok = r && r->status == CEB_OK;
  if (!ok)
    CEB_LOG(a->s->host, a->s->inst, CEB_LOG_WARN,
            "event not made durable (%s): leaving it unacknowledged for "
            "redelivery",
            ceb_strerror(r ? r->status : CEB_EINTERNAL));
  ack_done(a, ok, "submit failed");
}

static void on_dlq_ok(void *ctx, MQTTAsync_successData *r) {
  (void)r;
  ack_done(ctx, 1, NULL);
}
static void on_dlq_ok5(void *ctx, MQTTAsync_successData5 *r) {
  ack_done(ctx, !r || r->reasonCode < 0x80, "dead-letter publish refused");
}
static void on_dlq_fail(void *ctx, MQTTAsync_failureData *r) {
  (void)r;
  ack_done(ctx, 0, "dead-letter publish failed");
}
static void on_dlq_fail5(void *ctx, MQTTAsync_failureData5 *r) {
  (void)r;
  ack_done(ctx, 0, "dead-letter publish failed");
}

/* Republishes the message raw (payload, content type, user properties) to
 * dlq_topic with the reason; its acknowledgement waits for the broker's. */
static void dead_letter(mqtt_source *s, const char *topic,
                        MQTTAsync_message *in, uint64_t gen,
                        const char *reason) {
  CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
          "malformed message on \"%s\" dead-lettered to \"%s\": %s", topic,
          s->dlq_topic, reason);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "mqtt_dead_lettered_total", NULL,
                  1);
  MQTTAsync_message m = MQTTAsync_message_initializer;
  m.payload = in->payload;
  m.payloadlen = in->payloadlen;
  m.qos = 1;
  if (s->conf.version == 5) {
    for (int i = 0; i < in->properties.count; i++) {
      MQTTProperty *p = &in->properties.array[i];
      if (p->identifier == MQTTPROPERTY_CODE_USER_PROPERTY ||
          p->identifier == MQTTPROPERTY_CODE_CONTENT_TYPE)
        MQTTProperties_add(&m.properties, p);
    }
    mqtt_props_add(&m.properties, MQTTPROPERTY_CODE_USER_PROPERTY,
                   "ceb_dlq_reason", 14, reason, strlen(reason));
    mqtt_props_add(&m.properties, MQTTPROPERTY_CODE_USER_PROPERTY,
                   "ceb_dlq_topic", 13, topic, strlen(topic));
  }
  src_ack *a = ack_new(s, gen, in->qos > 0 ? in->msgid : 0, 1);
  if (!a) {
    MQTTProperties_free(&m.properties);
    mqtt_gate_reset(s->gate, "out of memory");
    return;
  }
  MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
  ro.context = a;
  if (s->conf.version == 5) {
    ro.onSuccess5 = on_dlq_ok5;
    ro.onFailure5 = on_dlq_fail5;
  } else {
    ro.onSuccess = on_dlq_ok;
    ro.onFailure = on_dlq_fail;
  }
  int rc = MQTTAsync_sendMessage(s->conn.h, s->dlq_topic, &m, &ro);
  MQTTProperties_free(&m.properties);
  if (rc != MQTTASYNC_SUCCESS) ack_done(a, 0, "dead-letter publish not queued");
}

static int stopping(mqtt_source *s) {
  pthread_mutex_lock(&s->lock);
  int st = s->stopping;
  pthread_mutex_unlock(&s->lock);
  return st;
}

static void violation_text(const ceb_violations *v, char *buf, size_t n) {
  for (size_t i = 0; i < v->count && i < CEB_MAX_VIOLATIONS; i++)
    if (v->items[i].severity == CEB_SEV_ERROR) {
      snprintf(buf, n, "%s: %s", v->items[i].code, v->items[i].message);
      return;
    }
  snprintf(buf, n, "ce.invalid: the event failed validation");
}

static void backlog_free(backlog_item *b) {
  ceb_event_unref(b->ev);
  MQTTAsync_freeMessage(&b->m);
  free(b->topic);
  free(b);
}

/* Submits one decoded message. Returns 1 when the host pushed back (EBUSY):
 * the caller keeps b for later; otherwise b is consumed. */
static int submit_one(mqtt_source *s, backlog_item *b) {
  src_ack *a = ack_new(s, b->gen, b->packet_id, 0);
  if (!a) {
    mqtt_gate_reset(s->gate, "out of memory");
    backlog_free(b);
    return 0;
  }
  ceb_violations hv; /* filled by the host when it refuses with EVALIDATION;
                        only the counts need clearing (it is 8 KiB) */
  hv.count = hv.errors = hv.warnings = 0;
  hv.truncated = 0;
  ceb_submit_opts so = {sizeof so, NULL, NULL, &hv, NULL};
  int rc = s->host->submit(s->inst, &b->ev, 1, &so, on_submitted, a);
  if (rc == CEB_OK) {
    b->ev = NULL; /* the host owns it; on_submitted finishes a */
    backlog_free(b);
    return 0;
  }
  ack_drop(a);
  if (rc == CEB_EBUSY) return 1;
  if (rc == CEB_EVALIDATION || rc == CEB_ETOOLARGE || rc == CEB_EINVAL) {
    char reason[320];
    if (rc == CEB_EVALIDATION && hv.count)
      violation_text(&hv, reason, sizeof reason);
    else
      snprintf(reason, sizeof reason, "%s: %s", ceb_status_name(rc),
               ceb_strerror(rc));
    dead_letter(s, b->topic, b->m, b->gen, reason);
  } else if (rc != CEB_ESHUTDOWN) {
    CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
            "submit failed (%s): message left for redelivery",
            ceb_strerror(rc));
    if (!stopping(s)) mqtt_gate_reset(s->gate, "submit refused");
  }
  /* ESHUTDOWN: the host is draining; the acknowledgement stays held and the
   * disconnect that follows returns the message to the broker. */
  backlog_free(b);
  return 0;
}

/* Submits the backlog in arrival order while the host accepts. Called from
 * paho's thread (new messages) and the supervisor tick; never blocks: under
 * backpressure the acknowledgements stay held, so the broker's flow control
 * (Receive Maximum / in-flight window) stops sending. */
static void pump(mqtt_source *s) {
  pthread_mutex_lock(&s->lock);
  if (s->pumping) {
    pthread_mutex_unlock(&s->lock);
    return;
  }
  s->pumping = 1;
  while (s->backlog && !s->stopping) {
    backlog_item *b = s->backlog;
    s->backlog = b->next;
    if (!s->backlog) s->backlog_tail = NULL;
    s->nbacklog--;
    pthread_mutex_unlock(&s->lock);
    b->next = NULL;
    int busy = submit_one(s, b);
    pthread_mutex_lock(&s->lock);
    if (busy) {
      b->next = s->backlog;
      s->backlog = b;
      if (!s->backlog_tail) s->backlog_tail = b;
      s->nbacklog++;
      if (!s->paused)
        CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
                "backpressure: holding %zu message(s) unacknowledged until "
                "the bridge accepts",
                s->nbacklog);
      s->paused = 1;
      break;
    }
    if (s->paused)
      CEB_LOG(s->host, s->inst, CEB_LOG_INFO, "backpressure over: consuming");
    s->paused = 0;
  }
  s->pumping = 0;
  pthread_mutex_unlock(&s->lock);
}

static void on_tick(void *arg) {
  mqtt_source *s = arg;
  pthread_mutex_lock(&s->lock);
  int waiting = s->backlog != NULL && !s->stopping;
  pthread_mutex_unlock(&s->lock);
  if (waiting && s->host->accepting(s->inst)) pump(s);
}

/* Decodes and validates one message; valid events join the backlog (which
 * is empty unless the host pushed back), the rest are dead-lettered. Takes
 * ownership of m. */
static void consume(mqtt_source *s, const char *topic, MQTTAsync_message *m,
                    uint64_t gen) {
  int packet_id = m->qos > 0 ? m->msgid : 0;
  if (strcmp(topic, s->dlq_topic) == 0) {
    /* Our own dead letters (a wildcard covers dlq_topic): not events. */
    if (packet_id) mqtt_gate_release(s->gate, gen, packet_id);
    MQTTAsync_freeMessage(&m);
    return;
  }
  ceb_headers h = {0};
  char *ct = NULL;
  int rc = CEB_OK;
  for (int i = 0; rc == CEB_OK && i < m->properties.count; i++) {
    MQTTProperty *p = &m->properties.array[i];
    if (p->identifier == MQTTPROPERTY_CODE_CONTENT_TYPE && !ct) {
      ct = strndup(p->value.data.data, (size_t)p->value.data.len);
      rc = ct ? CEB_OK : CEB_ENOMEM;
    } else if (p->identifier == MQTTPROPERTY_CODE_USER_PROPERTY) {
      /* ceb_headers_add copies a NUL-terminated name: attribute names are
       * short, so only a long one costs an allocation here */
      char buf[128], *name = buf;
      size_t nl = (size_t)p->value.data.len;
      if (nl >= sizeof buf) name = malloc(nl + 1);
      if (name) {
        memcpy(name, p->value.data.data, nl);
        name[nl] = '\0';
      }
      rc = name ? ceb_headers_add(&h, name, p->value.value.data,
                                  (size_t)p->value.value.len)
                : CEB_ENOMEM;
      if (name != buf) free(name);
    }
  }
  ceb_event *ev = NULL;
  ceb_error err;
  char reason[320];
  if (rc == CEB_OK)
    rc = ceb_mqtt_decode(s->conf.version, &h, ct, m->payload,
                         (size_t)m->payloadlen, &ev, &err);
  ceb_headers_clear(&h);
  free(ct);
  /* No validation here: the host's submit validates every event (with the
   * bridge's profile) and its CEB_EVALIDATION dead-letters the message in
   * submit_one. Checking here as well parsed JSON data once more per
   * message on paho's receive thread, which every MQTT client of the
   * process shares (bench/mqtt/README.md). */
  if (rc != CEB_OK && rc != CEB_ENOMEM)
    snprintf(reason, sizeof reason, "%s: %s", err.code, err.message);
  if (rc == CEB_ENOMEM) {
    mqtt_gate_reset(s->gate, "out of memory");
  } else if (rc != CEB_OK) {
    dead_letter(s, topic, m, gen, reason);
  } else {
    backlog_item *b = calloc(1, sizeof *b);
    char *t = strdup(topic);
    if (!b || !t) {
      free(b);
      free(t);
      ceb_event_unref(ev);
      mqtt_gate_reset(s->gate, "out of memory");
    } else {
      b->ev = ev;
      b->m = m;
      b->topic = t;
      b->gen = gen;
      b->packet_id = packet_id;
      pthread_mutex_lock(&s->lock);
      if (s->backlog_tail)
        s->backlog_tail->next = b;
      else
        s->backlog = b;
      s->backlog_tail = b;
      s->nbacklog++;
      pthread_mutex_unlock(&s->lock);
      pump(s);
      return; /* m now belongs to b */
    }
  }
  MQTTAsync_freeMessage(&m);
}

static int on_message(void *ctx, char *topic, int topic_len,
                      MQTTAsync_message *m) {
  mqtt_source *s = ctx;
  uint64_t gen = mqtt_gate_generation(s->gate);
  char *t = topic_len > 0 ? strndup(topic, (size_t)topic_len) : NULL;
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "mqtt_received_total", NULL, 1);
  /* While stopping nothing is submitted: unacknowledged, it comes back. */
  if (!stopping(s))
    consume(s, t ? t : topic, m, gen);
  else
    MQTTAsync_freeMessage(&m);
  free(t);
  MQTTAsync_free(topic);
  return 1;
}

static void subscribed(mqtt_source *s, int ok) {
  s->host->metric(s->inst, CEB_METRIC_GAUGE, "mqtt_subscribed", NULL,
                  ok ? 1 : 0);
  if (ok)
    CEB_LOG(s->host, s->inst, CEB_LOG_DEBUG, "subscribed to %zu filter(s)",
            s->ntopics);
}

static void on_sub_ok(void *ctx, MQTTAsync_successData *r) {
  mqtt_source *s = ctx;
  int ok = 1;
  /* MQTT 3.1.1 SUBACK: 0x80 refuses a filter. */
  if (s->ntopics == 1 && r && r->alt.qos == 0x80) ok = 0;
  for (size_t i = 0; s->ntopics > 1 && r && r->alt.qosList && i < s->ntopics;
       i++)
    if (r->alt.qosList[i] == 0x80) ok = 0;
  if (!ok)
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "the broker refused a subscription (SUBACK 0x80)");
  subscribed(s, ok);
}

static void on_sub_fail(void *ctx, MQTTAsync_failureData *r) {
  mqtt_source *s = ctx;
  CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "subscribe failed: %s",
          r && r->message ? r->message : MQTTAsync_strerror(r ? r->code : -1));
}

static void on_sub_ok5(void *ctx, MQTTAsync_successData5 *r) {
  mqtt_source *s = ctx;
  /* paho fills the array only for more than one filter; one filter's code
   * is in reasonCode. */
  int n = r ? r->alt.sub.reasonCodeCount : 0;
  if (n <= 1) n = 0;
  for (int i = 0; i < n && r->alt.sub.reasonCodes; i++)
    if (r->alt.sub.reasonCodes[i] >= 0x80)
      CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
              "subscription to \"%s\" refused: reason 0x%02x (%s)",
              (size_t)i < s->ntopics ? s->topics[i] : "?",
              (unsigned)r->alt.sub.reasonCodes[i],
              MQTTReasonCode_toString(r->alt.sub.reasonCodes[i]));
  int ok = 1;
  for (int i = 0; i < n && r->alt.sub.reasonCodes; i++)
    ok &= r->alt.sub.reasonCodes[i] < 0x80;
  if (n == 0 && r && r->reasonCode >= 0x80) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "subscription refused: reason 0x%02x (%s)", (unsigned)r->reasonCode,
            MQTTReasonCode_toString(r->reasonCode));
    ok = 0;
  }
  subscribed(s, ok);
}

static void on_sub_fail5(void *ctx, MQTTAsync_failureData5 *r) {
  mqtt_source *s = ctx;
  if (r && r->reasonCode >= 0x80)
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "subscription refused: reason 0x%02x (%s)", (unsigned)r->reasonCode,
            MQTTReasonCode_toString(r->reasonCode));
  else /* the connection went; the next connect subscribes again */
    CEB_LOG(s->host, s->inst, CEB_LOG_WARN, "subscribe not completed: %s",
            r && r->message ? r->message
                            : MQTTAsync_strerror(r ? r->code : -1));
  subscribed(s, 0);
}

static void on_lost(void *arg) {
  subscribed(arg, 0);
}

/* (Re)subscribes after every connect: harmless with a resumed session and
 * needed after a broker lost it. */
static void on_connected(void *arg) {
  mqtt_source *s = arg;
  int qos[64];
  size_t n = s->ntopics;
  for (size_t i = 0; i < n; i++)
    qos[i] = s->qos;
  MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
  ro.context = s;
  if (s->conf.version == 5) {
    ro.onSuccess5 = on_sub_ok5;
    ro.onFailure5 = on_sub_fail5;
  } else {
    ro.onSuccess = on_sub_ok;
    ro.onFailure = on_sub_fail;
  }
  int rc = MQTTAsync_subscribeMany(s->conn.h, (int)n, (char *const *)s->topics,
                                   qos, &ro);
  if (rc != MQTTASYNC_SUCCESS)
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "subscribe not sent: %s",
            MQTTAsync_strerror(rc));
}

int mqtt_source_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state) {
  (void)info;
  mqtt_source *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->role = CEB_ROLE_SOURCE;
  s->host = host;
  s->inst = inst;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  int rc = mqtt_conf_load(host, inst, cfg, &s->conf);
  if (rc != CEB_OK) goto fail;
  rc = CEB_ECONFIG;
  if (!s->conf.client_id || !*s->conf.client_id) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "client_id is required: the persistent session that keeps "
            "messages while the bridge is down lives under it");
    goto fail;
  }
  s->ntopics = ceb_config_list(cfg, "topics", &s->topics);
  if (s->ntopics == 0 || s->ntopics > 64) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "topics: give 1 to 64 topic filters");
    goto fail;
  }
  for (size_t i = 0; i < s->ntopics; i++)
    if (!mqtt_filter_valid(s->topics[i])) {
      CEB_LOG(host, inst, CEB_LOG_ERROR,
              "topics: \"%s\" is not a valid topic filter", s->topics[i]);
      goto fail;
    }
  s->qos = (int)ceb_config_int(cfg, "qos", 1);
  if (s->qos != 1 && s->qos != 2) {
    /* The spec's range says so too; QoS 0 has no acknowledgement that could
     * wait for durability. */
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "qos = %d: the source subscribes at QoS 1 or 2", s->qos);
    goto fail;
  }
  s->dlq_topic = ceb_config_str(cfg, "dlq_topic");
  if (!mqtt_topic_valid(s->dlq_topic)) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "dlq_topic: \"%s\" is not a valid topic name",
            s->dlq_topic ? s->dlq_topic : "");
    goto fail;
  }
  s->max_inflight = (int)ceb_config_int(cfg, "max_inflight", 64);
  s->session_expiry_s =
      (ceb_config_duration_ms(cfg, "session_expiry", 86400000) + 999) / 1000;
  *state = s;
  return CEB_OK;
fail:
  mqtt_source_destroy(s);
  return rc;
}

int mqtt_source_start(void *state) {
  mqtt_source *s = state;
  int rc = mqtt_gate_new(s->host, s->inst, &s->conf, &s->gate);
  if (rc != CEB_OK) return rc;
  char uri[64];
  snprintf(uri, sizeof uri, "tcp://127.0.0.1:%d", mqtt_gate_port(s->gate));
  mqtt_conn_opts o = {.uri = uri,
                      .clean = 0,
                      .session_expiry_s = s->session_expiry_s,
                      .receive_max = s->max_inflight,
                      .max_inflight = s->max_inflight};
  mqtt_conn_ops ops = {on_connected, on_lost, on_tick, on_message};
  rc = mqtt_conn_init(&s->conn, s->host, s->inst, &s->conf, s->conf.client_id,
                      &o, &ops, s);
  s->conn_ready = 1;
  if (rc != CEB_OK) return rc;
  CEB_LOG(s->host, s->inst, CEB_LOG_INFO,
          "subscribing %zu filter(s) at QoS %d on %s:%d, acknowledging only "
          "after durable submit",
          s->ntopics, s->qos, s->conf.host, s->conf.port);
  return mqtt_conn_start(&s->conn);
}

/* Waits for submit callbacks (and dead-letter publishes when dlq). */
static int wait_quiet(mqtt_source *s, int64_t deadline_ms, int dlq) {
  pthread_mutex_lock(&s->lock);
  while ((s->pending > 0 || (dlq && s->pending_dlq > 0)) &&
         s->host->now_ms(s->inst) < deadline_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20L * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
  }
  size_t left = s->pending + (dlq ? s->pending_dlq : 0);
  pthread_mutex_unlock(&s->lock);
  return left ? CEB_ETIMEOUT : CEB_OK;
}

int mqtt_source_drain(void *state, int64_t deadline_ms) {
  mqtt_source *s = state;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  int rc = wait_quiet(s, deadline_ms, 1);
  if (s->gate) mqtt_gate_flush(s->gate, deadline_ms - s->host->now_ms(s->inst));
  if (s->conn_ready) mqtt_conn_disconnect(&s->conn, 1000);
  return rc;
}

void mqtt_source_destroy(void *state) {
  mqtt_source *s = state;
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  if (s->conn_ready) {
    mqtt_conn_disconnect(&s->conn, 1000);
    mqtt_conn_destroy(&s->conn);
  }
  /* paho calls nothing back any more: its dead-letter records are dead. */
  pthread_mutex_lock(&s->lock);
  for (src_ack *a = s->acks, *next; a; a = next) {
    next = a->next;
    if (!a->dlq) continue;
    if (a->prev)
      a->prev->next = a->next;
    else
      s->acks = a->next;
    if (a->next) a->next->prev = a->prev;
    s->pending_dlq--;
    free(a);
  }
  pthread_mutex_unlock(&s->lock);
  /* Submit callbacks still to come would touch s: wait for them. */
  if (wait_quiet(s, s->host->now_ms(s->inst) + 10000, 0) != CEB_OK) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "%zu submit(s) never completed: leaking the instance rather than "
            "freeing memory the host may still call back into",
            s->pending);
    return;
  }
  mqtt_gate_free(s->gate);
  while (s->backlog) { /* never acknowledged: the broker still has them */
    backlog_item *b = s->backlog;
    s->backlog = b->next;
    backlog_free(b);
  }
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s);
}
