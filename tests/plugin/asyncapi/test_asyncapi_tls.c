/* The asyncapi plugin's fetches follow the TLS policy: a url source whose
 * server offers only static RSA key exchange (no forward secrecy) or only
 * TLS 1.1 fails to sync, without a completed handshake; TLS 1.2 with ECDHE
 * syncs (tls.ca_file trusts the test certificate); tls.min_version = 1.3
 * refuses a TLS 1.2 server. The servers are OpenSSL at security level 0,
 * so each refusal is the plugin's. A registry that requires a client
 * certificate (mTLS) is synced with tls.client_cert / tls.client_key of a
 * certificate it trusts, and refused without one or with another. Through
 * the real ABI (dlopen). */
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aa_test_docs.h"
#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "ceb_test_tls.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"

static const ceb_plugin *g_plugin;
static ceb_fake_host *g_fake;
static char g_crt[512], g_key[512];

/* sync status of a url source against a server offering lo..hi and
 * ciphers; *handshakes gets the server's completed handshakes. */
static int sync_from(int lo, int hi, const char *ciphers, const char *k,
                     const char *v, int *handshakes) {
  ceb_tls_srv *srv =
      ceb_tls_srv_start(g_crt, g_key, lo, hi, ciphers, AA_DOC_V110);
  CHECK(srv != NULL);
  if (!srv) return -100;
  char url[160];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/enrol.json",
           ceb_tls_srv_port(srv));
  ceb_config *cfg = cebi_config_new("enrol");
  cebi_config_put(cfg, "plugin", "asyncapi", "test.conf", 1);
  cebi_config_put(cfg, "url", url, "test.conf", 2);
  cebi_config_put(cfg, "tls.ca_file", g_crt, "test.conf", 3);
  cebi_config_put(cfg, "interval", "0", "test.conf", 4);
  if (k) cebi_config_put(cfg, k, v, "test.conf", 5);
  cebi_config_set_spec(cfg, g_plugin->config_contracts,
                       ceb_spec_contracts_common);
  ceb_instance_info info = {sizeof info, "enrol", CEB_ROLE_CONTRACTS, NULL};
  void *st = NULL;
  int rc = g_plugin->init(&g_fake->host, &g_fake->inst, &info, cfg, &st);
  CHECK_INT(rc, CEB_OK);
  if (rc == CEB_OK) {
    rc = g_plugin->sync(st, NULL);
    g_plugin->destroy(st);
  }
  cebi_config_free(cfg);
  *handshakes = ceb_tls_srv_handshakes(srv);
  ceb_tls_srv_stop(srv);
  return rc;
}

/* sync status of a url source against a TLS 1.2/1.3 server requiring a
 * client certificate from client_ca; cert/key the client's (NULL: none).
 * *requests gets the requests the server answered. */
static int sync_mtls(const char *client_ca, const char *cert, const char *key,
                     int *requests) {
  ceb_tls_srv *srv = ceb_tls_srv_start(g_crt, g_key, TLS1_2_VERSION,
                                       TLS1_3_VERSION, NULL, AA_DOC_V110);
  CHECK(srv != NULL);
  if (!srv) return -100;
  CHECK_INT(ceb_tls_srv_require_client(srv, client_ca), 0);
  char url[160];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/enrol.json",
           ceb_tls_srv_port(srv));
  ceb_config *cfg = cebi_config_new("enrol");
  cebi_config_put(cfg, "plugin", "asyncapi", "test.conf", 1);
  cebi_config_put(cfg, "url", url, "test.conf", 2);
  cebi_config_put(cfg, "tls.ca_file", g_crt, "test.conf", 3);
  cebi_config_put(cfg, "interval", "0", "test.conf", 4);
  if (cert) cebi_config_put(cfg, "tls.client_cert", cert, "test.conf", 5);
  if (key) cebi_config_put(cfg, "tls.client_key", key, "test.conf", 6);
  cebi_config_set_spec(cfg, g_plugin->config_contracts,
                       ceb_spec_contracts_common);
  ceb_instance_info info = {sizeof info, "enrol", CEB_ROLE_CONTRACTS, NULL};
  void *st = NULL;
  int rc = g_plugin->init(&g_fake->host, &g_fake->inst, &info, cfg, &st);
  CHECK_INT(rc, CEB_OK);
  if (rc == CEB_OK) {
    rc = g_plugin->sync(st, NULL);
    g_plugin->destroy(st);
  }
  cebi_config_free(cfg);
  *requests = ceb_tls_srv_requests(srv);
  ceb_tls_srv_stop(srv);
  return rc;
}

static void test_mtls(const char *dir) {
  char cdir[512], sdir[512], ccrt[600], ckey[600], scrt[600], skey[600];
  snprintf(cdir, sizeof cdir, "%s/client", dir);
  snprintf(sdir, sizeof sdir, "%s/stranger", dir);
  CHECK(mkdir(cdir, 0700) == 0 && mkdir(sdir, 0700) == 0);
  CHECK_INT(ceb_tls_rsa_cert(cdir), 0);
  CHECK_INT(ceb_tls_rsa_cert(sdir), 0);
  snprintf(ccrt, sizeof ccrt, "%s/rsa.crt", cdir);
  snprintf(ckey, sizeof ckey, "%s/rsa.key", cdir);
  snprintf(scrt, sizeof scrt, "%s/rsa.crt", sdir);
  snprintf(skey, sizeof skey, "%s/rsa.key", sdir);
  int req = -1;
  CHECK_INT(sync_mtls(ccrt, NULL, NULL, &req), CEB_EIO);
  CHECK_INT(req, 0);
  CHECK_INT(sync_mtls(ccrt, scrt, skey, &req), CEB_EIO);
  CHECK_INT(req, 0);
  CHECK_INT(sync_mtls(ccrt, ccrt, ckey, &req), CEB_OK);
  CHECK_INT(req, 1);
}

int main(void) {
  void *so = dlopen(CEB_PLUGIN_DIR "/asyncapi.so", RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(so != NULL, "dlopen: %s", dlerror());
  if (!so) return ceb_test_done("plugin_asyncapi_tls");
  ceb_plugin_query_fn q = (ceb_plugin_query_fn)dlsym(so, "ceb_plugin_query");
  g_plugin = q ? q(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  CHECK(g_plugin && g_plugin->sync);
  if (!g_plugin) return ceb_test_done("plugin_asyncapi_tls");
  g_fake = ceb_fake_host_new("enrol", CEB_ROLE_CONTRACTS);
  char *dir = ceb_test_tmpdir("asyncapi_tls");
  CHECK_INT(ceb_tls_rsa_cert(dir), 0);
  snprintf(g_crt, sizeof g_crt, "%s/rsa.crt", dir);
  snprintf(g_key, sizeof g_key, "%s/rsa.key", dir);
  int hs = -1;
  CHECK_INT(sync_from(TLS1_2_VERSION, TLS1_2_VERSION,
                      "ECDHE-RSA-AES128-GCM-SHA256", NULL, NULL, &hs),
            CEB_OK);
  CHECK_INT(hs, 1);
  CHECK_INT(sync_from(TLS1_2_VERSION, TLS1_2_VERSION,
                      "AES128-GCM-SHA256:AES128-SHA", NULL, NULL, &hs),
            CEB_EIO);
  CHECK_INT(hs, 0);
  CHECK_INT(sync_from(TLS1_1_VERSION, TLS1_1_VERSION, "DEFAULT", "tls.ciphers",
                      "DEFAULT@SECLEVEL=0", &hs),
            CEB_EIO);
  CHECK_INT(hs, 0);
  CHECK_INT(sync_from(TLS1_2_VERSION, TLS1_2_VERSION,
                      "ECDHE-RSA-AES128-GCM-SHA256", "tls.min_version", "1.3",
                      &hs),
            CEB_EIO);
  CHECK_INT(hs, 0);
  test_mtls(dir);
  ceb_fake_host_free(g_fake);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("plugin_asyncapi_tls");
}
