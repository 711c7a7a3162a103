/* TLS and authentication against a real mosquitto:
 * - TLS listener with a test CA: the source (TLS in the ack gate) receives
 *   and the sink (TLS in its publisher) is acknowledged; a wrong CA never
 *   connects.
 * - Mutual TLS: a broker requiring client certificates admits both roles
 *   with tls.client_cert / tls.client_key, and a sink without one never.
 * - Password file: wrong credentials are refused (logged with the reason
 *   code), right ones connect.
 * - ACL: a publish the broker refuses with PUBACK 0x87 settles REJECT. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

extern char **environ;

static int run(const char *const argv[]) {
  pid_t pid;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 01, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 01, 0);
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  int st;
  if (rc != 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* A CA and a server certificate for 127.0.0.1 signed by it, in dir; a
 * second, unrelated CA as other-ca.pem; a client certificate signed by the
 * first CA as client.pem / client.key. */
static int make_certs(const char *dir) {
  char ca[512], cakey[512], key[512], csr[512], crt[512], ext[512];
  char other[512], otherkey[512];
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(cakey, sizeof cakey, "%s/ca.key", dir);
  snprintf(key, sizeof key, "%s/server.key", dir);
  snprintf(csr, sizeof csr, "%s/server.csr", dir);
  snprintf(crt, sizeof crt, "%s/server.pem", dir);
  snprintf(ext, sizeof ext, "%s/ext.cnf", dir);
  snprintf(other, sizeof other, "%s/other-ca.pem", dir);
  snprintf(otherkey, sizeof otherkey, "%s/other-ca.key", dir);
  FILE *f = fopen(ext, "w");
  if (!f) return -1;
  fputs("subjectAltName=IP:127.0.0.1,DNS:localhost\n", f);
  fclose(f);
  const char *o = "/usr/bin/openssl";
  const char *a1[] = {o,
                      "req",
                      "-x509",
                      "-newkey",
                      "ec",
                      "-pkeyopt",
                      "ec_paramgen_curve:prime256v1",
                      "-nodes",
                      "-keyout",
                      cakey,
                      "-out",
                      ca,
                      "-days",
                      "2",
                      "-subj",
                      "/CN=cebridge test CA",
                      NULL};
  const char *a2[] = {o,
                      "req",
                      "-new",
                      "-newkey",
                      "ec",
                      "-pkeyopt",
                      "ec_paramgen_curve:prime256v1",
                      "-nodes",
                      "-keyout",
                      key,
                      "-out",
                      csr,
                      "-subj",
                      "/CN=127.0.0.1",
                      NULL};
  const char *a3[] = {o,      "x509", "-req",   "-in", csr,
                      "-CA",  ca,     "-CAkey", cakey, "-CAcreateserial",
                      "-out", crt,    "-days",  "2",   "-extfile",
                      ext,    NULL};
  const char *a4[] = {o,
                      "req",
                      "-x509",
                      "-newkey",
                      "ec",
                      "-pkeyopt",
                      "ec_paramgen_curve:prime256v1",
                      "-nodes",
                      "-keyout",
                      otherkey,
                      "-out",
                      other,
                      "-days",
                      "2",
                      "-subj",
                      "/CN=other CA",
                      NULL};
  char ckey[512], ccsr[512], ccrt[512];
  snprintf(ckey, sizeof ckey, "%s/client.key", dir);
  snprintf(ccsr, sizeof ccsr, "%s/client.csr", dir);
  snprintf(ccrt, sizeof ccrt, "%s/client.pem", dir);
  const char *a5[] = {o,
                      "req",
                      "-new",
                      "-newkey",
                      "ec",
                      "-pkeyopt",
                      "ec_paramgen_curve:prime256v1",
                      "-nodes",
                      "-keyout",
                      ckey,
                      "-out",
                      ccsr,
                      "-subj",
                      "/CN=cebridge",
                      NULL};
  const char *a6[] = {o,      "x509", "-req",   "-in", ccsr,
                      "-CA",  ca,     "-CAkey", cakey, "-CAcreateserial",
                      "-out", ccrt,   "-days",  "2",   NULL};
  return run(a1) || run(a2) || run(a3) || run(a4) || run(a5) || run(a6) ? -1
                                                                        : 0;
}

static void tls(const char *dir) {
  char extra[2048], ca[512], other[512];
  snprintf(extra, sizeof extra,
           "cafile %s/ca.pem\ncertfile %s/server.pem\nkeyfile %s/server.key\n",
           dir, dir, dir);
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(other, sizeof other, "%s/other-ca.pem", dir);
  ceb_mosq_opts o = {.extra = extra};
  ceb_mosq *b = ceb_mosq_start(&o);
  CHECK(b != NULL);
  if (!b) return;
  /* Source over TLS (the gate), sink over TLS (its publisher). */
  const char *skv[] = {"broker",      b->addr,  "client_id",
                       "tls-src",     "topics", "tls/#",
                       "tls.ca_file", ca,       NULL};
  const char *kkv[] = {"broker",      b->addr, "topic", "tls/${type}",
                       "tls.ca_file", ca,      NULL};
  mtest_inst src, sink;
  CHECK_INT(mtest_init(&src, CEB_ROLE_SOURCE, skv), CEB_OK);
  CHECK_INT(mtest_start(&src), CEB_OK);
  CHECK(mtest_wait_subscribed(&src));
  CHECK_INT(mtest_init(&sink, CEB_ROLE_SINK, kkv), CEB_OK);
  CHECK_INT(mtest_start(&sink), CEB_OK);
  CHECK(mtest_wait_connected(&sink, 10000));
  /* The sink's publish goes round through the broker into the source. */
  ceb_event *ev = mtest_event("tls-1", "nl.edu.tls");
  ceb_delivery *d = ceb_fake_delivery_new(sink.fake, ev, "r", NULL, 1);
  CHECK_INT(sink.p->deliver(sink.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(sink.fake, 1, 10000));
  ceb_fake_settle s;
  CHECK(ceb_fake_settle_get(sink.fake, 0, &s) && s.info.outcome == CEB_ACK);
  CHECK(ceb_fake_wait_events(src.fake, 1, 10000));
  ceb_event *got = ceb_fake_event(src.fake, 0);
  CHECK(mtest_event_equal(ev, got));
  ceb_event_unref(got);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  mtest_free(&src);
  mtest_free(&sink);

  /* A broker certificate from another CA: never connected. */
  const char *bad[] = {"broker",      b->addr,  "client_id",
                       "tls-bad",     "topics", "tls/#",
                       "tls.ca_file", other,    NULL};
  CHECK_INT(mtest_init(&src, CEB_ROLE_SOURCE, bad), CEB_OK);
  CHECK_INT(mtest_start(&src), CEB_OK);
  CHECK(!mtest_wait_connected(&src, 1500));
  mtest_free(&src);
  const char *badk[] = {"broker",      b->addr, "topic", "x",
                        "tls.ca_file", other,   NULL};
  CHECK_INT(mtest_init(&sink, CEB_ROLE_SINK, badk), CEB_OK);
  CHECK_INT(mtest_start(&sink), CEB_OK);
  CHECK(!mtest_wait_connected(&sink, 1500));
  mtest_free(&sink);
  ceb_mosq_free(b);
}

/* A broker that requires a client certificate: without one neither role
 * connects; with tls.client_cert / tls.client_key both do (the source's
 * gate through mqtt_tls.c, the sink's publisher through libmosquitto). */
static void mutual_tls(const char *dir) {
  char extra[2048], ca[512], cert[512], key[512];
  snprintf(extra, sizeof extra,
           "cafile %s/ca.pem\ncertfile %s/server.pem\nkeyfile "
           "%s/server.key\nrequire_certificate true\n",
           dir, dir, dir);
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(cert, sizeof cert, "%s/client.pem", dir);
  snprintf(key, sizeof key, "%s/client.key", dir);
  ceb_mosq_opts o = {.extra = extra};
  ceb_mosq *b = ceb_mosq_start(&o);
  CHECK(b != NULL);
  if (!b) return;
  const char *anon[] = {"broker",      b->addr, "topic", "m/x",
                        "tls.ca_file", ca,      NULL};
  mtest_inst sink, src;
  CHECK_INT(mtest_init(&sink, CEB_ROLE_SINK, anon), CEB_OK);
  CHECK_INT(mtest_start(&sink), CEB_OK);
  CHECK(!mtest_wait_connected(&sink, 1500));
  mtest_free(&sink);

  const char *skv[] = {"broker",
                       b->addr,
                       "client_id",
                       "mtls-src",
                       "topics",
                       "m/#",
                       "tls.ca_file",
                       ca,
                       "tls.client_cert",
                       cert,
                       "tls.client_key",
                       key,
                       NULL};
  const char *kkv[] = {
      "broker", b->addr,           "topic", "m/${type}",      "tls.ca_file",
      ca,       "tls.client_cert", cert,    "tls.client_key", key,
      NULL};
  CHECK_INT(mtest_init(&src, CEB_ROLE_SOURCE, skv), CEB_OK);
  CHECK_INT(mtest_start(&src), CEB_OK);
  CHECK(mtest_wait_subscribed(&src));
  CHECK_INT(mtest_init(&sink, CEB_ROLE_SINK, kkv), CEB_OK);
  CHECK_INT(mtest_start(&sink), CEB_OK);
  CHECK(mtest_wait_connected(&sink, 10000));
  ceb_event *ev = mtest_event("mtls-1", "nl.edu.mtls");
  ceb_delivery *d = ceb_fake_delivery_new(sink.fake, ev, "r", NULL, 1);
  CHECK_INT(sink.p->deliver(sink.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(sink.fake, 1, 10000));
  ceb_fake_settle s;
  CHECK(ceb_fake_settle_get(sink.fake, 0, &s) && s.info.outcome == CEB_ACK);
  CHECK(ceb_fake_wait_events(src.fake, 1, 10000));
  ceb_event *got = ceb_fake_event(src.fake, 0);
  CHECK(mtest_event_equal(ev, got));
  ceb_event_unref(got);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  mtest_free(&src);
  mtest_free(&sink);
  ceb_mosq_free(b);
}

static void auth(void) {
  ceb_mosq_opts o = {.username = "bridge",
                     .password = "s3cret",
                     .acl = "user bridge\ntopic readwrite ok/#\n"};
  ceb_mosq *b = ceb_mosq_start(&o);
  CHECK(b != NULL);
  if (!b) return;
  const char *wrong[] = {"broker", b->addr,    "topic", "ok/x", "username",
                         "bridge", "password", "wrong", NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, wrong), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(!mtest_wait_connected(&t, 1500));
  mtest_free(&t);

  const char *right[] = {"broker",     b->addr,    "topic",
                         "${subject}", "username", "bridge",
                         "password",   "s3cret",   NULL};
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, right), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));
  ceb_event *ev = mtest_event("auth-1", "nl.edu.auth");
  ceb_event_set(ev, "subject", "ok/allowed");
  ceb_delivery *d = ceb_fake_delivery_new(t.fake, ev, "r", NULL, 1);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(t.fake, 1, 10000));
  ceb_fake_settle s;
  CHECK(ceb_fake_settle_get(t.fake, 0, &s) && s.info.outcome == CEB_ACK);
  ceb_fake_delivery_free(d);
  /* Outside the ACL: PUBACK 0x87 not authorized is permanent. */
  ceb_event_set(ev, "subject", "denied/x");
  d = ceb_fake_delivery_new(t.fake, ev, "r", NULL, 1);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(t.fake, 2, 10000));
  CHECK(ceb_fake_settle_get(t.fake, 1, &s));
  CHECK_INT(s.info.outcome, CEB_REJECT);
  CHECK_INT(s.info.status_code, 0x87);
  CHECK_STR(s.reason, "mqtt.0x87");
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  mtest_free(&t);
  ceb_mosq_free(b);
}

int main(void) {
  char *dir = ceb_test_tmpdir("mqtt-tls");
  CHECK(dir != NULL);
  if (dir && make_certs(dir) == 0) {
    tls(dir);
    mutual_tls(dir);
  } else
    CHECK_MSG(0, "cannot make test certificates");
  auth();
  if (dir) {
    const char *rm[] = {"/bin/rm", "-rf", dir, NULL};
    run(rm);
  }
  free(dir);
  return ceb_test_done("test_mqtt_tls_auth");
}
