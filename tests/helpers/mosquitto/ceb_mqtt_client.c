/* The blocking test client of ceb_mosquitto.h on libmosquitto (its own
 * network thread, mosquitto_loop_start): the library the plugin uses. */
#include "ceb_mosquitto.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ceb_mqtt_client {
  struct mosquitto *m;
  int version;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int op_mid; /* the operation waited for (0: the CONNECT) */
  int op_done, op_ok;
  ceb_mqtt_msg **msgs; /* each message stays put while the array grows */
  size_t nmsgs, cap;
};

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init(void) {
  mosquitto_lib_init();
}

static char *dup_len(const void *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    if (n) memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

static void msg_free(ceb_mqtt_msg *m) {
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

static void on_message(struct mosquitto *mosq, void *obj,
                       const struct mosquitto_message *m,
                       const mosquitto_property *props) {
  (void)mosq;
  ceb_mqtt_client *c = obj;
  ceb_mqtt_msg *msg = calloc(1, sizeof *msg);
  if (!msg) return;
  msg->topic = strdup(m->topic);
  msg->payload = dup_len(m->payload, (size_t)m->payloadlen);
  msg->len = (size_t)m->payloadlen;
  msg->qos = m->qos;
  char *ct = NULL;
  if (mosquitto_property_read_string(props, MQTT_PROP_CONTENT_TYPE, &ct, false))
    msg->content_type = ct;
  char *k = NULL, *v = NULL;
  const mosquitto_property *p = props;
  int skip = 0;
  while ((p = mosquitto_property_read_string_pair(p, MQTT_PROP_USER_PROPERTY,
                                                  &k, &v, skip))) {
    skip = 1;
    ceb_mqtt_prop *np =
        realloc(msg->props, (msg->nprops + 1) * sizeof *msg->props);
    if (!np) {
      free(k);
      free(v);
      break;
    }
    msg->props = np;
    np[msg->nprops].name = k;
    np[msg->nprops].value = v;
    msg->nprops++;
  }
  pthread_mutex_lock(&c->lock);
  if (c->nmsgs == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    ceb_mqtt_msg **nm = realloc(c->msgs, cap * sizeof *nm);
    if (nm) {
      c->msgs = nm;
      c->cap = cap;
    }
  }
  if (c->nmsgs < c->cap)
    c->msgs[c->nmsgs++] = msg;
  else /* out of memory: the test will miss it and say so */
    msg_free(msg);
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void op_finish(ceb_mqtt_client *c, int mid, int ok) {
  pthread_mutex_lock(&c->lock);
  if (mid == c->op_mid) {
    c->op_done = 1;
    c->op_ok = ok;
    pthread_cond_broadcast(&c->cond);
  }
  pthread_mutex_unlock(&c->lock);
}

static void on_connect(struct mosquitto *m, void *obj, int rc, int flags,
                       const mosquitto_property *props) {
  (void)m;
  (void)flags;
  (void)props;
  if (rc) fprintf(stderr, "test client: connect refused: 0x%02x\n", rc);
  op_finish(obj, 0, rc == 0);
}

static void on_publish(struct mosquitto *m, void *obj, int mid, int reason,
                       const mosquitto_property *props) {
  (void)m;
  (void)props;
  if (reason >= 0x80)
    fprintf(stderr, "test client: publish refused: 0x%02x\n", reason);
  op_finish(obj, mid, reason < 0x80);
}

static void on_subscribe(struct mosquitto *m, void *obj, int mid, int n,
                         const int *granted, const mosquitto_property *props) {
  (void)m;
  (void)props;
  /* SUBACK reason codes >= 0x80 are refusals. */
  op_finish(obj, mid, n > 0 && granted[0] < 0x80);
}

/* Starts waiting for an operation; the lock is held until op_wait, so that
 * its completion (on the network thread) cannot come before op_mid is
 * known. */
static void op_begin(ceb_mqtt_client *c) {
  pthread_mutex_lock(&c->lock);
  c->op_done = 0;
  c->op_ok = 0;
  c->op_mid = 0;
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
  while (!c->op_done)
    if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) != 0) break;
  int ok = c->op_done && c->op_ok;
  pthread_mutex_unlock(&c->lock);
  return ok ? 0 : -1;
}

static int op_fail(ceb_mqtt_client *c) {
  pthread_mutex_unlock(&c->lock);
  return -1;
}

ceb_mqtt_client *ceb_mqtt_client_new(const char *url, const char *client_id,
                                     int version) {
  char host[64];
  int port = 0;
  if (sscanf(url, "tcp://%63[^:]:%d", host, &port) != 2) return NULL;
  pthread_once(&lib_once, lib_init);
  ceb_mqtt_client *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->version = version;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  c->m = mosquitto_new(client_id, true, c);
  if (!c->m || mosquitto_int_option(c->m, MOSQ_OPT_PROTOCOL_VERSION,
                                    version == 5 ? MQTT_PROTOCOL_V5
                                                 : MQTT_PROTOCOL_V311) !=
                   MOSQ_ERR_SUCCESS) {
    ceb_mqtt_client_free(c);
    return NULL;
  }
  mosquitto_connect_v5_callback_set(c->m, on_connect);
  mosquitto_publish_v5_callback_set(c->m, on_publish);
  mosquitto_subscribe_v5_callback_set(c->m, on_subscribe);
  mosquitto_message_v5_callback_set(c->m, on_message);
  op_begin(c);
  int rc = mosquitto_connect_bind_v5(c->m, host, port, 30, NULL, NULL);
  if (rc != MOSQ_ERR_SUCCESS || mosquitto_loop_start(c->m) != MOSQ_ERR_SUCCESS)
    op_fail(c);
  else
    rc = op_wait(c, 10000);
  if (rc != 0) {
    fprintf(stderr, "test client: cannot connect to %s\n", url);
    ceb_mqtt_client_free(c);
    return NULL;
  }
  return c;
}

void ceb_mqtt_client_free(ceb_mqtt_client *c) {
  if (!c) return;
  if (c->m) {
    mosquitto_disconnect_v5(c->m, 0, NULL);
    mosquitto_loop_stop(c->m, false);
    mosquitto_destroy(c->m);
  }
  for (size_t i = 0; i < c->nmsgs; i++)
    msg_free(c->msgs[i]);
  free(c->msgs);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  free(c);
}

int ceb_mqtt_subscribe(ceb_mqtt_client *c, const char *filter, int qos) {
  op_begin(c);
  if (mosquitto_subscribe_v5(c->m, &c->op_mid, filter, qos, 0, NULL) !=
      MOSQ_ERR_SUCCESS)
    return op_fail(c);
  return op_wait(c, 10000);
}

int ceb_mqtt_publish(ceb_mqtt_client *c, const char *topic, const void *payload,
                     size_t len, int qos, const char *content_type,
                     const char *const *props) {
  mosquitto_property *pl = NULL;
  int rc = MOSQ_ERR_SUCCESS;
  if (c->version == 5) {
    if (content_type)
      rc = mosquitto_property_add_string(&pl, MQTT_PROP_CONTENT_TYPE,
                                         content_type);
    for (size_t i = 0;
         rc == MOSQ_ERR_SUCCESS && props && props[i] && props[i + 1]; i += 2)
      rc = mosquitto_property_add_string_pair(&pl, MQTT_PROP_USER_PROPERTY,
                                              props[i], props[i + 1]);
  }
  op_begin(c);
  if (rc == MOSQ_ERR_SUCCESS)
    rc = mosquitto_publish_v5(c->m, &c->op_mid, topic, (int)len, payload, qos,
                              false, pl);
  mosquitto_property_free_all(&pl);
  if (rc != MOSQ_ERR_SUCCESS) {
    fprintf(stderr, "test client: publish not sent: %s\n",
            mosquitto_strerror(rc));
    return op_fail(c);
  }
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
