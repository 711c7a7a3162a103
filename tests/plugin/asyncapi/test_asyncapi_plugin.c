/* The asyncapi plugin through its real ABI (dlopen of the built .so) on the
 * fake host: a registry source (every version, ETag / 304 on the next
 * sync, a changed upstream document -> conflict, logged and counted), a url
 * source, a file source with a relative $ref, schedule on its own thread,
 * config errors, and sync of another name. */
#include <dlfcn.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aa_registry_stub.h"
#include "aa_test_docs.h"
#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"

#define PREFIX "/apis/registry/v3"

static const ceb_plugin *g_plugin;
static ceb_fake_host *g_fake;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_puts[4]; /* by result: 0 OK, 1 EDUPLICATE, 2 ECONFLICT, 3 other */
static char g_last_version[64];

static int record_put(ceb_instance *inst, const char *name, const char *version,
                      const char *doc, size_t len, const char *provenance) {
  int rc = g_fake->host.contract_put(inst, name, version, doc, len, provenance);
  pthread_mutex_lock(&g_lock);
  g_puts[rc == CEB_OK           ? 0
         : rc == CEB_EDUPLICATE ? 1
         : rc == CEB_ECONFLICT  ? 2
                                : 3]++;
  snprintf(g_last_version, sizeof g_last_version, "%s", version);
  /* What is offered is one self-contained JSON document. */
  json_t *j = json_loadb(doc, len, 0, NULL);
  if (!j || !json_object_get(j, "asyncapi")) g_puts[3]++;
  json_decref(j);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static ceb_host g_host;

static int puts_of(int k) {
  pthread_mutex_lock(&g_lock);
  int n = g_puts[k];
  pthread_mutex_unlock(&g_lock);
  return n;
}

static void reset_puts(void) {
  pthread_mutex_lock(&g_lock);
  memset(g_puts, 0, sizeof g_puts);
  pthread_mutex_unlock(&g_lock);
}

static ceb_config *make_cfg(const char *name, const char *const *kv) {
  ceb_config *cfg = cebi_config_new(name);
  cebi_config_put(cfg, "plugin", "asyncapi", "test.conf", 1);
  for (int i = 0; kv[i]; i += 2)
    cebi_config_put(cfg, kv[i], kv[i + 1], "test.conf", i + 2);
  cebi_config_set_spec(cfg, g_plugin->config_contracts,
                       ceb_spec_contracts_common);
  return cfg;
}

static int init(const ceb_config *cfg, void **state) {
  ceb_instance_info info = {sizeof info, ceb_config_name(cfg),
                            CEB_ROLE_CONTRACTS, NULL};
  return g_plugin->init(&g_host, &g_fake->inst, &info, cfg, state);
}

static double metric(const char *name) {
  char full[128];
  snprintf(full, sizeof full, "cebridge_%s", name);
  return ceb_metrics_get(g_fake->metrics, full, NULL);
}

typedef struct wait_304 {
  aa_stub *reg;
  size_t want;
} wait_304;

/* Two 304s answered and the puts they led to made. */
static int got_304s(void *arg) {
  wait_304 *w = arg;
  return aa_stub_count(w->reg, 304) >= w->want && puts_of(1) >= 3;
}

int main(void) {
  void *so = dlopen(CEB_PLUGIN_DIR "/asyncapi.so", RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(so != NULL, "dlopen: %s", dlerror());
  if (!so) return ceb_test_done("plugin_asyncapi");
  ceb_plugin_query_fn q = (ceb_plugin_query_fn)dlsym(so, "ceb_plugin_query");
  CHECK(q != NULL);
  g_plugin = q ? q(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  CHECK(g_plugin && g_plugin->roles == CEB_ROLE_CONTRACTS && g_plugin->sync);
  if (!g_plugin) return ceb_test_done("plugin_asyncapi");
  g_fake = ceb_fake_host_new("enrol", CEB_ROLE_CONTRACTS);
  g_host = g_fake->host;
  g_host.contract_put = record_put;

  aa_stub *reg = aa_stub_start(PREFIX);
  CHECK(reg != NULL);
  if (!reg) return ceb_test_done("plugin_asyncapi");
  aa_stub_set_version(reg, "edu", "enrol", "1.0.0", AA_DOC_V100);
  aa_stub_set_version(reg, "edu", "enrol", "1.1.0", AA_DOC_V110);
  char base[128];
  snprintf(base, sizeof base, "http://127.0.0.1:%d" PREFIX, aa_stub_port(reg));

  /* Registry: every version offered, then 304s. */
  const char *kv[] = {"registry.url",
                      base,
                      "registry.group",
                      "edu",
                      "registry.artifact",
                      "enrol",
                      "allow_insecure_http",
                      "true",
                      "interval",
                      "0",
                      NULL};
  ceb_config *cfg = make_cfg("enrol", kv);
  void *st = NULL;
  CHECK_INT(init(cfg, &st), CEB_OK);
  CHECK_INT(g_plugin->start(st), CEB_OK);
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_INT(puts_of(0), 2);
  CHECK_INT(puts_of(3), 0);
  CHECK(metric("contracts_new_versions_total") >= 1);
  size_t n304 = aa_stub_count(reg, 304);
  CHECK_INT(g_plugin->sync(st, "enrol"), CEB_OK);
  CHECK_INT(aa_stub_count(reg, 304), n304 + 2); /* both unchanged */
  /* a 304 re-offers the cached document: an identical copy */
  CHECK_INT(puts_of(0), 2);
  CHECK_INT(puts_of(1), 2);
  CHECK_INT(g_plugin->sync(st, "other"), CEB_ENOTFOUND);

  /* Upstream edits 1.0.0 in place: conflict, counted; the held document
   * stays (the fake register keeps the first one). */
  aa_stub_set_version(reg, "edu", "enrol", "1.0.0", AA_DOC_V100_CHANGED);
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_INT(puts_of(2), 1);
  CHECK(metric("contracts_conflicts_total") == 1);
  /* Unchanged since (304): the conflict is not reported again. */
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_INT(puts_of(2), 1);
  CHECK(metric("contracts_conflicts_total") == 1);

  /* A new version appears. */
  aa_stub_set_version(reg, "edu", "enrol", "2.0.0", AA_DOC_V200);
  double before = metric("contracts_new_versions_total");
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_STR(g_last_version, "2.0.0");
  CHECK(metric("contracts_new_versions_total") == before + 1);
  /* A patch of an older line is stored but not announced as new. */
  aa_stub_set_version(reg, "edu", "enrol", "1.0.1",
                      AA_DOC_HEAD("1.0.1", "Enrolment"));
  int stored = puts_of(0);
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_INT(puts_of(0), stored + 1);
  CHECK(metric("contracts_new_versions_total") == before + 1);
  CHECK_INT(g_plugin->drain(st, ceb_test_now_ms() + 1000), CEB_OK);
  g_plugin->destroy(st);
  cebi_config_free(cfg);

  /* A failing source keeps nothing and counts the failure. */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/nope", base);
  const char *kv_bad[] = {
      "url", missing, "allow_insecure_http", "true", "interval", "0", NULL};
  cfg = make_cfg("broken", kv_bad);
  CHECK_INT(init(cfg, &st), CEB_OK);
  double fails = metric("contracts_sync_failures_total");
  CHECK_INT(g_plugin->sync(st, NULL), CEB_EIO);
  CHECK(metric("contracts_sync_failures_total") == fails + 1);
  g_plugin->destroy(st);
  cebi_config_free(cfg);

  /* http without allow_insecure_http, and no or two sources: refused. */
  const char *kv_http[] = {"url", missing, NULL};
  cfg = make_cfg("plain", kv_http);
  st = NULL;
  CHECK_INT(init(cfg, &st), CEB_ECONFIG);
  cebi_config_free(cfg);
  const char *kv_two[] = {
      "url",  missing, "file", "/tmp/x.yaml", "allow_insecure_http",
      "true", NULL};
  cfg = make_cfg("two", kv_two);
  CHECK_INT(init(cfg, &st), CEB_ECONFIG);
  cebi_config_free(cfg);

  /* A url source on a schedule: its own thread syncs again and again. */
  aa_stub_set_file(reg, "enrol.yaml", AA_DOC_V110);
  char url[160];
  snprintf(url, sizeof url, "%s/files/enrol.yaml", base);
  const char *kv_url[] = {
      "url", url, "allow_insecure_http", "true", "interval", "100ms", NULL};
  cfg = make_cfg("enrol", kv_url);
  reset_puts();
  size_t n200 = aa_stub_count(reg, 200), n304b = aa_stub_count(reg, 304);
  CHECK_INT(init(cfg, &st), CEB_OK);
  CHECK_INT(g_plugin->start(st), CEB_OK);
  /* first fetch 200, then conditional 304s: one put, the rest unchanged */
  wait_304 w = {reg, n304b + 2};
  CHECK(ceb_test_wait(got_304s, &w, 10000));
  /* 1.1.0 is held already (from the registry): an identical copy */
  CHECK(puts_of(1) >= 3);
  CHECK_INT(puts_of(0) + puts_of(2) + puts_of(3), 0);
  CHECK_INT(aa_stub_count(reg, 200), n200 + 1);
  CHECK_INT(g_plugin->drain(st, ceb_test_now_ms() + 1000), CEB_OK);
  g_plugin->destroy(st);
  cebi_config_free(cfg);

  /* A file source with a relative $ref into another file. */
  char *dir = ceb_test_tmpdir("asyncapi-plugin");
  char sub[512], file[600];
  snprintf(sub, sizeof sub, "%s/schemas", dir);
  mkdir(sub, 0700);
  ceb_test_write_file(sub, "enrolment.json",
                      "{\"type\":\"object\",\"properties\":{\"id\":"
                      "{\"type\":\"string\"}}}");
  ceb_test_write_file(dir, "api.yaml",
                      "asyncapi: 3.0.0\n"
                      "info: {title: f, version: 0.1.0}\n"
                      "components:\n"
                      "  messages:\n"
                      "    m:\n"
                      "      payload: {$ref: 'schemas/enrolment.json'}\n");
  snprintf(file, sizeof file, "%s/api.yaml", dir);
  const char *kv_file[] = {"file", file, "interval", "0", NULL};
  cfg = make_cfg("local", kv_file);
  reset_puts();
  CHECK_INT(init(cfg, &st), CEB_OK);
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_INT(puts_of(0), 1);
  CHECK_STR(g_last_version, "0.1.0");
  g_plugin->destroy(st);
  cebi_config_free(cfg);
  ceb_test_rmtree(dir);
  free(dir);

  /* The ETag cache in the data directory outlives the instance: a new
   * instance sends If-None-Match at once, and on 304 offers the cached
   * document, so an empty register (a new store) still gets it. */
  char *cache = ceb_test_tmpdir("asyncapi-cache");
  const char *kv_c[] = {"url", url, "allow_insecure_http", "true", "interval",
                        "0",   NULL};
  cfg = make_cfg("enrol", kv_c);
  ceb_instance_info ci = {sizeof ci, "enrol", CEB_ROLE_CONTRACTS, cache};
  CHECK_INT(g_plugin->init(&g_host, &g_fake->inst, &ci, cfg, &st), CEB_OK);
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK); /* 200: cache written */
  g_plugin->destroy(st);
  ceb_fake_host_free(g_fake);
  g_fake = ceb_fake_host_new("enrol", CEB_ROLE_CONTRACTS);
  g_host = g_fake->host;
  g_host.contract_put = record_put;
  reset_puts();
  size_t c304 = aa_stub_count(reg, 304);
  CHECK_INT(g_plugin->init(&g_host, &g_fake->inst, &ci, cfg, &st), CEB_OK);
  CHECK_INT(g_plugin->sync(st, NULL), CEB_OK);
  CHECK_INT(aa_stub_count(reg, 304), c304 + 1);
  CHECK_INT(puts_of(0), 1);
  CHECK_STR(g_last_version, "1.1.0");
  g_plugin->destroy(st);
  cebi_config_free(cfg);
  ceb_test_rmtree(cache);
  free(cache);

  aa_stub_stop(reg);
  ceb_fake_host_free(g_fake);
  dlclose(so);
  return ceb_test_done("plugin_asyncapi");
}
