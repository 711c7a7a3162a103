/* The blocking test client of ceb_mosquitto.h on paho MQTTAsync. */
#include "ceb_mosquitto.h"

#include <MQTTAsync.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ceb_mqtt_client {
  MQTTAsync h;
  int version;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int op_done, op_ok;
  ceb_mqtt_msg **msgs; /* each message stays put while the array grows */
  size_t nmsgs, cap;
};

static char *dup_len(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

static int on_message(void *ctx, char *topic, int topic_len,
                      MQTTAsync_message *m) {
  ceb_mqtt_client *c = ctx;
  ceb_mqtt_msg msg = {0};
  msg.topic = topic_len > 0 ? dup_len(topic, (size_t)topic_len) : strdup(topic);
  msg.payload = dup_len(m->payload ? m->payload : "", (size_t)m->payloadlen);
  msg.len = (size_t)m->payloadlen;
  msg.qos = m->qos;
  msg.dup = m->dup;
  for (int i = 0; i < m->properties.count; i++) {
    MQTTProperty *p = &m->properties.array[i];
    if (p->identifier == MQTTPROPERTY_CODE_CONTENT_TYPE) {
      free(msg.content_type);
      msg.content_type = dup_len(p->value.data.data, (size_t)p->value.data.len);
    } else if (p->identifier == MQTTPROPERTY_CODE_USER_PROPERTY) {
      ceb_mqtt_prop *np =
          realloc(msg.props, (msg.nprops + 1) * sizeof *msg.props);
      if (np) {
        msg.props = np;
        np[msg.nprops].name =
            dup_len(p->value.data.data, (size_t)p->value.data.len);
        np[msg.nprops].value =
            dup_len(p->value.value.data, (size_t)p->value.value.len);
        msg.nprops++;
      }
    }
  }
  MQTTAsync_freeMessage(&m);
  MQTTAsync_free(topic);
  ceb_mqtt_msg *heap = malloc(sizeof *heap);
  if (heap) *heap = msg;
  pthread_mutex_lock(&c->lock);
  if (c->nmsgs == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    ceb_mqtt_msg **nm = realloc(c->msgs, cap * sizeof *nm);
    if (nm) {
      c->msgs = nm;
      c->cap = cap;
    }
  }
  if (heap && c->nmsgs < c->cap) {
    c->msgs[c->nmsgs++] = heap;
  } else { /* out of memory: the test will miss it and say so */
    free(msg.topic);
    free(msg.payload);
    free(msg.content_type);
    for (size_t j = 0; j < msg.nprops; j++) {
      free(msg.props[j].name);
      free(msg.props[j].value);
    }
    free(msg.props);
    free(heap);
  }
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  return 1;
}

static void op_finish(ceb_mqtt_client *c, int ok) {
  pthread_mutex_lock(&c->lock);
  c->op_done = 1;
  c->op_ok = ok;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void on_ok(void *ctx, MQTTAsync_successData *r) {
  (void)r;
  op_finish(ctx, 1);
}
static void on_fail(void *ctx, MQTTAsync_failureData *r) {
  fprintf(stderr, "test client: operation failed: %d %s\n", r ? r->code : 0,
          r && r->message ? r->message : "");
  op_finish(ctx, 0);
}
static void on_ok5(void *ctx, MQTTAsync_successData5 *r) {
  op_finish(ctx, !r || r->reasonCode < 0x80);
}
static void on_sub_ok5(void *ctx, MQTTAsync_successData5 *r) {
  /* SUBACK reason codes >= 0x80 are refusals. */
  /* One topic: paho reports its code in reasonCode, not the array. */
  int ok = !r || r->reasonCode < 0x80;
  op_finish(ctx, ok);
}
static void on_fail5(void *ctx, MQTTAsync_failureData5 *r) {
  fprintf(stderr, "test client: operation failed: code %d reason 0x%x\n",
          r ? r->code : 0, r ? (unsigned)r->reasonCode : 0);
  op_finish(ctx, 0);
}

static void op_begin(ceb_mqtt_client *c) {
  pthread_mutex_lock(&c->lock);
  c->op_done = 0;
  c->op_ok = 0;
  pthread_mutex_unlock(&c->lock);
}

static int op_wait(ceb_mqtt_client *c, int timeout_ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&c->lock);
  while (!c->op_done)
    if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) != 0) break;
  int ok = c->op_done && c->op_ok;
  pthread_mutex_unlock(&c->lock);
  return ok ? 0 : -1;
}

static void set_callbacks(ceb_mqtt_client *c, MQTTAsync_responseOptions *ro) {
  ro->context = c;
  if (c->version == 5) {
    ro->onSuccess5 = on_ok5;
    ro->onFailure5 = on_fail5;
  } else {
    ro->onSuccess = on_ok;
    ro->onFailure = on_fail;
  }
}

ceb_mqtt_client *ceb_mqtt_client_new(const char *url, const char *client_id,
                                     int version) {
  ceb_mqtt_client *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->version = version;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer;
  co.MQTTVersion = version == 5 ? MQTTVERSION_5 : MQTTVERSION_3_1_1;
  if (MQTTAsync_createWithOptions(&c->h, url, client_id,
                                  MQTTCLIENT_PERSISTENCE_NONE, NULL,
                                  &co) != MQTTASYNC_SUCCESS) {
    ceb_mqtt_client_free(c);
    return NULL;
  }
  MQTTAsync_setCallbacks(c->h, c, NULL, on_message, NULL);
  MQTTAsync_connectOptions o = MQTTAsync_connectOptions_initializer;
  MQTTAsync_connectOptions o5 = MQTTAsync_connectOptions_initializer5;
  if (version == 5) {
    o = o5;
    o.cleanstart = 1;
    o.onSuccess5 = on_ok5;
    o.onFailure5 = on_fail5;
  } else {
    o.MQTTVersion = MQTTVERSION_3_1_1;
    o.cleansession = 1;
    o.onSuccess = on_ok;
    o.onFailure = on_fail;
  }
  o.context = c;
  o.keepAliveInterval = 30;
  op_begin(c);
  if (MQTTAsync_connect(c->h, &o) != MQTTASYNC_SUCCESS || op_wait(c, 10000)) {
    fprintf(stderr, "test client: cannot connect to %s\n", url);
    ceb_mqtt_client_free(c);
    return NULL;
  }
  return c;
}

void ceb_mqtt_client_free(ceb_mqtt_client *c) {
  if (!c) return;
  if (c->h) {
    if (MQTTAsync_isConnected(c->h)) {
      MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer;
      d.timeout = 1000;
      op_begin(c);
      d.context = c;
      d.onSuccess = on_ok;
      d.onFailure = on_fail;
      if (MQTTAsync_disconnect(c->h, &d) == MQTTASYNC_SUCCESS) op_wait(c, 2000);
    }
    MQTTAsync_destroy(&c->h);
  }
  for (size_t i = 0; i < c->nmsgs; i++) {
    ceb_mqtt_msg *m = c->msgs[i];
    free(m->topic);
    free(m->payload);
    free(m->content_type);
    for (size_t j = 0; j < m->nprops; j++) {
      free(m->props[j].name);
      free(m->props[j].value);
    }
    free(m->props);
    free(m);
  }
  free(c->msgs);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  free(c);
}

int ceb_mqtt_subscribe(ceb_mqtt_client *c, const char *filter, int qos) {
  MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
  set_callbacks(c, &ro);
  if (c->version == 5) ro.onSuccess5 = on_sub_ok5;
  op_begin(c);
  if (MQTTAsync_subscribe(c->h, filter, qos, &ro) != MQTTASYNC_SUCCESS)
    return -1;
  return op_wait(c, 10000);
}

static int add_string_prop(MQTTProperties *props, int id, const char *name,
                           const char *value) {
  MQTTProperty p;
  memset(&p, 0, sizeof p);
  p.identifier = id;
  p.value.data.data = (char *)name;
  p.value.data.len = (int)strlen(name);
  if (value) {
    p.value.value.data = (char *)value;
    p.value.value.len = (int)strlen(value);
  }
  return MQTTProperties_add(props, &p);
}

int ceb_mqtt_publish(ceb_mqtt_client *c, const char *topic, const void *payload,
                     size_t len, int qos, const char *content_type,
                     const char *const *props) {
  MQTTAsync_message m = MQTTAsync_message_initializer;
  m.payload = (void *)payload;
  m.payloadlen = (int)len;
  m.qos = qos;
  if (c->version == 5) {
    if (content_type)
      add_string_prop(&m.properties, MQTTPROPERTY_CODE_CONTENT_TYPE,
                      content_type, NULL);
    for (size_t i = 0; props && props[i] && props[i + 1]; i += 2)
      add_string_prop(&m.properties, MQTTPROPERTY_CODE_USER_PROPERTY, props[i],
                      props[i + 1]);
  }
  MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
  set_callbacks(c, &ro);
  op_begin(c);
  int rc = MQTTAsync_sendMessage(c->h, topic, &m, &ro);
  MQTTProperties_free(&m.properties);
  if (rc != MQTTASYNC_SUCCESS) return -1;
  return op_wait(c, 10000);
}

size_t ceb_mqtt_wait(ceb_mqtt_client *c, size_t n, int timeout_ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&c->lock);
  while (c->nmsgs < n)
    if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) != 0) break;
  size_t got = c->nmsgs;
  pthread_mutex_unlock(&c->lock);
  return got;
}

size_t ceb_mqtt_count(ceb_mqtt_client *c) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->nmsgs;
  pthread_mutex_unlock(&c->lock);
  return n;
}

const ceb_mqtt_msg *ceb_mqtt_get(ceb_mqtt_client *c, size_t i) {
  pthread_mutex_lock(&c->lock);
  const ceb_mqtt_msg *m = i < c->nmsgs ? c->msgs[i] : NULL;
  pthread_mutex_unlock(&c->lock);
  return m;
}

const char *ceb_mqtt_msg_prop(const ceb_mqtt_msg *msg, const char *name) {
  for (size_t i = 0; msg && i < msg->nprops; i++)
    if (strcmp(msg->props[i].name, name) == 0) return msg->props[i].value;
  return NULL;
}
