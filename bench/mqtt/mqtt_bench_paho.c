#include "mqtt_bench_paho.h"

#include "mqtt_bench_http.h" /* mb_http_key */

#include <MQTTAsync.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mb_mqtt {
  MQTTAsync h;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int op_done, op_ok;
  int receive_max; /* from CONNACK */
  long inflight, acked, failed;
  int64_t last_ack_us;
};

static void deadline_in(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_REALTIME, ts);
  int64_t ns = ts->tv_nsec + (ms % 1000) * 1000000;
  ts->tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
  ts->tv_nsec = (long)(ns % 1000000000);
}

static void op_end(mb_mqtt *c, int ok) {
  pthread_mutex_lock(&c->lock);
  c->op_done = 1;
  c->op_ok = ok;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static int op_wait(mb_mqtt *c, int64_t ms) {
  struct timespec ts;
  deadline_in(&ts, ms);
  pthread_mutex_lock(&c->lock);
  while (!c->op_done)
    if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT) break;
  int ok = c->op_done && c->op_ok;
  c->op_done = 0;
  pthread_mutex_unlock(&c->lock);
  return ok ? 0 : -1;
}

static void on_connect_ok(void *ctx, MQTTAsync_successData5 *r) {
  mb_mqtt *c = ctx;
  int rm = 65535;
  if (r && MQTTProperties_hasProperty(&r->properties,
                                      MQTTPROPERTY_CODE_RECEIVE_MAXIMUM))
    rm = MQTTProperties_getNumericValue(&r->properties,
                                        MQTTPROPERTY_CODE_RECEIVE_MAXIMUM);
  pthread_mutex_lock(&c->lock);
  c->receive_max = rm > 0 ? rm : 65535;
  pthread_mutex_unlock(&c->lock);
  op_end(c, 1);
}

static void on_fail(void *ctx, MQTTAsync_failureData5 *r) {
  fprintf(stderr, "bench mqtt: operation failed: %s (code %d, reason %d)\n",
          r && r->message ? r->message : "-", r ? r->code : 0,
          r ? (int)r->reasonCode : 0);
  op_end(ctx, 0);
}

static void on_disc_ok(void *ctx, MQTTAsync_successData5 *r) {
  op_end(ctx, !r || r->reasonCode < 0x80);
}

/* The publisher subscribes to nothing; paho wants a message callback all
 * the same to read from the socket. */
static int on_message(void *ctx, char *topic, int topic_len,
                      MQTTAsync_message *m) {
  (void)ctx;
  (void)topic_len;
  MQTTAsync_freeMessage(&m);
  MQTTAsync_free(topic);
  return 1;
}

static mb_mqtt *client_new(const char *url, const char *client_id, int rmax) {
  mb_mqtt *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer5;
  co.maxBufferedMessages = 100000;
  if (MQTTAsync_createWithOptions(&c->h, url, client_id,
                                  MQTTCLIENT_PERSISTENCE_NONE, NULL,
                                  &co) != MQTTASYNC_SUCCESS) {
    fprintf(stderr, "bench mqtt: cannot create client for %s\n", url);
    free(c);
    return NULL;
  }
  MQTTAsync_setCallbacks(c->h, c, NULL, on_message, NULL);
  MQTTProperties props = MQTTProperties_initializer;
  MQTTProperty p;
  memset(&p, 0, sizeof p);
  p.identifier = MQTTPROPERTY_CODE_RECEIVE_MAXIMUM;
  p.value.integer2 = (unsigned short)rmax;
  MQTTProperties_add(&props, &p);
  MQTTAsync_connectOptions o = MQTTAsync_connectOptions_initializer5;
  o.cleanstart = 1;
  o.keepAliveInterval = 60;
  o.connectProperties = &props;
  o.onSuccess5 = on_connect_ok;
  o.onFailure5 = on_fail;
  o.context = c;
  int rc = MQTTAsync_connect(c->h, &o);
  MQTTProperties_free(&props);
  if (rc != MQTTASYNC_SUCCESS || op_wait(c, 10000) != 0) {
    fprintf(stderr, "bench mqtt: cannot connect to %s\n", url);
    mb_mqtt_stop(c);
    return NULL;
  }
  return c;
}

mb_mqtt *mb_pub_start(const char *url, const char *client_id) {
  return client_new(url, client_id, 1000);
}

void mb_mqtt_stop(mb_mqtt *c) {
  if (!c) return;
  if (MQTTAsync_isConnected(c->h)) {
    MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer5;
    d.timeout = 2000;
    d.context = c;
    d.onSuccess5 = on_disc_ok;
    d.onFailure5 = on_fail;
    if (MQTTAsync_disconnect(c->h, &d) == MQTTASYNC_SUCCESS) op_wait(c, 3000);
  }
  MQTTAsync_destroy(&c->h);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  free(c);
}

/* ---- publisher ---- */

static void pub_done(mb_mqtt *c, int ok) {
  pthread_mutex_lock(&c->lock);
  c->inflight--;
  if (ok)
    c->acked++;
  else
    c->failed++;
  c->last_ack_us = mb_now_us();
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void on_pub_ok(void *ctx, MQTTAsync_successData5 *r) {
  pub_done(ctx, !r || r->reasonCode < 0x80);
}

static void on_pub_fail(void *ctx, MQTTAsync_failureData5 *r) {
  (void)r;
  pub_done(ctx, 0);
}

/* Properties as a plain array on the stack: paho copies them in
 * sendMessage, so building them with MQTTProperties_add (allocations on
 * paho's tracked heap) would only add publisher CPU taken from the bridge. */
static void add_user(MQTTProperties *ps, const char *name, const char *value) {
  MQTTProperty *p = &ps->array[ps->count++];
  memset(p, 0, sizeof *p);
  p->identifier = MQTTPROPERTY_CODE_USER_PROPERTY;
  p->value.data.data = (char *)name;
  p->value.data.len = (int)strlen(name);
  p->value.value.data = (char *)value;
  p->value.value.len = (int)strlen(value);
  ps->length += 5 + p->value.data.len + p->value.value.len;
}

static void add_content_type(MQTTProperties *ps, const char *ct) {
  MQTTProperty *p = &ps->array[ps->count++];
  memset(p, 0, sizeof *p);
  p->identifier = MQTTPROPERTY_CODE_CONTENT_TYPE;
  p->value.data.data = (char *)ct;
  p->value.data.len = (int)strlen(ct);
  ps->length += 3 + p->value.data.len;
}

static void sleep_until_us(int64_t t) {
  int64_t now = mb_now_us();
  if (t <= now) return;
  struct timespec ts = {(time_t)((t - now) / 1000000),
                        (long)((t - now) % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

int mb_pub_run(mb_mqtt *c, const mb_pub_opts *o, mb_pub_result *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_lock(&c->lock);
  int window = c->receive_max > 1 ? c->receive_max - 1 : 1;
  long acked0 = c->acked, failed0 = c->failed; /* earlier runs' */
  pthread_mutex_unlock(&c->lock);
  if (window > 1000) window = 1000;
  r->window = window;
  const char *fixed_attrs[] = {"1.0", o->source, o->type,
                               "2026-11-22T18:00:00Z"};
  /* attribute values + data = size: data is {"pad":"..."} */
  int fixed = 10 + 16 /* id */ + 10 /* key */ + 16 /* stamp */;
  for (int i = 0; i < 4; i++)
    fixed += (int)strlen(fixed_attrs[i]);
  int padn = o->size > fixed ? o->size - fixed : 0;
  char *payload = malloc((size_t)padn + 16);
  if (!payload) return -1;
  int plen =
      snprintf(payload, (size_t)padn + 16, "{\"pad\":\"%*s\"}", padn, "");
  memset(payload + 8, 'x', (size_t)padn);
  char *event = malloc((size_t)plen + 512); /* structured: attributes too */
  if (!event) {
    free(payload);
    return -1;
  }
  int64_t t0 = mb_now_us(), last_send = t0;
  for (long i = 0; i < o->count; i++) {
    if (o->rate > 0) sleep_until_us(t0 + (int64_t)((double)i * 1e6 / o->rate));
    struct timespec ts;
    deadline_in(&ts, 30000);
    pthread_mutex_lock(&c->lock);
    while (c->inflight >= window)
      if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT) break;
    int full = c->inflight >= window;
    if (!full) c->inflight++;
    pthread_mutex_unlock(&c->lock);
    if (full) {
      fprintf(stderr, "bench mqtt: no PUBACK for 30 s\n");
      break;
    }
    char id[32], key[24], stamp[24];
    int streams = o->streams > 0 ? o->streams : 1;
    snprintf(id, sizeof id, "%s-%d-%ld", o->id_prefix ? o->id_prefix : "mb",
             o->stream, i);
    snprintf(key, sizeof key, "key-%d",
             mb_http_key(o->stream, i, streams, o->keys));
    last_send = mb_now_us();
    snprintf(stamp, sizeof stamp, "%lld", (long long)last_send);
    MQTTAsync_message m = MQTTAsync_message_initializer;
    MQTTProperty arr[8];
    m.payload = payload;
    m.payloadlen = plen;
    m.qos = 1;
    m.properties.array = arr;
    m.properties.max_count = 8;
    if (o->structured) { /* the whole event in the payload */
      int n = snprintf(event, (size_t)plen + 512,
                       "{\"specversion\":\"%s\",\"id\":\"%s\",\"source\":"
                       "\"%s\",\"type\":\"%s\",\"time\":\"%s\","
                       "\"partitionkey\":\"%s\",\"benchsent\":\"%s\","
                       "\"datacontenttype\":\"application/json\",\"data\":%s}",
                       fixed_attrs[0], id, o->source, o->type, fixed_attrs[3],
                       key, stamp, payload);
      m.payload = event;
      m.payloadlen = n;
      add_content_type(&m.properties, "application/cloudevents+json");
    } else {
      add_user(&m.properties, "specversion", fixed_attrs[0]);
      add_user(&m.properties, "id", id);
      add_user(&m.properties, "source", o->source);
      add_user(&m.properties, "type", o->type);
      add_user(&m.properties, "time", fixed_attrs[3]);
      add_user(&m.properties, "partitionkey", key);
      add_user(&m.properties, "benchsent", stamp);
      add_content_type(&m.properties, "application/json");
    }
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    ro.onSuccess5 = on_pub_ok;
    ro.onFailure5 = on_pub_fail;
    ro.context = c;
    int rc = MQTTAsync_sendMessage(c->h, o->topic, &m, &ro);
    if (rc != MQTTASYNC_SUCCESS) {
      pub_done(c, 0);
      fprintf(stderr, "bench mqtt: publish not queued: %s\n",
              MQTTAsync_strerror(rc));
      break;
    }
    r->sent++;
  }
  (void)last_send;
  struct timespec ts;
  deadline_in(&ts, 120000);
  pthread_mutex_lock(&c->lock);
  while (c->inflight > 0)
    if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT) break;
  r->acked = c->acked - acked0;
  r->failed = c->failed - failed0 + c->inflight;
  r->elapsed_s = (double)(c->last_ack_us - t0) / 1e6;
  pthread_mutex_unlock(&c->lock);
  free(payload);
  free(event);
  return r->sent ? 0 : -1;
}
