/* cebridge admin: one call to the running bridge's admin API, with the
 * bearer token found the way the bridge finds it, so that operators need
 * neither curl nor the token in their shell history. */
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/ceb_admin_tls.h"
#include "admin/ceb_admin_token.h"
#include "bridge/ceb_bridge.h"
#include "cli/cli.h"
#include "cli/cli_common.h"

static const char k_admin_usage[] =
    "usage: cebridge admin [-c DIR] [--plugin-dir DIR] get|post PATH\n"
    "Calls the admin API of the bridge running on -c DIR (default bridge.d)\n"
    "at admin.listen (the port from admin.port_file when it is set) with\n"
    "the admin bearer token: CEBRIDGE_ADMIN_TOKEN from the environment,\n"
    "else admin.token, else the token file admin.token beside the store\n"
    "(the bridge creates it at its first start). PATH e.g. /v1/routes,\n"
    "'/v1/dlq/replay?id=42', '/v1/dlq/purge?route=R&confirm=true'.\n"
    "Prints the response body. Exit 0 on 2xx, 1 on another HTTP status,\n"
    "2 usage, config or connection error.\n";

/* host:port in URL form for the listen address: a wildcard is reached on
 * loopback. 0 when there is no usable port. */
static int base_url(const ceb_bridge_cfg *cfg, const char *scheme, char *url,
                    size_t size) {
  const char *listen = cfg->admin.listen;
  char host[256];
  int port = 0;
  if (!listen || strcmp(listen, "off") == 0 ||
      ceb_parse_address(listen, host, sizeof host, &port) != CEB_OK) {
    fprintf(stderr, "cebridge admin: admin.listen is off or unusable\n");
    return 0;
  }
  const char *pf = cfg->admin.port_file;
  FILE *f = pf && *pf ? fopen(pf, "r") : NULL;
  if (f) {
    int p = 0;
    if (fscanf(f, "%d", &p) == 1 && p > 0 && p < 65536) port = p;
    fclose(f);
  }
  if (port <= 0) {
    fprintf(stderr, "cebridge admin: admin.listen has port 0 and no "
                    "admin.port_file tells the bound port\n");
    return 0;
  }
  const char *h = host;
  if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "localhost") == 0)
    h = "127.0.0.1";
  else if (strcmp(host, "::") == 0)
    h = "::1";
  int v6 = strchr(h, ':') != NULL;
  snprintf(url, size, "%s://%s%s%s:%d", scheme, v6 ? "[" : "", h, v6 ? "]" : "",
           port);
  return 1;
}

typedef struct out_state {
  char last;
} out_state;

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  out_state *o = arg;
  size_t len = size * n;
  if (len) {
    fwrite(p, 1, len, stdout);
    o->last = p[len - 1];
  }
  return len;
}

/* pin: "" for plain HTTP, else the admin certificate's key pin: the
 * connection is trusted when the bridge shows that key (the CLI reads the
 * same config), whatever names or CA its certificate has. */
static int call(const char *url, int post, const char *token, const char *pin) {
  CURL *c = curl_easy_init();
  if (!c) return 2;
  char auth[CEB_ADMIN_TOKEN_MAX + 32];
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  struct curl_slist *hl = curl_slist_append(NULL, auth);
  OPENSSL_cleanse(auth, sizeof auth);
  out_state o = {'\n'};
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &o);
  if (*pin) {
    curl_easy_setopt(c, CURLOPT_PINNEDPUBLICKEY, pin);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(c, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2);
  }
  if (post) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
  }
  CURLcode rc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  if (o.last != '\n') putchar('\n');
  fflush(stdout);
  if (rc != CURLE_OK) {
    fprintf(stderr, "cebridge admin: %s: %s\n", url, curl_easy_strerror(rc));
    return 2;
  }
  if (code < 200 || code > 299) {
    fprintf(stderr, "cebridge admin: HTTP %ld\n", code);
    return 1;
  }
  return 0;
}

int ceb_cmd_admin(int argc, char **argv) {
  ceb_cli_common cc = {"bridge.d", NULL};
  int i = ceb_cli_parse_common(argc, argv, &cc, k_admin_usage);
  if (i < 0) return i == -2 ? 0 : 2;
  if (argc - i != 2 ||
      (strcasecmp(argv[i], "get") != 0 && strcasecmp(argv[i], "post") != 0)) {
    fprintf(stderr, "%s", k_admin_usage);
    return 2;
  }
  const char *path = argv[i + 1];
  for (const char *p = path; *p; p++)
    if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
      fprintf(stderr, "cebridge admin: PATH must not hold spaces or control "
                      "characters (percent-encode them)\n");
      return 2;
    }
  if (path[0] != '/') {
    fprintf(stderr, "cebridge admin: PATH starts with / (e.g. /v1/routes)\n");
    return 2;
  }
  ceb_bridge_opts o = {.config_dir = cc.config_dir,
                       .plugin_dir = cc.plugin_dir};
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  ceb_bridge *b;
  if (ceb_bridge_load(&o, &b, &errs) != CEB_OK) {
    ceb_conf_errors_print(&errs, stderr);
    fprintf(stderr, "cebridge admin: cannot load %s\n", cc.config_dir);
    return 2;
  }
  const ceb_bridge_cfg *cfg = ceb_conf_bridge_cfg(ceb_bridge_conf(b));
  char url[4400], base[320];
  char *token = NULL;
  int out = 2;
  const char *env = getenv("CEBRIDGE_ADMIN_TOKEN");
  char err[512] = "";
  if (env && *env)
    token = strdup(env);
  else if (ceb_admin_token_get(cfg, 0, &token, NULL, err, sizeof err) != CEB_OK)
    fprintf(stderr, "cebridge admin: %s\n", err);
  char pin[128];
  int tls = token
                ? ceb_admin_tls_pin(cfg, NULL, pin, sizeof pin, err, sizeof err)
                : -1;
  if (token && tls < 0) fprintf(stderr, "cebridge admin: %s\n", err);
  if (tls >= 0 && base_url(cfg, tls ? "https" : "http", base, sizeof base)) {
    snprintf(url, sizeof url, "%s%s", base, path);
    out = call(url, strcasecmp(argv[i], "post") == 0, token, pin);
  }
  if (token) {
    OPENSSL_cleanse(token, strlen(token));
    free(token);
  }
  ceb_bridge_free(b);
  return out;
}
