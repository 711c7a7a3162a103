/* The pull queue's TLS listener: with tls.cert/tls.key it serves HTTPS
 * under the bridge's TLS policy (TLS 1.0 and 1.1 refused, static RSA
 * refused, TLS 1.2 with ECDHE and TLS 1.3 served, tls.min_version = 1.3
 * refuses TLS 1.2), probed with `openssl s_client` at security level 0 so
 * that each refusal is the listener's; with tls.client_ca a consumer
 * without a client certificate gets 403 tls.client_certificate and one
 * with it gets its batch. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "ceb_test_tls.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"
#include "loader/ceb_loader.h"

#define OLD "-cipher DEFAULT@SECLEVEL=0"

typedef struct inst {
  ceb_fake_host *fake;
  ceb_config *cfg;
  void *state;
  int port;
} inst;

static const ceb_plugin *g_desc;
static char g_pf[512], g_data[512];

static int inst_open(inst *in, const char *const *kv) {
  memset(in, 0, sizeof *in);
  in->fake = ceb_fake_host_new("outbox", CEB_ROLE_SINK);
  char store[600];
  snprintf(store, sizeof store, "%s/store.db", g_data);
  CHECK_INT(ceb_fake_host_queue(in->fake, store), CEB_OK);
  in->cfg = cebi_config_new("outbox");
  for (size_t i = 0; kv[i]; i += 2)
    cebi_config_put(in->cfg, kv[i], kv[i + 1], "test.conf", (int)i + 1);
  cebi_config_set_spec(in->cfg, g_desc->config_sink, ceb_spec_sink_common);
  ceb_instance_info info = {sizeof info, "outbox", CEB_ROLE_SINK, g_data};
  int st = g_desc->init(&in->fake->host, &in->fake->inst, &info, in->cfg,
                        &in->state);
  if (st != CEB_OK) return st;
  remove(g_pf);
  st = g_desc->start(in->state);
  if (st != CEB_OK) return st;
  in->port = ceb_test_wait_port_file(g_pf, 5000);
  return in->port > 0 ? CEB_OK : CEB_EIO;
}

static void inst_close(inst *in) {
  if (in->state) {
    g_desc->drain(in->state, 0);
    g_desc->destroy(in->state);
  }
  cebi_config_free(in->cfg);
  ceb_fake_host_free(in->fake);
}

static size_t sink_body(char *p, size_t sz, size_t n, void *arg) {
  (void)p;
  (void)arg;
  return sz * n;
}

/* GET of the queue over HTTPS: the status, 0 on a transport error. */
static long get(int port, const char *ca, const char *cert, const char *key) {
  char url[128];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/v1/pull/outbox?max=1", port);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, ca);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_body);
  if (cert) curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
  if (key) curl_easy_setopt(c, CURLOPT_SSLKEY, key);
  long code = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(c);
  return code;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *tmp = ceb_test_tmpdir("pull_tls");
  ceb_loaded_plugin *lp;
  char err[512];
  CHECK_INT(
      ceb_loaded_open(CEB_PLUGIN_DIR "/pull.so", "pull", &lp, err, sizeof err),
      CEB_OK);
  if (!lp) {
    fprintf(stderr, "%s\n", err);
    return ceb_test_done("plugin_pull_tls");
  }
  g_desc = lp->desc;
  char srv[512], cli[512];
  snprintf(g_pf, sizeof g_pf, "%s/port", tmp);
  snprintf(g_data, sizeof g_data, "%s/data", tmp);
  snprintf(srv, sizeof srv, "%s/server", tmp);
  snprintf(cli, sizeof cli, "%s/client", tmp);
  CHECK_INT(mkdir(g_data, 0700), 0);
  CHECK_INT(mkdir(srv, 0700), 0);
  CHECK_INT(mkdir(cli, 0700), 0);
  CHECK_INT(ceb_tls_rsa_cert(srv), 0);
  CHECK_INT(ceb_tls_rsa_cert(cli), 0);
  char crt[600], key[600], ccrt[600], ckey[600];
  snprintf(crt, sizeof crt, "%s/rsa.crt", srv);
  snprintf(key, sizeof key, "%s/rsa.key", srv);
  snprintf(ccrt, sizeof ccrt, "%s/rsa.crt", cli);
  snprintf(ckey, sizeof ckey, "%s/rsa.key", cli);

  inst in;
  const char *kv[] = {"listen",    "127.0.0.1:0", "auth",     "none",
                      "port_file", g_pf,          "tls.cert", crt,
                      "tls.key",   key,           NULL};
  CHECK_INT(inst_open(&in, kv), CEB_OK);
  if (in.port > 0) {
    CHECK_INT(ceb_tls_probe(in.port, "-tls1 " OLD, 0), 0);
    CHECK_INT(ceb_tls_probe(in.port, "-tls1_1 " OLD, 0), 0);
    CHECK_INT(
        ceb_tls_probe(in.port, "-tls1_2 -cipher AES128-SHA@SECLEVEL=0", 0), 0);
    CHECK_INT(ceb_tls_probe(in.port,
                            "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", 1),
              1);
    CHECK_INT(ceb_tls_probe(in.port, "-tls1_3", 1), 1);
    CHECK_INT(get(in.port, crt, NULL, NULL), 200);
  }
  inst_close(&in);

  const char *kv13[] = {
      "listen",   "127.0.0.1:0", "auth",    "none", "port_file",       g_pf,
      "tls.cert", crt,           "tls.key", key,    "tls.min_version", "1.3",
      NULL};
  CHECK_INT(inst_open(&in, kv13), CEB_OK);
  if (in.port > 0) {
    CHECK_INT(ceb_tls_probe(in.port,
                            "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", 0),
              0);
    CHECK_INT(ceb_tls_probe(in.port, "-tls1_3", 1), 1);
  }
  inst_close(&in);

  const char *kvm[] = {"listen",    "127.0.0.1:0", "auth",          "none",
                       "port_file", g_pf,          "tls.cert",      crt,
                       "tls.key",   key,           "tls.client_ca", ccrt,
                       NULL};
  CHECK_INT(inst_open(&in, kvm), CEB_OK);
  if (in.port > 0) {
    CHECK_INT(get(in.port, crt, NULL, NULL), 403);
    CHECK_INT(get(in.port, crt, ccrt, ckey), 200);
  }
  inst_close(&in);

  /* a key without a certificate, or a bad priority: config errors */
  const char *kv_half[] = {"listen",  "127.0.0.1:0", "auth", "none",
                           "tls.key", key,           NULL};
  CHECK_INT(inst_open(&in, kv_half), CEB_ECONFIG);
  inst_close(&in);
  const char *kv_prio[] = {"listen",       "127.0.0.1:0",   "auth", "none",
                           "tls.priority", "NORMAL:+BOGUS", NULL};
  CHECK_INT(inst_open(&in, kv_prio), CEB_ECONFIG);
  inst_close(&in);

  ceb_loaded_free(lp);
  ceb_test_rmtree(tmp);
  free(tmp);
  curl_global_cleanup();
  return ceb_test_done("plugin_pull_tls");
}
