/* The intermediary's TLS policy: TLS 1.0 and 1.1 are refused, so is the
 * static RSA key exchange (no forward secrecy), TLS 1.2 with ECDHE and TLS
 * 1.3 are served; tls.min_version = 1.3 refuses TLS 1.2; an operator's
 * tls.priority cannot bring back a version below the minimum; a priority
 * GnuTLS refuses is a config error. Probed with `openssl s_client` at
 * security level 0, so that each refusal is the intermediary's. The
 * certificate is RSA: with an EC one, static RSA could not be offered at
 * all and its refusal would prove nothing. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test_tls.h"
#include "hin_harness.h"

#define OLD "-cipher DEFAULT@SECLEVEL=0"

static const char *const STRUCT_HDRS[] = {
    "Content-Type: application/cloudevents+json", NULL};
#define EVENT                                                                  \
  "{\"specversion\":\"1.0\",\"id\":\"tls-1\",\"source\":\"urn:test\","         \
  "\"type\":\"nl.test.tls\"}"

static char crt[512], key[512];
static char e_crt[600], e_key[600];

static void test_default_policy(void) {
  const char *const cfg[] = {"auth=none", e_crt, e_key, NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  CHECK_INT(ceb_tls_probe(e->port, "-tls1 " OLD, 0), 0);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_1 " OLD, 0), 0);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_2 -cipher AES128-SHA@SECLEVEL=0", 0),
            0);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_2 -cipher AES256-GCM-SHA384", 0), 0);
  CHECK_INT(
      ceb_tls_probe(e->port, "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", 1),
      1);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_3", 1), 1);
  /* and the listener still takes events over it */
  hin_resp r = hin_post_tls(e->url, STRUCT_HDRS, EVENT, crt, NULL, NULL);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  hin_stop(e);
}

static void test_min_13(void) {
  const char *const cfg[] = {"auth=none", e_crt, e_key, "tls.min_version=1.3",
                             NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  CHECK_INT(
      ceb_tls_probe(e->port, "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", 0),
      0);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_3", 1), 1);
  hin_stop(e);
}

/* An operator who needs static RSA for an old partner may allow it; the
 * version floor stays. */
static void test_priority_keeps_floor(void) {
  const char *const cfg[] = {"auth=none", e_crt, e_key, "tls.priority=NORMAL",
                             NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return;
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_2 -cipher AES128-SHA@SECLEVEL=0", 1),
            1);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1_1 " OLD, 0), 0);
  CHECK_INT(ceb_tls_probe(e->port, "-tls1 " OLD, 0), 0);
  hin_stop(e);
}

static void test_bad_priority(void) {
  const char *const cfg[] = {"auth=none", e_crt, e_key,
                             "tls.priority=NORMAL:+NO-SUCH-THING", NULL};
  CHECK_INT(hin_init_status(cfg), CEB_ECONFIG);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *dir = ceb_test_tmpdir("http_in_tls_policy");
  CHECK_INT(ceb_tls_rsa_cert(dir), 0);
  snprintf(crt, sizeof crt, "%s/rsa.crt", dir);
  snprintf(key, sizeof key, "%s/rsa.key", dir);
  snprintf(e_crt, sizeof e_crt, "tls.cert=%s", crt);
  snprintf(e_key, sizeof e_key, "tls.key=%s", key);
  test_default_policy();
  test_min_13();
  test_priority_keeps_floor();
  test_bad_priority();
  ceb_test_rmtree(dir);
  free(dir);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_tls_policy");
}
