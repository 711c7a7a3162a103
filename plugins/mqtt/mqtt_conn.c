#include "mqtt_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GAUGE "mqtt_connected"

int64_t mqtt_now_ms(const mqtt_conn *c) {
  return c->host->now_ms(c->inst);
}

int mqtt_props_add(MQTTProperties *props, int id, const char *name,
                   size_t name_len, const char *value, size_t value_len) {
  MQTTProperty p;
  memset(&p, 0, sizeof p);
  p.identifier = (enum MQTTPropertyCodes)id;
  p.value.data.data = (char *)name;
  p.value.data.len = (int)name_len;
  if (value) {
    p.value.value.data = (char *)value;
    p.value.value.len = (int)value_len;
  }
  return MQTTProperties_add(props, &p) == 0 ? 0 : -1;
}

static void gauge(mqtt_conn *c, int up) {
  c->host->metric(c->inst, CEB_METRIC_GAUGE, GAUGE, NULL, up ? 1.0 : 0.0);
}

static void mark_connected(mqtt_conn *c, const char *how) {
  pthread_mutex_lock(&c->lock);
  int was = c->connected;
  c->connected = 1;
  c->connecting = 0;
  c->ever_connected = 1;
  c->backoff_ms = 0;
  if (!was) c->connects++;
  unsigned long n = c->connects;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  if (was) return;
  gauge(c, 1);
  CEB_LOG(c->host, c->inst, CEB_LOG_INFO,
          "connected to %s:%d as \"%s\" (MQTT %s, %s, connection #%lu)",
          c->conf->host, c->conf->port, c->client_id,
          c->conf->version == 5 ? "5" : "3.1.1", how, n);
  if (c->ops.connected) c->ops.connected(c->arg);
}

static void on_connected(void *ctx, char *cause) {
  mark_connected(ctx, cause && *cause ? cause : "connect");
}

static void on_connect_ok(void *ctx, MQTTAsync_successData *r) {
  (void)r;
  mark_connected(ctx, "connect");
}

static void on_connect_ok5(void *ctx, MQTTAsync_successData5 *r) {
  mqtt_conn *c = ctx;
  if (r && r->alt.connect.sessionPresent)
    CEB_LOG(c->host, c->inst, CEB_LOG_DEBUG, "broker resumed the session");
  mark_connected(ctx, "connect");
}

/* A failed first connection: try again after a doubling delay. Later losses
 * are paho's automatic reconnect. */
static void connect_failed(mqtt_conn *c, int code, int reason,
                           const char *msg) {
  pthread_mutex_lock(&c->lock);
  c->connecting = 0;
  int64_t min = (int64_t)c->conf->reconnect_min_s * 1000;
  int64_t max = (int64_t)c->conf->reconnect_max_s * 1000;
  c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : min;
  if (c->backoff_ms > max) c->backoff_ms = max;
  c->next_attempt_ms = mqtt_now_ms(c) + c->backoff_ms;
  int64_t wait = c->backoff_ms;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  if (reason)
    CEB_LOG(c->host, c->inst, CEB_LOG_WARN,
            "connect to %s:%d refused: reason 0x%02x (%s)%s%s; retrying in "
            "%lld ms",
            c->conf->host, c->conf->port, (unsigned)reason,
            MQTTReasonCode_toString((enum MQTTReasonCodes)reason),
            msg ? ": " : "", msg ? msg : "", (long long)wait);
  else
    CEB_LOG(c->host, c->inst, CEB_LOG_WARN,
            "connect to %s:%d failed: %s (code %d); retrying in %lld ms",
            c->conf->host, c->conf->port, msg ? msg : MQTTAsync_strerror(code),
            code, (long long)wait);
}

static void on_connect_fail(void *ctx, MQTTAsync_failureData *r) {
  connect_failed(ctx, r ? r->code : 0, 0, r ? r->message : NULL);
}

static void on_connect_fail5(void *ctx, MQTTAsync_failureData5 *r) {
  int reason = r ? (int)r->reasonCode : 0;
  /* paho reports a refusing CONNACK's reason code in `code`. */
  if (!reason && r && r->code >= 0x80 && r->code <= 0xff) reason = r->code;
  connect_failed(ctx, r ? r->code : 0, reason,
                 reason ? NULL
                 : r    ? r->message
                        : NULL);
}

static void on_lost(void *ctx, char *cause) {
  mqtt_conn *c = ctx;
  pthread_mutex_lock(&c->lock);
  int was = c->connected;
  c->connected = 0;
  int stopping = c->stopping;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  if (!was) return;
  gauge(c, 0);
  CEB_LOG(c->host, c->inst, stopping ? CEB_LOG_INFO : CEB_LOG_WARN,
          "connection to %s:%d lost: %s%s", c->conf->host, c->conf->port,
          cause && *cause ? cause : "socket closed",
          stopping ? "" : "; reconnecting");
  if (c->ops.lost) c->ops.lost(c->arg);
}

/* MQTT 5: the broker sent DISCONNECT with a reason code. */
static void on_disconnected(void *ctx, MQTTProperties *props,
                            enum MQTTReasonCodes reason) {
  mqtt_conn *c = ctx;
  MQTTProperty *rs =
      props ? MQTTProperties_getProperty(props, MQTTPROPERTY_CODE_REASON_STRING)
            : NULL;
  CEB_LOG(c->host, c->inst, CEB_LOG_WARN,
          "broker %s:%d disconnected us: reason 0x%02x (%s)%s%.*s",
          c->conf->host, c->conf->port, (unsigned)reason,
          MQTTReasonCode_toString(reason), rs ? ": " : "",
          rs ? rs->value.data.len : 0, rs ? rs->value.data.data : "");
}

static int on_message(void *ctx, char *topic, int topic_len,
                      MQTTAsync_message *m) {
  mqtt_conn *c = ctx;
  if (c->ops.message) return c->ops.message(c->arg, topic, topic_len, m);
  MQTTAsync_freeMessage(&m); /* a publisher subscribes to nothing */
  MQTTAsync_free(topic);
  return 1;
}

static void do_connect(mqtt_conn *c) {
  const mqtt_conf *f = c->conf;
  MQTTAsync_connectOptions o = MQTTAsync_connectOptions_initializer;
  if (f->version == 5) {
    MQTTAsync_connectOptions o5 = MQTTAsync_connectOptions_initializer5;
    o = o5;
    o.cleanstart = c->opts.clean;
    o.connectProperties = &c->props;
    o.onSuccess5 = on_connect_ok5;
    o.onFailure5 = on_connect_fail5;
  } else {
    o.MQTTVersion = MQTTVERSION_3_1_1;
    o.cleansession = c->opts.clean;
    o.onSuccess = on_connect_ok;
    o.onFailure = on_connect_fail;
  }
  o.context = c;
  o.keepAliveInterval = f->keepalive_s;
  o.connectTimeout = f->connect_timeout_s;
  o.automaticReconnect = 1;
  o.minRetryInterval = f->reconnect_min_s;
  o.maxRetryInterval = f->reconnect_max_s;
  if (c->opts.max_inflight > 0) o.maxInflight = c->opts.max_inflight;
  o.username = f->username;
  o.password = f->password;
  int rc = MQTTAsync_connect(c->h, &o);
  if (rc != MQTTASYNC_SUCCESS) connect_failed(c, rc, 0, MQTTAsync_strerror(rc));
}

static void *supervisor(void *arg) {
  mqtt_conn *c = arg;
  pthread_mutex_lock(&c->lock);
  while (!c->stopping) {
    if (!c->ever_connected && !c->connecting &&
        mqtt_now_ms(c) >= c->next_attempt_ms) {
      c->connecting = 1;
      pthread_mutex_unlock(&c->lock);
      do_connect(c);
      pthread_mutex_lock(&c->lock);
      continue;
    }
    pthread_mutex_unlock(&c->lock);
    if (c->ops.tick) c->ops.tick(c->arg);
    pthread_mutex_lock(&c->lock);
    if (c->stopping) break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50L * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&c->cond, &c->lock, &ts);
  }
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

int mqtt_conn_init(mqtt_conn *c, const ceb_host *host, ceb_instance *inst,
                   const mqtt_conf *conf, const char *client_id,
                   const mqtt_conn_opts *opts, const mqtt_conn_ops *ops,
                   void *arg) {
  memset(c, 0, sizeof *c);
  c->host = host;
  c->inst = inst;
  c->conf = conf;
  c->ops = *ops;
  c->arg = arg;
  c->opts = *opts;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  MQTTProperties empty = MQTTProperties_initializer;
  c->props = empty;
  if (!(c->uri = strdup(opts->uri)) || !(c->client_id = strdup(client_id)))
    return CEB_ENOMEM;
  MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer;
  co.MQTTVersion = conf->version == 5 ? MQTTVERSION_5 : MQTTVERSION_3_1_1;
  co.sendWhileDisconnected = 0;
  co.maxBufferedMessages = opts->max_inflight > 0 ? opts->max_inflight : 100;
  int rc = MQTTAsync_createWithOptions(&c->h, c->uri, c->client_id,
                                       MQTTCLIENT_PERSISTENCE_NONE, NULL, &co);
  if (rc != MQTTASYNC_SUCCESS) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "cannot create MQTT client for %s: %s",
            c->uri, MQTTAsync_strerror(rc));
    c->h = NULL;
    return CEB_EINVAL;
  }
  /* Properties only after the client exists: paho's heap tracking starts
   * with the first client, and an allocation it tracks before that leaks. */
  if (conf->version == 5) {
    MQTTProperty p;
    memset(&p, 0, sizeof p);
    if (!opts->clean) {
      p.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL;
      p.value.integer4 = (unsigned)opts->session_expiry_s;
      MQTTProperties_add(&c->props, &p);
    }
    if (opts->receive_max > 0) {
      p.identifier = MQTTPROPERTY_CODE_RECEIVE_MAXIMUM;
      p.value.integer2 = (unsigned short)opts->receive_max;
      MQTTProperties_add(&c->props, &p);
    }
  }
  /* Always a messageArrived: paho only watches a client's socket for reads
   * (and so notices a dead broker) when one is set. */
  MQTTAsync_setCallbacks(c->h, c, on_lost, on_message, NULL);
  MQTTAsync_setConnected(c->h, c, on_connected);
  if (conf->version == 5) MQTTAsync_setDisconnected(c->h, c, on_disconnected);
  return CEB_OK;
}

int mqtt_conn_start(mqtt_conn *c) {
  gauge(c, 0);
  if (pthread_create(&c->thread, NULL, supervisor, c) != 0) return CEB_ENOMEM;
  c->thread_started = 1;
  /* named for top -H / perf (15 characters at most) */
  pthread_setname_np(c->thread, "mqtt-supervisor");
  return CEB_OK;
}

int mqtt_conn_ever_connected(mqtt_conn *c) {
  pthread_mutex_lock(&c->lock);
  int ever = c->ever_connected;
  pthread_mutex_unlock(&c->lock);
  return ever;
}

int mqtt_conn_is_connected(mqtt_conn *c) {
  pthread_mutex_lock(&c->lock);
  int up = c->connected;
  pthread_mutex_unlock(&c->lock);
  return up;
}

static void on_disc_done(void *ctx, MQTTAsync_successData *r) {
  (void)r;
  mqtt_conn *c = ctx;
  pthread_mutex_lock(&c->lock);
  c->connected = 0;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void on_disc_fail(void *ctx, MQTTAsync_failureData *r) {
  (void)r;
  on_disc_done(ctx, NULL);
}

void mqtt_conn_disconnect(mqtt_conn *c, int timeout_ms) {
  pthread_mutex_lock(&c->lock);
  c->stopping = 1;
  int up = c->connected;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  if (!c->h) return;
  if (up) {
    MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer;
    d.timeout = timeout_ms;
    d.context = c;
    d.onSuccess = on_disc_done;
    d.onFailure = on_disc_fail;
    if (MQTTAsync_disconnect(c->h, &d) == MQTTASYNC_SUCCESS) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t ns = (int64_t)ts.tv_nsec + (int64_t)(timeout_ms + 1000) * 1000000;
      ts.tv_sec += (time_t)(ns / 1000000000);
      ts.tv_nsec = (long)(ns % 1000000000);
      pthread_mutex_lock(&c->lock);
      while (c->connected)
        if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT) break;
      pthread_mutex_unlock(&c->lock);
    }
  }
  gauge(c, 0);
}

void mqtt_conn_destroy(mqtt_conn *c) {
  pthread_mutex_lock(&c->lock);
  c->stopping = 1;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  if (c->thread_started) pthread_join(c->thread, NULL);
  c->thread_started = 0;
  if (c->h) MQTTAsync_destroy(&c->h);
  MQTTProperties_free(&c->props);
  free(c->uri);
  free(c->client_id);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
}
