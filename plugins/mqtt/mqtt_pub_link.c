/* The client's link on libmosquitto: one client per session (nothing of
 * an ended session is resent by the library on the next; the source's
 * broker session persists, the sink's starts clean), its options and TLS,
 * one connection attempt with its logging and backoff, the client's
 * callbacks and the subscription. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt_pub_internal.h"

#define GAUGE "mqtt_connected"
#define SYSTEM_CA_DIR "/etc/ssl/certs" /* the system store, as OpenSSL's */

int64_t mqtt_pub_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mqtt_pub_gauge(mqtt_pub *p, int up) {
  p->host->metric(p->inst, CEB_METRIC_GAUGE, GAUGE, NULL, up ? 1.0 : 0.0);
}

static const char *refusal_string(const mqtt_pub *p, int reason) {
  return p->conf->version == 5 ? mosquitto_reason_string(reason)
                               : mosquitto_connack_string(reason);
}

static void on_connect(struct mosquitto *m, void *arg, int rc, int flags,
                       const mosquitto_property *props) {
  (void)m;
  mqtt_pub *p = arg;
  if (rc != 0) { /* the session loop ends the attempt */
    p->refused = rc;
    return;
  }
  uint16_t recv_max = 0;
  int window = 65535;
  if (mosquitto_property_read_int16(props, MQTT_PROP_RECEIVE_MAXIMUM, &recv_max,
                                    false) &&
      recv_max > 0)
    window = recv_max;
  p->connecting = 0;
  p->backoff_ms = 0;
  pthread_mutex_lock(&p->lock);
  p->window = window;
  p->connected = 1;
  p->ever_connected = 1;
  unsigned long n = ++p->connects;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  mqtt_pub_gauge(p, 1);
  if (p->opts.resume && (flags & 1))
    CEB_LOG(p->host, p->inst, CEB_LOG_DEBUG, "broker resumed the session");
  CEB_LOG(p->host, p->inst, CEB_LOG_INFO,
          "connected to %s:%d as \"%s\" (MQTT %s, connect, connection #%lu)",
          p->conf->host, p->conf->port, p->client_id,
          p->conf->version == 5 ? "5" : "3.1.1", n);
  if (p->ops.connected) p->ops.connected(p->arg);
}

static void on_disconnect(struct mosquitto *m, void *arg, int rc,
                          const mosquitto_property *props) {
  (void)m;
  (void)props;
  mqtt_pub *p = arg;
  /* rc is the broker's MQTT 5 DISCONNECT reason when it sent one */
  if (rc >= 0x80 && p->conf->version == 5)
    CEB_LOG(p->host, p->inst, CEB_LOG_WARN,
            "broker %s:%d disconnected us: reason 0x%02x (%s)", p->conf->host,
            p->conf->port, (unsigned)rc, mosquitto_reason_string(rc));
  p->gone = rc ? rc : -1;
}

static void on_publish(struct mosquitto *m, void *arg, int mid, int reason,
                       const mosquitto_property *props) {
  (void)m;
  (void)props;
  mqtt_pub_complete(arg, mid, reason < 0x80, reason,
                    reason < 0x80 ? NULL : "refused by the broker");
}

static void on_message(struct mosquitto *m, void *arg,
                       const struct mosquitto_message *msg,
                       const mosquitto_property *props) {
  (void)m;
  mqtt_pub *p = arg;
  if (p->ops.message) p->ops.message(p->arg, msg, props);
}

static void on_subscribe(struct mosquitto *m, void *arg, int mid, int count,
                         const int *codes, const mosquitto_property *props) {
  (void)m;
  (void)mid;
  (void)props;
  mqtt_pub *p = arg;
  if (p->ops.subscribed) p->ops.subscribed(p->arg, count, codes);
}

int mqtt_pub_subscribe(mqtt_pub *p, size_t n, const char *const *filters,
                       int qos) {
  if (!p->mosq || n > INT_MAX) return MOSQ_ERR_NO_CONN;
  return mosquitto_subscribe_multiple(
      p->mosq, NULL, (int)n, (char *const *const)filters, qos, 0, NULL);
}

static struct mosquitto *client_fail(mqtt_pub *p, struct mosquitto *m,
                                     const char *what, int rc) {
  CEB_LOG(p->host, p->inst, CEB_LOG_WARN, "MQTT client for %s:%d: %s: %s",
          p->conf->host, p->conf->port, what,
          rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc));
  mosquitto_destroy(m);
  return NULL;
}

struct mosquitto *mqtt_pub_client_new(mqtt_pub *p) {
  const mqtt_conf *c = p->conf;
  struct mosquitto *m = mosquitto_new(p->client_id, !p->opts.resume, p);
  if (!m)
    return client_fail(p, NULL, "cannot create the client", MOSQ_ERR_NOMEM);
  int rc = mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION,
                                c->version == 5 ? MQTT_PROTOCOL_V5
                                                : MQTT_PROTOCOL_V311);
  /* Our own window limits what is in flight; libmosquitto's default of 20
   * would queue the rest once more (MQTT 5: the broker's Receive Maximum
   * replaces it). */
  if (rc == MOSQ_ERR_SUCCESS)
    rc = mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, 65535);
  if (rc == MOSQ_ERR_SUCCESS)
    rc = mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
  if (rc != MOSQ_ERR_SUCCESS) return client_fail(p, m, "options", rc);
  if (c->username && (rc = mosquitto_username_pw_set(
                          m, c->username, c->password)) != MOSQ_ERR_SUCCESS)
    return client_fail(p, m, "user name or password", rc);
  if (c->tls && !p->opts.plain) {
    rc = mosquitto_tls_set(m, c->ca_file, c->ca_file ? NULL : SYSTEM_CA_DIR,
                           c->client_cert, c->client_key, NULL);
    if (rc != MOSQ_ERR_SUCCESS)
      return client_fail(p, m,
                         "cannot use tls.ca_file / tls.client_cert / "
                         "tls.client_key",
                         rc);
    /* libmosquitto turns the version into SSL_OP_NO_* options (TLS 1.0
     * and 1.1 always off) and the cipher list into SSL_CTX_set_cipher_list */
    rc = mosquitto_tls_opts_set(
        m, c->tls_verify ? 1 : 0,
        c->tls_min_version >= 13 ? "tlsv1.3" : "tlsv1.2", c->tls_ciphers);
    if (rc == MOSQ_ERR_SUCCESS)
      rc = mosquitto_tls_insecure_set(m, !c->tls_verify);
    if (rc != MOSQ_ERR_SUCCESS) return client_fail(p, m, "TLS options", rc);
  }
  mosquitto_connect_v5_callback_set(m, on_connect);
  mosquitto_disconnect_v5_callback_set(m, on_disconnect);
  mosquitto_publish_v5_callback_set(m, on_publish);
  mosquitto_message_v5_callback_set(m, on_message);
  mosquitto_subscribe_v5_callback_set(m, on_subscribe);
  return m;
}

void mqtt_pub_connect_failed(mqtt_pub *p, const char *why) {
  if (p->mosq) mosquitto_destroy(p->mosq);
  p->mosq = NULL;
  p->connecting = 0;
  int64_t min = (int64_t)p->conf->reconnect_min_s * 1000;
  int64_t max = (int64_t)p->conf->reconnect_max_s * 1000;
  p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : min;
  if (p->backoff_ms > max) p->backoff_ms = max;
  p->next_attempt_ms = mqtt_pub_now_ms() + p->backoff_ms;
  pthread_mutex_lock(&p->lock);
  int stop = p->stopping;
  pthread_mutex_unlock(&p->lock);
  if (stop) return;
  if (p->refused)
    CEB_LOG(p->host, p->inst, CEB_LOG_WARN,
            "connect to %s:%d refused: reason 0x%02x (%s); retrying in "
            "%lld ms",
            p->conf->host, p->conf->port, (unsigned)p->refused,
            refusal_string(p, p->refused), (long long)p->backoff_ms);
  else
    CEB_LOG(p->host, p->inst, CEB_LOG_WARN,
            "connect to %s:%d failed: %s; retrying in %lld ms", p->conf->host,
            p->conf->port, why, (long long)p->backoff_ms);
}

void mqtt_pub_connect_once(mqtt_pub *p) {
  p->refused = p->gone = 0;
  p->mosq = mqtt_pub_client_new(p);
  if (!p->mosq) {
    mqtt_pub_connect_failed(p, "cannot create the client");
    return;
  }
  p->connecting = 1;
  p->connect_deadline =
      mqtt_pub_now_ms() + (int64_t)p->conf->connect_timeout_s * 1000;
  /* TCP (and the TLS handshake) here; the CONNACK through the loop */
  /* MQTT 5 CONNECT properties: how long the broker keeps a resumed
   * session, and our Receive Maximum (how many unacknowledged messages it
   * may send: with the gate holding acknowledgements, the source's
   * backlog bound) */
  mosquitto_property *props = NULL;
  int rc = MOSQ_ERR_SUCCESS;
  if (p->conf->version == 5 && p->opts.resume)
    rc = mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL,
                                      (uint32_t)p->opts.session_expiry_s);
  if (rc == MOSQ_ERR_SUCCESS && p->conf->version == 5 &&
      p->opts.receive_max > 0)
    rc = mosquitto_property_add_int16(&props, MQTT_PROP_RECEIVE_MAXIMUM,
                                      (uint16_t)p->opts.receive_max);
  if (rc == MOSQ_ERR_SUCCESS)
    rc = mosquitto_connect_bind_v5(p->mosq, p->opts.host, p->opts.port,
                                   p->keepalive_s, NULL, props);
  mosquitto_property_free_all(&props);
  if (rc == MOSQ_ERR_SUCCESS) return;
  char why[160];
  snprintf(why, sizeof why, "%s",
           rc == MOSQ_ERR_ERRNO ? strerror(errno)
           : rc == MOSQ_ERR_TLS ? "TLS handshake failed"
                                : mosquitto_strerror(rc));
  mqtt_pub_connect_failed(p, why);
}
