/* The MQTT source (the ack gate's OpenSSL) and sink (libmosquitto) follow
 * the TLS policy against OpenSSL servers that offer only what each case
 * names, at security level 0 so that a refusal is the plugin's: a broker
 * address offering only static RSA key exchange (no forward secrecy), or
 * only TLS 1.1 even with tls.ciphers at security level 0, never completes a
 * handshake; with tls.min_version = 1.3 a TLS 1.2 server does not either;
 * TLS 1.2 with ECDHE does (the server then answers no MQTT, which is not
 * what is tested here). */
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "ceb_test_tls.h"
#include "mqtt_test_util.h"

static char g_crt[512], g_key[512];

typedef struct wait_arg {
  ceb_tls_srv *srv;
  int handshake; /* wait for a handshake, else for an attempt's end */
} wait_arg;

static int seen(void *arg) {
  wait_arg *w = arg;
  return w->handshake ? ceb_tls_srv_handshakes(w->srv) >= 1
                      : ceb_tls_srv_connections(w->srv) >= 1;
}

/* Completed handshakes of one instance (role) against a server offering
 * lo..hi and ciphers, extra key k = v; -1 when nothing connected. */
static int handshakes(uint32_t role, int lo, int hi, const char *ciphers,
                      const char *k, const char *v, int expect) {
  ceb_tls_srv *srv = ceb_tls_srv_start(g_crt, g_key, lo, hi, ciphers, "x");
  CHECK(srv != NULL);
  if (!srv) return -1;
  char broker[64];
  snprintf(broker, sizeof broker, "127.0.0.1:%d", ceb_tls_srv_port(srv));
  const char *src[] = {"broker",      broker,         "client_id",   "pol",
                       "topics",      "t/#",          "tls.ca_file", g_crt,
                       k ? k : "tls", k ? v : "true", NULL};
  const char *snk[] = {"broker",      broker,         "topic",
                       "t/x",         "tls.ca_file",  g_crt,
                       k ? k : "tls", k ? v : "true", NULL};
  mtest_inst t;
  int got = -1;
  int rc = mtest_init(&t, role, role == CEB_ROLE_SOURCE ? src : snk);
  CHECK_INT(rc, CEB_OK);
  if (rc == CEB_OK && mtest_start(&t) == CEB_OK) {
    wait_arg w = {srv, expect};
    if (ceb_test_wait(seen, &w, 20000)) got = ceb_tls_srv_handshakes(srv);
  }
  mtest_free(&t);
  ceb_tls_srv_stop(srv);
  return got >= 1 ? 1 : got;
}

static void policy(uint32_t role) {
  CHECK_INT(handshakes(role, TLS1_2_VERSION, TLS1_2_VERSION,
                       "ECDHE-RSA-AES128-GCM-SHA256", NULL, NULL, 1),
            1);
  CHECK_INT(handshakes(role, TLS1_2_VERSION, TLS1_2_VERSION,
                       "AES128-GCM-SHA256:AES128-SHA", NULL, NULL, 0),
            0);
  CHECK_INT(handshakes(role, TLS1_1_VERSION, TLS1_1_VERSION, "DEFAULT",
                       "tls.ciphers", "DEFAULT@SECLEVEL=0", 0),
            0);
  CHECK_INT(handshakes(role, TLS1_2_VERSION, TLS1_2_VERSION,
                       "ECDHE-RSA-AES128-GCM-SHA256", "tls.min_version", "1.3",
                       0),
            0);
}

int main(void) {
  char *dir = ceb_test_tmpdir("mqtt-tls-policy");
  CHECK_INT(ceb_tls_rsa_cert(dir), 0);
  snprintf(g_crt, sizeof g_crt, "%s/rsa.crt", dir);
  snprintf(g_key, sizeof g_key, "%s/rsa.key", dir);
  policy(CEB_ROLE_SOURCE);
  policy(CEB_ROLE_SINK);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("test_mqtt_tls_policy");
}
