/* Registry authentication (issue 17 item 8) end to end, through the real
 * `cebridge run` binary: the asyncapi contracts plugin's scheduled sync at
 * start fetches from loopback registries that require
 *   (a) a bearer token (an Apicurio v3 registry stub, two versions),
 *   (b) an OAuth2 client credentials token, fetched with HTTP Basic
 *       credentials from the stub's token endpoint,
 *   (c) HTTPS trusted through tls.ca_file, with a client certificate the
 *       server requires (mTLS),
 * and the contracts land in the register: the admin API's GET
 * /v1/contracts and `cebridge contracts list` show them. Refusals: a wrong
 * bearer token (401), wrong client credentials (the token endpoint's 401)
 * and the mTLS registry without a client certificate each leave an error
 * line naming the section and the reason, and nothing of theirs is
 * registered. */
#include <jansson.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aa_registry_stub.h"
#include "aa_test_docs.h"
#include "ceb_test.h"
#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_tls.h"

#define PREFIX "/apis/registry/v3"
#define TOKEN "an-operator-token-for-the-registry-test"

static ceb_test_bridge g_b;

/* GET /v1/contracts on the admin API: the list (new reference) or NULL. */
static json_t *admin_contracts(void) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/contracts", g_b.admin_port);
  const char *const auth[] = {"Authorization: Bearer " TOKEN, NULL};
  int st = ceb_test_http("GET", url, auth, NULL, 0, &body);
  json_t *j = st == 200 && body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  return j;
}

/* 1 when the register list holds name@version. */
static int listed(json_t *list, const char *name, const char *version) {
  json_t *arr = json_is_array(list) ? list : json_object_get(list, "contracts");
  size_t i;
  json_t *row;
  json_array_foreach(arr, i, row) {
    const char *n = json_string_value(json_object_get(row, "name"));
    const char *v = json_string_value(json_object_get(row, "version"));
    if (n && v && strcmp(n, name) == 0 && strcmp(v, version) == 0) return 1;
  }
  return 0;
}

/* 1 when the register holds anything of name. */
static int any_of(json_t *list, const char *name) {
  json_t *arr = json_is_array(list) ? list : json_object_get(list, "contracts");
  size_t i;
  json_t *row;
  json_array_foreach(arr, i, row) {
    const char *n = json_string_value(json_object_get(row, "name"));
    if (n && strcmp(n, name) == 0) return 1;
  }
  return 0;
}

static int all_registered(void *arg) {
  (void)arg;
  json_t *l = admin_contracts();
  int ok = l && listed(l, "reg-bearer", "1.0.0") &&
           listed(l, "reg-bearer", "1.1.0") &&
           listed(l, "reg-oauth", "2.0.0") && listed(l, "reg-mtls", "1.1.0");
  json_decref(l);
  return ok;
}

/* A line of the bridge's log holding all of a, b and c. */
static int log_line_has(const char *a, const char *b, const char *c) {
  char path[600];
  snprintf(path, sizeof path, "%s/bridge.log", g_b.dir);
  char *t = ceb_test_read_file(path, NULL);
  int found = 0;
  for (char *line = t, *end; line && *line && !found; line = end) {
    end = strchr(line, '\n');
    if (end) *end++ = '\0';
    found = strstr(line, a) && strstr(line, b) && strstr(line, c);
    if (!end) break;
  }
  free(t);
  return found;
}

typedef struct line_wait {
  const char *a, *b, *c;
} line_wait;

static int line_logged(void *arg) {
  line_wait *w = arg;
  return log_line_has(w->a, w->b, w->c);
}

static void expect_refusal(const char *section, const char *reason,
                           const char *also) {
  line_wait w = {section, reason, also};
  CHECK_MSG(ceb_test_wait(line_logged, &w, 30000),
            "no log line naming %s and %s", section, reason);
}

int main(void) {
  char *dir = ceb_test_tmpdir("registry-auth");
  if (!dir) return ceb_test_done("integration_registry_auth");

  /* (a), (b) and the refusals: one stub taking the static token and the
   * tokens its endpoint issues to bridge:client-secret-1 */
  aa_stub *reg = aa_stub_start(PREFIX);
  CHECK(reg != NULL);
  if (!reg) return ceb_test_done("integration_registry_auth");
  aa_stub_set_version(reg, "edu", "reg-bearer", "1.0.0", AA_DOC_V100);
  aa_stub_set_version(reg, "edu", "reg-bearer", "1.1.0", AA_DOC_V110);
  aa_stub_set_file(reg, "oauth.yaml", AA_DOC_V200);
  aa_stub_set_file(reg, "wrong.yaml", AA_DOC_V110);
  aa_stub_require_token(reg, "registry-token-1");
  aa_stub_set_client(reg, "bridge", "client-secret-1");

  /* (c): the test certificates of tests/common/ceb_test_tls (the server's
   * is its own CA; the client's is the CA the server trusts) */
  char sdir[600], cdir[600], scrt[700], skey[700], ccrt[700], ckey[700];
  snprintf(sdir, sizeof sdir, "%s/server", dir);
  snprintf(cdir, sizeof cdir, "%s/client", dir);
  CHECK(mkdir(sdir, 0700) == 0 && mkdir(cdir, 0700) == 0);
  CHECK_INT(ceb_tls_rsa_cert(sdir), 0);
  CHECK_INT(ceb_tls_rsa_cert(cdir), 0);
  snprintf(scrt, sizeof scrt, "%s/rsa.crt", sdir);
  snprintf(skey, sizeof skey, "%s/rsa.key", sdir);
  snprintf(ccrt, sizeof ccrt, "%s/rsa.crt", cdir);
  snprintf(ckey, sizeof ckey, "%s/rsa.key", cdir);
  ceb_tls_srv *tls = ceb_tls_srv_start(scrt, skey, TLS1_2_VERSION,
                                       TLS1_3_VERSION, NULL, AA_DOC_V110);
  CHECK(tls != NULL);
  if (!tls) return ceb_test_done("integration_registry_auth");
  CHECK_INT(ceb_tls_srv_require_client(tls, ccrt), 0);

  int rp = aa_stub_port(reg), tp = ceb_tls_srv_port(tls);
  char extra[8192];
  snprintf(extra, sizeof extra,
           "\n[contracts reg-bearer]\n"
           "plugin = asyncapi\n"
           "registry.url = http://127.0.0.1:%d" PREFIX "\n"
           "registry.group = edu\n"
           "registry.artifact = reg-bearer\n"
           "allow_insecure_http = true\n"
           "bearer_token = registry-token-1\n"
           "\n[contracts reg-oauth]\n"
           "plugin = asyncapi\n"
           "url = http://127.0.0.1:%d" PREFIX "/files/oauth.yaml\n"
           "allow_insecure_http = true\n"
           "oauth2.token_url = http://127.0.0.1:%d" PREFIX "/token\n"
           "oauth2.client_id = bridge\n"
           "oauth2.client_secret = client-secret-1\n"
           "\n[contracts reg-mtls]\n"
           "plugin = asyncapi\n"
           "url = https://127.0.0.1:%d/enrol.yaml\n"
           "tls.ca_file = %s\n"
           "tls.client_cert = %s\n"
           "tls.client_key = %s\n"
           "\n[contracts reg-wrong-token]\n"
           "plugin = asyncapi\n"
           "url = http://127.0.0.1:%d" PREFIX "/files/wrong.yaml\n"
           "allow_insecure_http = true\n"
           "bearer_token = registry-token-2\n"
           "\n[contracts reg-wrong-client]\n"
           "plugin = asyncapi\n"
           "url = http://127.0.0.1:%d" PREFIX "/files/wrong.yaml\n"
           "allow_insecure_http = true\n"
           "oauth2.token_url = http://127.0.0.1:%d" PREFIX "/token\n"
           "oauth2.client_id = bridge\n"
           "oauth2.client_secret = client-secret-2\n"
           "\n[contracts reg-no-cert]\n"
           "plugin = asyncapi\n"
           "url = https://127.0.0.1:%d/enrol.yaml\n"
           "tls.ca_file = %s\n",
           rp, rp, rp, tp, scrt, ccrt, ckey, rp, rp, rp, tp, scrt);
  /* the receiver port of the webhook config is never reached: no event is
   * posted */
  ceb_test_webhook_opts o = {.token = TOKEN, .rx_port = 9, .sink_extra = NULL};
  char text[16384];
  CHECK_INT(ceb_test_webhook_conf(text, sizeof text - strlen(extra), dir, &o),
            0);
  strcat(text, extra);
  CHECK_INT(ceb_test_bridge_run(&g_b, dir, text, 30000), 0);

  /* the three that may fetch: in the register */
  CHECK_MSG(ceb_test_wait(all_registered, NULL, 60000),
            "the contracts of reg-bearer, reg-oauth, reg-mtls are not all "
            "registered");
  CHECK(aa_stub_tokens_issued(reg) >= 1); /* reg-oauth's */
  CHECK(ceb_tls_srv_requests(tls) >= 1);  /* reg-mtls's */

  /* the refused ones: a log line each, with the section and the reason */
  expect_refusal("reg-wrong-token", "HTTP 401", "wrong.yaml");
  expect_refusal("reg-wrong-client", "token endpoint answered 401", "");
  expect_refusal("reg-no-cert", "fetching failed", "");
  CHECK(aa_stub_count(reg, 401) >= 1);
  CHECK(aa_stub_tokens_refused(reg) >= 1);
  /* no secret in the log */
  CHECK(!ceb_test_bridge_log_has(&g_b, "registry-token-"));
  CHECK(!ceb_test_bridge_log_has(&g_b, "client-secret-"));

  /* nothing of theirs registered, by the admin API and the CLI */
  json_t *l = admin_contracts();
  CHECK(l != NULL);
  CHECK(!any_of(l, "reg-wrong-token"));
  CHECK(!any_of(l, "reg-wrong-client"));
  CHECK(!any_of(l, "reg-no-cert"));
  json_decref(l);
  char *out = NULL;
  CHECK_INT(ceb_test_bridge_cli(&g_b, "contracts list", &out), 0);
  CHECK_MSG(out && strstr(out, "reg-bearer") && strstr(out, "reg-oauth") &&
                strstr(out, "reg-mtls") && strstr(out, "1.0.0") &&
                strstr(out, "1.1.0") && strstr(out, "2.0.0") &&
                !strstr(out, "reg-wrong") && !strstr(out, "reg-no-cert"),
            "contracts list: %s", out ? out : "");
  free(out);

  CHECK_INT(ceb_test_pid_stop(g_b.pid, SIGTERM, 30000), 0);
  if (ceb_test_failures) ceb_test_bridge_log_dump(&g_b);
  ceb_tls_srv_stop(tls);
  aa_stub_stop(reg);
  free(dir);
  return ceb_test_done("integration_registry_auth");
}
