/* Registry authentication of the asyncapi fetcher, through the real ABI
 * (dlopen) against the local registry stub:
 *  - bearer_token: a registry that requires it refuses a sync without it or
 *    with a wrong one (401), and syncs with it;
 *  - OAuth2 client credentials (the webhook sink's client): a token is
 *    fetched from the stub's token endpoint with HTTP Basic credentials and
 *    reused by the next sync; wrong credentials are refused by the endpoint
 *    and nothing is fetched; a revoked token gets a 401, a new token and a
 *    successful retry;
 *  - the token goes only to the source's origin: a $ref to another server
 *    is fetched without it;
 *  - config refusals. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "aa_registry_stub.h"
#include "aa_test_docs.h"
#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"

#define PREFIX "/apis/registry/v3"

static const ceb_plugin *g_plugin;
static ceb_fake_host *g_fake;

static ceb_config *make_cfg(const char *const *kv) {
  ceb_config *cfg = cebi_config_new("enrol");
  cebi_config_put(cfg, "plugin", "asyncapi", "test.conf", 1);
  for (int i = 0; kv[i]; i += 2)
    cebi_config_put(cfg, kv[i], kv[i + 1], "test.conf", i + 2);
  cebi_config_set_spec(cfg, g_plugin->config_contracts,
                       ceb_spec_contracts_common);
  return cfg;
}

/* init's status; when CEB_OK, the status of one sync. */
static int init_rc;
static int sync_with(const char *const *kv) {
  ceb_config *cfg = make_cfg(kv);
  ceb_instance_info info = {sizeof info, "enrol", CEB_ROLE_CONTRACTS, NULL};
  void *st = NULL;
  init_rc = g_plugin->init(&g_fake->host, &g_fake->inst, &info, cfg, &st);
  int rc = init_rc;
  if (rc == CEB_OK) {
    rc = g_plugin->sync(st, NULL);
    g_plugin->destroy(st);
  }
  cebi_config_free(cfg);
  return rc;
}

static void test_bearer(aa_stub *reg, const char *url) {
  aa_stub_require_token(reg, "registry-token-1");
  const char *none[] = {"url", url, "allow_insecure_http", "true", "interval",
                        "0",   NULL};
  size_t refused = aa_stub_count(reg, 401);
  CHECK_INT(sync_with(none), CEB_EIO);
  CHECK(aa_stub_count(reg, 401) == refused + 1);
  const char *wrong[] = {
      "url",      url, "allow_insecure_http", "true",
      "interval", "0", "bearer_token",        "registry-token-2",
      NULL};
  CHECK_INT(sync_with(wrong), CEB_EIO);
  CHECK(aa_stub_count(reg, 401) == refused + 2);
  const char *right[] = {
      "url",      url, "allow_insecure_http", "true",
      "interval", "0", "bearer_token",        "registry-token-1",
      NULL};
  size_t ok = aa_stub_count(reg, 200);
  CHECK_INT(sync_with(right), CEB_OK);
  CHECK(aa_stub_count(reg, 200) == ok + 1);
  CHECK(aa_stub_count(reg, 401) == refused + 2);
  aa_stub_require_token(reg, NULL);
}

static void test_oauth(aa_stub *reg, const char *base, const char *url) {
  aa_stub_set_client(reg, "bridge", "client-secret-1");
  char token_url[200];
  snprintf(token_url, sizeof token_url, "%s/token", base);
  const char *wrong[] = {"url",
                         url,
                         "allow_insecure_http",
                         "true",
                         "interval",
                         "0",
                         "oauth2.token_url",
                         token_url,
                         "oauth2.client_id",
                         "bridge",
                         "oauth2.client_secret",
                         "client-secret-2",
                         NULL};
  size_t ok = aa_stub_count(reg, 200);
  CHECK_INT(sync_with(wrong), CEB_EIO);
  CHECK_INT(aa_stub_tokens_refused(reg), 1);
  CHECK_INT(aa_stub_tokens_issued(reg), 0);
  CHECK(aa_stub_count(reg, 200) == ok); /* nothing fetched without a token */

  /* One instance, two syncs: one token, reused. */
  const char *right[] = {"url",
                         url,
                         "allow_insecure_http",
                         "true",
                         "interval",
                         "0",
                         "oauth2.token_url",
                         token_url,
                         "oauth2.client_id",
                         "bridge",
                         "oauth2.client_secret",
                         "client-secret-1",
                         NULL};
  ceb_config *cfg = make_cfg(right);
  ceb_instance_info info = {sizeof info, "enrol", CEB_ROLE_CONTRACTS, NULL};
  void *st = NULL;
  CHECK_INT(g_plugin->init(&g_fake->host, &g_fake->inst, &info, cfg, &st),
            CEB_OK);
  if (st) {
    CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
    CHECK_INT(aa_stub_tokens_issued(reg), 1);
    CHECK(aa_stub_count(reg, 200) == ok + 1);
    aa_stub_set_file(reg, "enrol.yaml", AA_DOC_V200); /* a new document */
    CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
    CHECK_INT(aa_stub_tokens_issued(reg), 1);
    CHECK(aa_stub_count(reg, 200) == ok + 2);
    /* revoked: 401, a new token, the retry goes through */
    aa_stub_revoke(reg);
    size_t refused = aa_stub_count(reg, 401);
    aa_stub_set_file(reg, "enrol.yaml", AA_DOC_V100);
    CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
    CHECK(aa_stub_count(reg, 401) == refused + 1);
    CHECK_INT(aa_stub_tokens_issued(reg), 2);
    CHECK(aa_stub_count(reg, 200) == ok + 3);
    g_plugin->destroy(st);
  }
  cebi_config_free(cfg);
}

/* The root document at the registry refers to a schema on another server:
 * that server never sees the registry's token. */
static void test_other_origin(aa_stub *reg, const char *base) {
  aa_stub *other = aa_stub_start("/elsewhere");
  CHECK(other != NULL);
  if (!other) return;
  aa_stub_set_file(other, "enrolment.json",
                   "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
                   "\"string\"}}}");
  char doc[1024], url[200];
  snprintf(doc, sizeof doc,
           "asyncapi: 2.6.0\n"
           "info: {title: Enrolment, version: 3.0.0}\n"
           "channels:\n"
           "  nl.edu.enrolment:\n"
           "    publish:\n"
           "      message:\n"
           "        payload:\n"
           "          $ref: 'http://127.0.0.1:%d/elsewhere/files/"
           "enrolment.json'\n",
           aa_stub_port(other));
  aa_stub_set_file(reg, "split.yaml", doc);
  snprintf(url, sizeof url, "%s/files/split.yaml", base);
  aa_stub_require_token(reg, "registry-token-1");
  size_t seen = aa_stub_auth_seen(reg);
  const char *kv[] = {
      "url",      url, "allow_insecure_http", "true",
      "interval", "0", "bearer_token",        "registry-token-1",
      NULL};
  CHECK_INT(sync_with(kv), CEB_OK);
  CHECK(aa_stub_auth_seen(reg) == seen + 1);
  CHECK_INT(aa_stub_count(other, 200), 1);
  CHECK_INT(aa_stub_auth_seen(other), 0);
  aa_stub_require_token(reg, NULL);
  aa_stub_stop(other);
}

static void test_config(const char *url) {
  const char *both[] = {"url",
                        url,
                        "allow_insecure_http",
                        "true",
                        "bearer_token",
                        "t",
                        "oauth2.token_url",
                        "https://idp.example.nl/token",
                        "oauth2.client_id",
                        "bridge",
                        "oauth2.client_secret",
                        "s",
                        NULL};
  CHECK_INT((sync_with(both), init_rc), CEB_ECONFIG);
  const char *file[] = {"file", "/tmp/x.yaml", "bearer_token", "t", NULL};
  CHECK_INT((sync_with(file), init_rc), CEB_ECONFIG);
  const char *partial[] = {
      "url",    url, "allow_insecure_http", "true", "oauth2.client_id",
      "bridge", NULL};
  CHECK_INT((sync_with(partial), init_rc), CEB_ECONFIG);
  const char *plain_idp[] = {"url",
                             "https://registry.example.nl/a.yaml",
                             "oauth2.token_url",
                             "http://idp.example.nl/token",
                             "oauth2.client_id",
                             "bridge",
                             "oauth2.client_secret",
                             "s",
                             NULL};
  CHECK_INT((sync_with(plain_idp), init_rc), CEB_ECONFIG);
  const char *no_secret[] = {"url",
                             url,
                             "allow_insecure_http",
                             "true",
                             "oauth2.token_url",
                             "http://127.0.0.1:1/token",
                             "oauth2.client_id",
                             "bridge",
                             NULL};
  CHECK_INT((sync_with(no_secret), init_rc), CEB_ECONFIG);
  const char *crlf[] = {"url",
                        url,
                        "allow_insecure_http",
                        "true",
                        "bearer_token",
                        "a\r\nX-Injected: 1",
                        NULL};
  CHECK_INT((sync_with(crlf), init_rc), CEB_ECONFIG);
}

int main(void) {
  void *so = dlopen(CEB_PLUGIN_DIR "/asyncapi.so", RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(so != NULL, "dlopen: %s", dlerror());
  if (!so) return ceb_test_done("plugin_asyncapi_auth");
  ceb_plugin_query_fn q = (ceb_plugin_query_fn)dlsym(so, "ceb_plugin_query");
  g_plugin = q ? q(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  CHECK(g_plugin != NULL);
  if (!g_plugin) return ceb_test_done("plugin_asyncapi_auth");
  g_fake = ceb_fake_host_new("enrol", CEB_ROLE_CONTRACTS);
  aa_stub *reg = aa_stub_start(PREFIX);
  CHECK(reg != NULL);
  if (!reg) return ceb_test_done("plugin_asyncapi_auth");
  aa_stub_set_file(reg, "enrol.yaml", AA_DOC_V110);
  char base[128], url[200];
  snprintf(base, sizeof base, "http://127.0.0.1:%d" PREFIX, aa_stub_port(reg));
  snprintf(url, sizeof url, "%s/files/enrol.yaml", base);

  test_config(url);
  test_bearer(reg, url);
  test_other_origin(reg, base);
  test_oauth(reg, base, url);

  aa_stub_stop(reg);
  ceb_fake_host_free(g_fake);
  dlclose(so);
  return ceb_test_done("plugin_asyncapi_auth");
}
