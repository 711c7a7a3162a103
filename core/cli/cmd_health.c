#include "cli/cli.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/health_addr.h"

static const char k_usage[] =
    "usage: cebridge health [-c DIR] [--live] [--timeout SECONDS]\n"
    "Asks the bridge running on config DIR (default bridge.d), through its\n"
    "admin API ([bridge] admin.listen), whether it accepts events (GET\n"
    "/readyz) or, with --live, whether it serves requests at all (GET\n"
    "/healthz). No admin token is needed.\n"
    "Exit 0 healthy, 1 not healthy or not reachable (reason on stderr),\n"
    "2 usage or config error.\n";

/* The first 4 KiB of the answer: enough for a problem's detail. */
typedef struct body {
  char text[4096];
  size_t len;
} body;

static size_t on_data(char *p, size_t size, size_t n, void *arg) {
  body *b = arg;
  size_t len = size * n, room = sizeof b->text - 1 - b->len;
  memcpy(b->text + b->len, p, len < room ? len : room);
  b->len += len < room ? len : room;
  b->text[b->len] = '\0';
  return len;
}

/* "detail" of an application/problem+json answer, else the body itself,
 * control characters replaced so the reason is one line. */
static void reason_of(const body *b, char *out, size_t outlen) {
  json_t *j = json_loads(b->text, 0, NULL);
  const char *d = json_string_value(json_object_get(j, "detail"));
  const char *src = d ? d : b->text;
  size_t i = 0;
  for (; src[i] && i + 1 < outlen; i++)
    out[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? ' ' : src[i];
  out[i] = '\0';
  json_decref(j);
}

static int parse(int argc, char **argv, const char **dir, int *live,
                 long *timeout_ms) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      printf("%s", k_usage);
      return 1;
    }
    int valued = strcmp(s, "-c") == 0 || strcmp(s, "--config") == 0 ||
                 strcmp(s, "--timeout") == 0;
    if (valued && i + 1 >= argc) {
      fprintf(stderr, "%s needs a value\n%s", s, k_usage);
      return -1;
    }
    if (strcmp(s, "--live") == 0) {
      *live = 1;
    } else if (strcmp(s, "-c") == 0 || strcmp(s, "--config") == 0) {
      *dir = argv[++i];
    } else if (strcmp(s, "--timeout") == 0) {
      char *end;
      double sec = strtod(argv[++i], &end);
      if (*end || !(sec > 0 && sec <= 3600)) {
        fprintf(stderr, "--timeout wants seconds in (0, 3600]\n%s", k_usage);
        return -1;
      }
      *timeout_ms = (long)(sec * 1000);
    } else {
      fprintf(stderr, "unexpected argument '%s'\n%s", s, k_usage);
      return -1;
    }
  }
  return 0;
}

int ceb_cmd_health(int argc, char **argv) {
  const char *dir = "bridge.d";
  int live = 0;
  long timeout_ms = 2000; /* below a container runtime's usual 3 s */
  int rc = parse(argc, argv, &dir, &live, &timeout_ms);
  if (rc) return rc > 0 ? 0 : 2;
  char base[600], why[1024], pin[128];
  ceb_health_addr_rc arc = ceb_health_admin_url(dir, base, sizeof base, pin,
                                                sizeof pin, why, sizeof why);
  if (arc != CEB_HEALTH_ADDR_OK) {
    fprintf(stderr, "cebridge health: %s\n", why);
    return arc == CEB_HEALTH_ADDR_DOWN ? 1 : 2;
  }
  char url[640];
  snprintf(url, sizeof url, "%s%s", base, live ? "/healthz" : "/readyz");
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fprintf(stderr, "cebridge health: cannot initialise libcurl\n");
    return 2;
  }
  CURL *c = curl_easy_init();
  if (!c) {
    curl_global_cleanup();
    fprintf(stderr, "cebridge health: cannot initialise libcurl\n");
    return 2;
  }
  body b = {.len = 0};
  b.text[0] = '\0';
  char curl_err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  /* The admin API is local: an HTTP(S)_PROXY of the environment must not
   * answer in the bridge's place. */
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
  if (*pin) { /* trust exactly the configured certificate's key */
    curl_easy_setopt(c, CURLOPT_PINNEDPUBLICKEY, pin);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(c, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2);
  }
  CURLcode cc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  curl_global_cleanup();
  if (cc != CURLE_OK) {
    fprintf(stderr, "cebridge health: %s: %s (is the bridge running?)\n", url,
            curl_err[0] ? curl_err : curl_easy_strerror(cc));
    return 1;
  }
  if (status != 200) {
    char reason[512];
    reason_of(&b, reason, sizeof reason);
    fprintf(stderr, "cebridge health: %s: HTTP %ld: %s\n", url, status, reason);
    return 1;
  }
  printf("cebridge: %s (%s)\n", live ? "alive" : "ready", url);
  return 0;
}
