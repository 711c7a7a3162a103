/* The MQTT sink: one PUBLISH per delivery through the plugin's publisher
 * connection (mqtt_pub.h), settled from its completion callback (PUBACK
 * for QoS 1, PUBCOMP for QoS 2, written for QoS 0), never on enqueue. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mqtt_protocol.h>

#include "mqtt_plugin.h"
#include "mqtt_pub.h"

/* A PUBLISH's MQTT 5 properties as one plain array pointing into the
 * encoded user properties and content type, which it owns; the publisher
 * encodes them into the packet when the PUBLISH is queued. */
typedef struct sink_props {
  ceb_headers user; /* the event's attributes */
  char *ct;         /* content type (ceb_free), or NULL */
  mqtt_pub_prop *array;
  size_t count;
} sink_props;

typedef struct sink_msg {
  struct sink_msg *prev, *next; /* every record */
  struct sink_msg *qnext;       /* the send queue */
  struct mqtt_sink *s;
  ceb_delivery *d; /* NULL once settled */
  int queued;      /* waiting for a window slot: not handed over yet */
  /* prepared PUBLISH, handed to the publisher when a window slot frees */
  char *topic; /* owned, or the sink's fixed topic (topic_owned == 0) */
  int topic_owned;
  char *payload;
  size_t len;
  sink_props props;
} sink_msg;

typedef struct mqtt_sink {
  uint32_t role; /* first: see role_of() */
  const ceb_host *host;
  ceb_instance *inst;
  mqtt_conf conf;
  mqtt_pub *pub;
  int conn_ready;
  char client_id[256];
  const char *topic;
  int topic_fixed; /* no ${...}: every delivery publishes to topic as is */
  int qos;
  ceb_mode mode;
  int max_inflight;
  pthread_mutex_t lock;
  /* held by the one thread that hands publishes over (pump): taking a
   * message off the queue and handing it to the publisher must be one
   * step, or a completion's pump and a deliver's pump reorder them */
  pthread_mutex_t pump_lock;
  pthread_cond_t cond;
  sink_msg *msgs;  /* every record the publisher may still call back for */
  size_t inflight; /* records not yet settled */
  sink_msg *qhead, *qtail;
  size_t sent; /* handed to the publisher, completion pending */
  int draining;
} mqtt_sink;

static void pump(mqtt_sink *s);

static void props_clear(sink_props *p) {
  ceb_headers_clear(&p->user);
  ceb_free(p->ct);
  free(p->array);
  memset(p, 0, sizeof *p);
}

/* Points the property array at p->user and p->ct. CEB_OK or CEB_ENOMEM;
 * CEB_ETOOLARGE when a string does not fit MQTT's 16-bit lengths. */
static int props_build(sink_props *p) {
  size_t n = p->user.count + (p->ct ? 1 : 0);
  if (!n) return CEB_OK;
  p->array = calloc(n, sizeof *p->array);
  if (!p->array) return CEB_ENOMEM;
  size_t i = 0;
  if (p->ct) {
    size_t l = strlen(p->ct);
    if (l > 65535) return CEB_ETOOLARGE;
    p->array[i].name = p->ct;
    p->array[i].name_len = l;
    i++;
  }
  for (size_t k = 0; k < p->user.count; k++, i++) {
    const ceb_header *h = &p->user.items[k];
    size_t nl = strlen(h->name);
    if (nl > 65535 || h->value_len > 65535) return CEB_ETOOLARGE;
    p->array[i].user = 1;
    p->array[i].name = h->name;
    p->array[i].name_len = nl;
    p->array[i].value = h->value;
    p->array[i].value_len = h->value_len;
  }
  p->count = i;
  return CEB_OK;
}

static void free_prepared(sink_msg *m) {
  if (m->topic_owned) free(m->topic);
  ceb_free(m->payload);
  props_clear(&m->props);
  m->topic = m->payload = NULL;
}

static void settle(mqtt_sink *s, ceb_delivery *d, ceb_outcome outcome,
                   int status_code, const char *reason, const char *detail) {
  ceb_settle_info info = {sizeof info, outcome, -1, status_code,
                          reason,      detail,  0};
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "mqtt_published_total",
                  outcome == CEB_ACK     ? "result=\"ack\""
                  : outcome == CEB_RETRY ? "result=\"retry\""
                                         : "result=\"reject\"",
                  1);
  s->host->settle(s->inst, d, &info);
}

static void unlink_msg(mqtt_sink *s, sink_msg *m) {
  if (m->prev)
    m->prev->next = m->next;
  else
    s->msgs = m->next;
  if (m->next) m->next->prev = m->prev;
}

/* Ends a record from the publisher's callback: settles it unless a
 * connection loss or timeout already did, and frees it. */
static void finish(sink_msg *m, ceb_outcome outcome, int code,
                   const char *reason, const char *detail) {
  mqtt_sink *s = m->s;
  pthread_mutex_lock(&s->lock);
  ceb_delivery *d = m->d;
  m->d = NULL;
  if (d) s->inflight--;
  s->sent--;
  unlink_msg(s, m);
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  free_prepared(m);
  free(m);
  if (d) settle(s, d, outcome, code, reason, detail);
  pump(s);
}

/* PUBACK reason codes that no retry can fix. */
static int permanent_reason(int rc) {
  switch (rc) {
  case MQTT_RC_NOT_AUTHORIZED:         /* 0x87 */
  case MQTT_RC_TOPIC_NAME_INVALID:     /* 0x90 */
  case MQTT_RC_PACKET_TOO_LARGE:       /* 0x95 */
  case MQTT_RC_PAYLOAD_FORMAT_INVALID: /* 0x99 */
    return 1;
  default:
    return 0;
  }
}

static void on_pub_done(void *arg, void *ctx, int ok, int reason,
                        const char *detail) {
  (void)arg;
  if (ok) {
    finish(ctx, CEB_ACK, reason, NULL, NULL);
  } else if (reason >= 0x80) {
    char why[32], text[256];
    snprintf(why, sizeof why, "mqtt.0x%02x", (unsigned)reason);
    snprintf(text, sizeof text, "broker refused the publish: %s",
             mosquitto_reason_string(reason));
    finish(ctx, permanent_reason(reason) ? CEB_REJECT : CEB_RETRY, reason, why,
           text);
  } else {
    char text[256];
    snprintf(text, sizeof text, "publish failed: %s",
             detail ? detail : "not delivered");
    finish(ctx, CEB_RETRY, 0, "mqtt.publish_failed", text);
  }
}

/* Settles every unsettled record with RETRY; the records stay until the
 * publisher calls back (or destroy), so a late callback finds them. */
static void settle_all(mqtt_sink *s, const char *reason, const char *detail,
                       int only_expired) {
  int64_t now = only_expired ? s->host->now_ms(s->inst) : 0;
  for (;;) {
    ceb_delivery *d = NULL;
    sink_msg *dead = NULL; /* a queued record never handed over */
    pthread_mutex_lock(&s->lock);
    for (sink_msg *m = s->msgs; m; m = m->next) {
      if (m->d && (!only_expired ||
                   (m->d->deadline_ms > 0 && now >= m->d->deadline_ms))) {
        d = m->d;
        m->d = NULL;
        s->inflight--;
        if (m->queued) {
          sink_msg **pp = &s->qhead, *prev = NULL;
          while (*pp && *pp != m) {
            prev = *pp;
            pp = &(*pp)->qnext;
          }
          if (*pp) *pp = m->qnext;
          if (s->qtail == m) s->qtail = prev;
          unlink_msg(s, m);
          dead = m;
        }
        break;
      }
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (dead) {
      free_prepared(dead);
      free(dead);
    }
    if (!d) return;
    settle(s, d, CEB_RETRY, 0, reason, detail);
  }
}

static void on_lost(void *arg) {
  settle_all(arg, "mqtt.connection_lost",
             "connection lost before the broker acknowledged", 0);
}

static void on_connected(void *arg) {
  pump(arg);
}

static void on_tick(void *arg) {
  settle_all(arg, "timeout", "no acknowledgement before the deadline", 1);
}

int mqtt_sink_init(const ceb_host *host, ceb_instance *inst,
                   const ceb_instance_info *info, const ceb_config *cfg,
                   void **state) {
  mqtt_sink *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->role = CEB_ROLE_SINK;
  s->host = host;
  s->inst = inst;
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->pump_lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  int rc = mqtt_conf_load(host, inst, cfg, &s->conf);
  if (rc != CEB_OK) {
    mqtt_sink_destroy(s);
    return rc;
  }
  s->topic = ceb_config_str(cfg, "topic");
  s->qos = (int)ceb_config_int(cfg, "qos", 1);
  const char *mode = ceb_config_str(cfg, "mode");
  s->mode = mode && strcmp(mode, "structured") == 0 ? CEB_MODE_STRUCTURED
                                                    : CEB_MODE_BINARY;
  s->max_inflight = (int)ceb_config_int(cfg, "max_inflight", 64);
  if (s->conf.version == 4 && s->mode == CEB_MODE_BINARY) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "mode = binary needs mqtt_version = 5 (MQTT 3.1.1 has no "
            "properties to carry attributes): set mode = structured");
    mqtt_sink_destroy(s);
    return CEB_ECONFIG;
  }
  s->topic_fixed = s->topic && !strstr(s->topic, "${");
  if (!s->topic || (s->topic_fixed && !mqtt_topic_valid(s->topic))) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "topic: \"%s\" is not a valid topic name (no + or #)",
            s->topic ? s->topic : "");
    mqtt_sink_destroy(s);
    return CEB_ECONFIG;
  }
  if (s->conf.client_id)
    snprintf(s->client_id, sizeof s->client_id, "%s", s->conf.client_id);
  else
    snprintf(s->client_id, sizeof s->client_id, "cebridge-%s-%ld",
             info->name ? info->name : "sink", (long)getpid());
  *state = s;
  return CEB_OK;
}

int mqtt_sink_start(void *state) {
  mqtt_sink *s = state;
  mqtt_pub_ops ops = {on_connected, on_lost, on_tick, on_pub_done, NULL, NULL};
  int rc = mqtt_pub_new(s->host, s->inst, &s->conf, s->client_id, NULL, &ops, s,
                        &s->pub);
  s->conn_ready = rc == CEB_OK;
  return rc == CEB_OK ? mqtt_pub_start(s->pub) : rc;
}

/* Hands queued publishes to the publisher while fewer than the window
 * (the broker's Receive Maximum, capped by max_inflight) await completion:
 * the rest wait here, in order, still unsettled. Each completion refills at
 * once. Refilling in batches (only once half the window had come back) was
 * tried with paho: it woke its send thread 6x less often but stalled the
 * flow, as mosquitto (Nagle on by default) holds back PUBACKs while an
 * earlier one is unacknowledged, and with nothing to send our side delays
 * that TCP ACK (bench/mqtt/README.md, session 4). Called from deliver and
 * from the publisher's callbacks. */
static void pump(mqtt_sink *s) {
  if (!mqtt_pub_is_connected(s->pub)) return; /* the connect callback pumps */
  int window = mqtt_pub_window(s->pub);
  if (window > s->max_inflight) window = s->max_inflight;
  pthread_mutex_lock(&s->pump_lock);
  for (;;) {
    pthread_mutex_lock(&s->lock);
    sink_msg *m = s->qhead;
    if (!m || s->sent >= (size_t)window) {
      pthread_mutex_unlock(&s->lock);
      pthread_mutex_unlock(&s->pump_lock);
      return;
    }
    s->qhead = m->qnext;
    if (!s->qhead) s->qtail = NULL;
    m->queued = 0;
    s->sent++;
    /* Take the prepared data out: the publisher may complete (and free m)
     * before send returns. */
    char *topic = m->topic, *payload = m->payload;
    int topic_owned = m->topic_owned;
    sink_props props = m->props;
    size_t len = m->len;
    m->topic = m->payload = NULL;
    m->topic_owned = 0;
    memset(&m->props, 0, sizeof m->props);
    pthread_mutex_unlock(&s->lock);
    /* It encodes the packet now: ours stay our memory. */
    int rc = mqtt_pub_send(s->pub, topic, s->qos, props.array, props.count,
                           payload, len, m);
    if (topic_owned) free(topic);
    ceb_free(payload);
    props_clear(&props);
    if (rc != CEB_OK) { /* not queued: no completion follows for m */
      pthread_mutex_unlock(&s->pump_lock); /* finish pumps again */
      char detail[160];
      snprintf(detail, sizeof detail, "publish not queued: %s",
               rc == CEB_ESHUTDOWN ? "not connected" : ceb_strerror(rc));
      finish(m, rc == CEB_ETOOLARGE ? CEB_REJECT : CEB_RETRY, 0,
             rc == CEB_ETOOLARGE ? "mqtt.too_large" : "mqtt.publish_failed",
             detail);
      return; /* finish pumped again */
    }
  }
}

/* Structured mode from the journal's bytes (ceb_delivery_encoded, ABI 1.1):
 * what ceb_mqtt_encode writes (the JSON format; Content Type on MQTT 5),
 * without encoding the event again. */
static int structured_payload(int version, const char *json, size_t len,
                              char **ct, char **payload, size_t *plen) {
  *payload = malloc(len + 1);
  if (!*payload) return CEB_ENOMEM;
  memcpy(*payload, json, len);
  (*payload)[len] = '\0';
  *plen = len;
  if (version == 5 && !(*ct = strdup("application/cloudevents+json")))
    return CEB_ENOMEM; /* the caller frees the payload */
  return CEB_OK;
}

/* An egress mapping's result (ABI 1.2): its body as the payload; on MQTT 5
 * its content type as the Content Type and its headers as User Properties
 * (MQTT 3.1.1 has neither: the body alone). */
static int mapped_payload(int version, const ceb_mapped_out *mo,
                          ceb_headers *user, char **ct, char **payload,
                          size_t *plen) {
  *payload = malloc(mo->body_len + 1);
  if (!*payload) return CEB_ENOMEM;
  memcpy(*payload, mo->body, mo->body_len);
  (*payload)[mo->body_len] = '\0';
  *plen = mo->body_len;
  if (version != 5) return CEB_OK;
  if (!(*ct = strdup(mo->content_type))) return CEB_ENOMEM;
  for (size_t i = 0; i < mo->nheaders; i++)
    if (ceb_headers_add(user, mo->headers[i].name, mo->headers[i].value,
                        strlen(mo->headers[i].value)) != CEB_OK)
      return CEB_ENOMEM;
  return CEB_OK;
}

int mqtt_sink_deliver(void *state, ceb_delivery *d) {
  mqtt_sink *s = state;
  if (!d || !d->event) return CEB_EINVAL;
  pthread_mutex_lock(&s->lock);
  int draining = s->draining;
  int full = s->inflight >= (size_t)s->max_inflight;
  pthread_mutex_unlock(&s->lock);
  if (draining) return CEB_ESHUTDOWN;
  if (full) return CEB_EBUSY;
  /* Before the first connection (start-up) deliveries wait in the queue,
   * bounded by their deadline; once a connection was lost they go back to
   * the route's retry policy at once. */
  if (!s->conn_ready ||
      (!mqtt_pub_is_connected(s->pub) && mqtt_pub_ever_connected(s->pub))) {
    settle(s, d, CEB_RETRY, 0, "mqtt.disconnected",
           "not connected to the broker");
    return CEB_OK;
  }
  const char *why = NULL;
  /* The fixed topic was checked at init and outlives every record: used as
   * is, without a copy or a check per delivery. */
  const ceb_mapped_out *mo = ceb_delivery_mapped(d);
  /* a dead-letter or receipt topic first (never mapped), then an egress
   * mapping's topic (ABI 1.2), then the sink's */
  char *topic = d->topic          ? strdup(d->topic)
                : mo && mo->topic ? strdup(mo->topic)
                : s->topic_fixed  ? (char *)s->topic
                                  : mqtt_topic_expand(s->topic, d->event, &why);
  int topic_owned = topic != s->topic;
  if (!topic || (topic_owned && !mqtt_topic_valid(topic))) {
    if (topic_owned) free(topic);
    settle(s, d, CEB_REJECT, 0, "mqtt.topic_invalid",
           why               ? why
           : !d->topic && mo ? "the mapping's topic is not a valid topic name"
                             : "invalid topic override");
    return CEB_OK;
  }
  sink_props props = {0};
  char *payload = NULL;
  size_t len = 0;
  size_t jlen = 0;
  const char *json =
      s->mode == CEB_MODE_STRUCTURED ? ceb_delivery_encoded(d, &jlen) : NULL;
  int rc = mo     ? mapped_payload(s->conf.version, mo, &props.user, &props.ct,
                                   &payload, &len)
           : json ? structured_payload(s->conf.version, json, jlen, &props.ct,
                                       &payload, &len)
                  : ceb_mqtt_encode(d->event, s->conf.version, s->mode,
                                    &props.user, &props.ct, &payload, &len);
  if (rc == CEB_OK && s->conf.version == 5) rc = props_build(&props);
  if (rc == CEB_ENOMEM) goto out; /* the engine retries */
  if (rc != CEB_OK || len > 268435455u) {
    settle(s, d, CEB_REJECT, 0, "mqtt.encode",
           rc != CEB_OK ? ceb_strerror(rc) : "event too large for MQTT");
    goto out;
  }
  sink_msg *m = calloc(1, sizeof *m);
  if (!m) {
    rc = CEB_ENOMEM;
    goto out;
  }
  m->s = s;
  m->d = d;
  m->queued = 1;
  m->topic = topic;
  m->topic_owned = topic_owned;
  m->payload = payload;
  m->len = len;
  m->props = props;
  topic = payload = NULL;
  memset(&props, 0, sizeof props);
  pthread_mutex_lock(&s->lock);
  m->next = s->msgs;
  if (s->msgs) s->msgs->prev = m;
  s->msgs = m;
  s->inflight++;
  if (s->qtail)
    s->qtail->qnext = m;
  else
    s->qhead = m;
  s->qtail = m;
  pthread_mutex_unlock(&s->lock);
  pump(s);
  rc = CEB_OK;
out:
  props_clear(&props);
  ceb_free(payload);
  if (topic_owned) free(topic);
  return rc;
}

int mqtt_sink_drain(void *state, int64_t deadline_ms) {
  mqtt_sink *s = state;
  pthread_mutex_lock(&s->lock);
  s->draining = 1;
  while (s->inflight > 0 && s->host->now_ms(s->inst) < deadline_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20L * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
  }
  size_t left = s->inflight;
  pthread_mutex_unlock(&s->lock);
  if (left)
    settle_all(s, "shutdown", "the sink drained before the acknowledgement", 0);
  if (s->conn_ready) mqtt_pub_disconnect(s->pub, 1000);
  return left ? CEB_ETIMEOUT : CEB_OK;
}

void mqtt_sink_destroy(void *state) {
  mqtt_sink *s = state;
  if (!s) return;
  if (s->conn_ready) mqtt_pub_disconnect(s->pub, 1000);
  mqtt_pub_free(s->pub); /* no callback after this */
  s->pub = NULL;
  settle_all(s, "shutdown", "the sink stopped before the acknowledgement", 0);
  while (s->msgs) {
    sink_msg *m = s->msgs;
    s->msgs = m->next;
    free_prepared(m);
    free(m);
  }
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->pump_lock);
  pthread_cond_destroy(&s->cond);
  free(s);
}
