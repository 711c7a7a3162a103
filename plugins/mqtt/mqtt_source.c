/* The MQTT source: subscribes with a persistent session (libmosquitto,
 * mqtt_pub.h, connected to the ack gate's loopback end) and submits each
 * PUBLISH as one CloudEvent. Its acknowledgement (PUBACK at QoS 1, PUBREC at
 * QoS 2) is held by the ack gate (mqtt_gate.h) until the host's
 * submit callback reports the event durable; malformed messages are
 * republished raw to dlq_topic and acknowledged once that publish is.
 * With `map` (ABI 1.2) a message is not decoded: its input document
 * (mqtt_doc.h) goes to host->submit_mapped, and one the program refuses
 * (CEB_EMAPPING) is dead-lettered the same way, with ceb_dlq_reason
 * "mapping: <the program's error>". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mqtt_protocol.h>

#include "mqtt_doc.h"
#include "mqtt_gate.h"
#include "mqtt_plugin.h"
#include "mqtt_pub.h"

typedef struct src_ack {
  struct src_ack *prev, *next;
  struct mqtt_source *s;
  uint64_t gen;
  int packet_id; /* 0 for QoS 0: nothing to acknowledge */
  int dlq;       /* a dead-letter publish (the client calls back), else a
                    submit */
} src_ack;

/* A decoded message waiting for the host to accept it (backpressure). The
 * raw message is kept for a dead letter: borrowed from libmosquitto's
 * callback while it runs, copied only if the item outlives it. */
typedef struct backlog_item {
  struct backlog_item *next;
  ceb_event *ev;
  char *topic;
  void *payload;
  size_t len;
  mosquitto_property *props;
  int owned; /* topic, payload and props are ours */
  uint64_t gen;
  int packet_id;
  int qos, retain; /* as delivered: a mapped source's input document */
} backlog_item;

typedef struct mqtt_source {
  uint32_t role; /* first: see role_of() */
  const ceb_host *host;
  ceb_instance *inst;
  mqtt_conf conf;
  mqtt_pub *conn;
  mqtt_gate *gate;
  const char *const *topics;
  size_t ntopics;
  char **shared; /* share_group: the $share/ filters topics points to */
  int qos;
  const char *dlq_topic;
  int mapped; /* the section has `map` (ABI 1.2): each message's input
                 document (mqtt_doc.h) goes to host->submit_mapped */
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
  backlog_item *borrowed; /* the item whose raw message is the callback's */
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

/* A dead letter's outcome (the client's completion, on its I/O thread):
 * acknowledged, the original's acknowledgement goes out; refused, the
 * connection is dropped so that the original comes again; not delivered
 * because its connection went, the gate already dropped what it held. */
static void on_dlq_done(void *arg, void *ctx, int ok, int reason,
                        const char *detail) {
  mqtt_source *s = arg;
  src_ack *a = ctx;
  if (ok)
    ack_done(a, 1, NULL);
  else if (reason >= 0x80 || mqtt_gate_generation(s->gate) == a->gen)
    ack_done(a, 0, reason >= 0x80 ? "dead-letter publish refused" : detail);
  else
    ack_drop(a);
}

/* Republishes the message raw (payload, content type, user properties) to
 * dlq_topic with the reason; its acknowledgement waits for the broker's.
 * On the client's I/O thread. */
static void dead_letter(mqtt_source *s, const backlog_item *b,
                        const char *reason) {
  CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
          "malformed message on \"%s\" dead-lettered to \"%s\": %s", b->topic,
          s->dlq_topic, reason);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "mqtt_dead_lettered_total", NULL,
                  1);
  /* libmosquitto hands properties out as copies: read them into an array
   * of ours (freed below) that the client copies once more. */
  mqtt_pub_prop pr[66];
  char *owned[2 * 66];
  size_t n = 0, no = 0;
  if (s->conf.version == 5) {
    char *ct = NULL, *k = NULL, *v = NULL;
    if (mosquitto_property_read_string(b->props, MQTT_PROP_CONTENT_TYPE, &ct,
                                       false)) {
      owned[no++] = ct;
      pr[n++] = (mqtt_pub_prop){0, ct, NULL, strlen(ct), 0};
    }
    const mosquitto_property *p = b->props;
    int skip = 0;
    while (n < 64 && (p = mosquitto_property_read_string_pair(
                          p, MQTT_PROP_USER_PROPERTY, &k, &v, skip))) {
      skip = 1;
      owned[no++] = k;
      owned[no++] = v;
      pr[n++] = (mqtt_pub_prop){1, k, v, strlen(k), strlen(v)};
    }
    pr[n++] = (mqtt_pub_prop){1, "ceb_dlq_reason", reason, 14, strlen(reason)};
    pr[n++] =
        (mqtt_pub_prop){1, "ceb_dlq_topic", b->topic, 13, strlen(b->topic)};
  }
  src_ack *a = ack_new(s, b->gen, b->packet_id, 1);
  int rc =
      a ? mqtt_pub_send(s->conn, s->dlq_topic, 1, pr, n, b->payload, b->len, a)
        : CEB_ENOMEM;
  for (size_t i = 0; i < no; i++)
    free(owned[i]);
  if (rc == CEB_OK) return;
  if (a)
    ack_done(a, 0, "dead-letter publish not queued");
  else
    mqtt_gate_reset(s->gate, "out of memory");
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

static void backlog_free(mqtt_source *s, backlog_item *b) {
  ceb_event_unref(b->ev);
  if (b->owned) {
    free(b->topic);
    free(b->payload);
    mosquitto_property_free_all(&b->props);
  }
  pthread_mutex_lock(&s->lock);
  if (s->borrowed == b) s->borrowed = NULL;
  pthread_mutex_unlock(&s->lock);
  free(b);
}

/* Gives b its own copy of the raw message (it stays in the backlog after
 * the callback that lent it returns). 0, or -1 out of memory. */
static int backlog_own(backlog_item *b) {
  char *topic = strdup(b->topic);
  void *payload = malloc(b->len ? b->len : 1);
  mosquitto_property *props = NULL;
  if (!topic || !payload ||
      (b->props &&
       mosquitto_property_copy_all(&props, b->props) != MOSQ_ERR_SUCCESS)) {
    free(topic);
    free(payload);
    mosquitto_property_free_all(&props);
    return -1;
  }
  if (b->len) memcpy(payload, b->payload, b->len);
  b->topic = topic;
  b->payload = payload;
  b->props = props;
  b->owned = 1;
  return 0;
}

/* A mapped source's submit (ABI 1.2): the message's input document to the
 * map program. The call waits for the program (bounded by the bridge's
 * mapping.timeout), on the client's I/O thread: the broker's keep-alive is
 * seconds, a mapping milliseconds. CEB_ENOMEM when the document could not
 * be built; else what submit_mapped returned, with err filled. */
static int submit_doc(mqtt_source *s, const backlog_item *b,
                      const ceb_submit_opts *so, src_ack *a, char *err,
                      size_t errlen) {
  mqtt_doc_msg in = {b->topic,       b->qos,
                     b->retain != 0, b->payload,
                     b->len,         s->conf.version == 5 ? b->props : NULL};
  char *doc = NULL;
  size_t len = 0;
  if (mqtt_doc_build(&in, &doc, &len) != CEB_OK) return CEB_ENOMEM;
  int rc = s->host->submit_mapped(s->inst, doc, len, so, on_submitted, a, err,
                                  errlen);
  free(doc); /* borrowed for the call */
  return rc;
}

/* Submits one decoded message (or, mapped, b->ev NULL, its input
 * document). Returns 1 when the host pushed back (EBUSY): the caller keeps
 * b for later; otherwise b is consumed. */
static int submit_one(mqtt_source *s, backlog_item *b) {
  src_ack *a = ack_new(s, b->gen, b->packet_id, 0);
  if (!a) {
    mqtt_gate_reset(s->gate, "out of memory");
    backlog_free(s, b);
    return 0;
  }
  ceb_violations hv; /* filled by the host when it refuses with EVALIDATION;
                        only the counts need clearing (it is 8 KiB) */
  hv.count = hv.errors = hv.warnings = 0;
  hv.truncated = 0;
  ceb_submit_opts so = {sizeof so, NULL, NULL, &hv, NULL};
  char err[400] = "";
  int rc = b->ev ? s->host->submit(s->inst, &b->ev, 1, &so, on_submitted, a)
                 : submit_doc(s, b, &so, a, err, sizeof err);
  if (rc == CEB_OK) {
    b->ev = NULL; /* the host owns it; on_submitted finishes a */
    backlog_free(s, b);
    return 0;
  }
  ack_drop(a);
  if (rc == CEB_EBUSY) return 1;
  if (rc == CEB_EMAPPING) { /* the program refused the message: the host's
                               reason reads "mapping: <why>" */
    dead_letter(s, b, err[0] ? err : "mapping: failed");
  } else if (rc == CEB_ENOMEM && !b->ev) {
    mqtt_gate_reset(s->gate, "out of memory");
  } else if (rc == CEB_EVALIDATION || rc == CEB_ETOOLARGE || rc == CEB_EINVAL) {
    char reason[320];
    if (rc == CEB_EVALIDATION && hv.count)
      violation_text(&hv, reason, sizeof reason);
    else
      snprintf(reason, sizeof reason, "%s: %s", ceb_status_name(rc),
               ceb_strerror(rc));
    dead_letter(s, b, reason);
  } else if (rc != CEB_ESHUTDOWN) {
    CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
            "submit failed (%s): message left for redelivery",
            ceb_strerror(rc));
    if (!stopping(s)) mqtt_gate_reset(s->gate, "submit refused");
  }
  /* ESHUTDOWN: the host is draining; the acknowledgement stays held and the
   * disconnect that follows returns the message to the broker. */
  backlog_free(s, b);
  return 0;
}

/* Submits the backlog in arrival order while the host accepts. Called on
 * the client's I/O thread (new messages, ticks); never blocks: under
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

/* The message's Content Type and User Properties as the binding's
 * headers. CEB_OK or CEB_ENOMEM. */
static int read_headers(const mosquitto_property *props, ceb_headers *h,
                        char **ct) {
  if (!props) return CEB_OK;
  mosquitto_property_read_string(props, MQTT_PROP_CONTENT_TYPE, ct, false);
  const mosquitto_property *p = props;
  char *k = NULL, *v = NULL;
  int skip = 0, rc = CEB_OK;
  while (rc == CEB_OK && (p = mosquitto_property_read_string_pair(
                              p, MQTT_PROP_USER_PROPERTY, &k, &v, skip))) {
    skip = 1;
    rc = ceb_headers_add(h, k, v, strlen(v));
    free(k);
    free(v);
  }
  return rc;
}

/* Decodes one message; events join the backlog (which is empty unless the
 * host pushed back), the rest are dead-lettered. The raw message is
 * borrowed from libmosquitto and copied only if it has to wait. */
static void consume(mqtt_source *s, const struct mosquitto_message *m,
                    const mosquitto_property *props, uint64_t gen) {
  int packet_id = m->qos > 0 ? m->mid : 0;
  if (strcmp(m->topic, s->dlq_topic) == 0) {
    /* Our own dead letters (a wildcard covers dlq_topic): not events. */
    if (packet_id) mqtt_gate_release(s->gate, gen, packet_id);
    return;
  }
  backlog_item *b = calloc(1, sizeof *b);
  if (!b) {
    mqtt_gate_reset(s->gate, "out of memory");
    return;
  }
  b->topic = m->topic;
  b->payload = m->payload;
  b->len = (size_t)m->payloadlen;
  b->props = (mosquitto_property *)props; /* lent: never changed */
  b->gen = gen;
  b->packet_id = packet_id;
  b->qos = m->qos;
  b->retain = m->retain;
  ceb_headers h = {0};
  char *ct = NULL;
  /* mapped: nothing to decode, the program reads the message */
  int rc = !s->mapped && s->conf.version == 5 ? read_headers(props, &h, &ct)
                                              : CEB_OK;
  ceb_error err;
  if (rc == CEB_OK && !s->mapped)
    rc = ceb_mqtt_decode(s->conf.version, &h, ct, m->payload, b->len, &b->ev,
                         &err);
  ceb_headers_clear(&h);
  free(ct);
  /* No validation here: the host's submit validates every event (with the
   * bridge's profile) and its CEB_EVALIDATION dead-letters the message in
   * submit_one. */
  if (rc == CEB_ENOMEM) {
    mqtt_gate_reset(s->gate, "out of memory");
    backlog_free(s, b);
    return;
  }
  if (rc != CEB_OK) {
    char reason[320];
    snprintf(reason, sizeof reason, "%s: %s", err.code, err.message);
    dead_letter(s, b, reason);
    backlog_free(s, b);
    return;
  }
  pthread_mutex_lock(&s->lock);
  if (s->backlog_tail)
    s->backlog_tail->next = b;
  else
    s->backlog = b;
  s->backlog_tail = b;
  s->nbacklog++;
  s->borrowed = b;
  pthread_mutex_unlock(&s->lock);
  pump(s);
  /* Still waiting (backpressure): the message must outlive the callback.
   * Only this thread pumps, so b cannot go meanwhile. */
  pthread_mutex_lock(&s->lock);
  backlog_item *wait = s->borrowed;
  s->borrowed = NULL;
  int lost = wait && backlog_own(wait) != 0;
  pthread_mutex_unlock(&s->lock);
  if (lost) /* it stays, without a raw copy: redelivered after the reset */
    mqtt_gate_reset(s->gate, "out of memory");
}

static void on_message(void *arg, const struct mosquitto_message *m,
                       const mosquitto_property *props) {
  mqtt_source *s = arg;
  uint64_t gen = mqtt_gate_generation(s->gate);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "mqtt_received_total", NULL, 1);
  /* While stopping nothing is submitted: unacknowledged, it comes back. */
  if (!stopping(s)) consume(s, m, props, gen);
}

static void subscribed(mqtt_source *s, int ok) {
  s->host->metric(s->inst, CEB_METRIC_GAUGE, "mqtt_subscribed", NULL,
                  ok ? 1 : 0);
  if (ok)
    CEB_LOG(s->host, s->inst, CEB_LOG_DEBUG, "subscribed to %zu filter(s)",
            s->ntopics);
}

/* The SUBACK: a reason code >= 0x80 refuses that filter. */
static void on_subscribed(void *arg, int count, const int *codes) {
  mqtt_source *s = arg;
  int ok = count == (int)s->ntopics;
  for (int i = 0; i < count; i++) {
    if (codes[i] < 0x80) continue;
    ok = 0;
    if (s->conf.version == 5)
      CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
              "subscription to \"%s\" refused: reason 0x%02x (%s)",
              (size_t)i < s->ntopics ? s->topics[i] : "?", (unsigned)codes[i],
              mosquitto_reason_string(codes[i]));
    else
      CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
              "the broker refused the subscription to \"%s\" (SUBACK 0x80)",
              (size_t)i < s->ntopics ? s->topics[i] : "?");
  }
  subscribed(s, ok);
}

static void on_lost(void *arg) {
  subscribed(arg, 0);
}

/* (Re)subscribes after every connect: harmless with a resumed session and
 * needed after a broker lost it. */
static void on_connected(void *arg) {
  mqtt_source *s = arg;
  int rc = mqtt_pub_subscribe(s->conn, s->ntopics, s->topics, s->qos);
  if (rc != MOSQ_ERR_SUCCESS)
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "subscribe not sent: %s",
            mosquitto_strerror(rc));
}

/* share_group: the same config on every bridge of a group, the broker
 * splits the messages among them (MQTT 5 4.8.2). */
static int share_topics(mqtt_source *s, const ceb_config *cfg) {
  const char *group = ceb_config_str(cfg, "share_group");
  if (!group) return CEB_OK;
  if (!mqtt_share_name_valid(group)) {
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "share_group: \"%s\" is not a share name (non-empty, no '/', "
            "'+' or '#')",
            group);
    return CEB_ECONFIG;
  }
  for (size_t i = 0; i < s->ntopics; i++)
    if (strncmp(s->topics[i], "$share/", 7) == 0) {
      CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
              "topics: \"%s\" is already a shared subscription: drop "
              "share_group or the $share/ prefix",
              s->topics[i]);
      return CEB_ECONFIG;
    }
  s->shared = mqtt_share_filters(group, s->topics, s->ntopics);
  if (!s->shared) return CEB_ENOMEM;
  s->topics = (const char *const *)s->shared;
  return CEB_OK;
}

int mqtt_source_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state) {
  mqtt_source *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->role = CEB_ROLE_SOURCE;
  s->host = host;
  s->inst = inst;
  s->mapped = ceb_instance_mapped(info);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  int rc = mqtt_conf_load(host, inst, cfg, &s->conf);
  if (rc != CEB_OK) goto fail;
  rc = CEB_ECONFIG;
  if (s->mapped && !CEB_HOST_HAS(host, submit_mapped)) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "map: this host cannot run mappings");
    goto fail;
  }
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
  rc = share_topics(s, cfg);
  if (rc != CEB_OK) goto fail;
  rc = CEB_ECONFIG;
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
  /* The client talks plain MQTT to the gate's loopback end; the gate holds
   * its acknowledgements and does TLS to the broker. */
  mqtt_pub_opts o = {.host = "127.0.0.1",
                     .port = mqtt_gate_port(s->gate),
                     .plain = 1,
                     .resume = 1,
                     .session_expiry_s = s->session_expiry_s,
                     .receive_max = s->max_inflight};
  mqtt_pub_ops ops = {on_connected, on_lost,    on_tick,
                      on_dlq_done,  on_message, on_subscribed};
  rc = mqtt_pub_new(s->host, s->inst, &s->conf, s->conf.client_id, &o, &ops, s,
                    &s->conn);
  if (rc != CEB_OK) return rc;
  CEB_LOG(s->host, s->inst, CEB_LOG_INFO,
          "subscribing %zu filter(s) at QoS %d on %s:%d, acknowledging only "
          "after durable submit",
          s->ntopics, s->qos, s->conf.host, s->conf.port);
  return mqtt_pub_start(s->conn);
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
  if (s->conn) mqtt_pub_disconnect(s->conn, 1000);
  return rc;
}

void mqtt_source_destroy(void *state) {
  mqtt_source *s = state;
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  if (s->conn) {
    mqtt_pub_disconnect(s->conn, 1000);
    mqtt_pub_free(s->conn);
    s->conn = NULL;
  }
  /* The client calls nothing back any more: its dead-letter records are
   * dead. */
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
    backlog_free(s, b);
  }
  mqtt_share_filters_free(s->shared, s->ntopics);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s);
}
