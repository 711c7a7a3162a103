#include "aa_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ceb/status.h>

#include "aa_fetch.h"
#include "http_oauth.h"

struct aa_auth {
  const ceb_host *host;
  ceb_instance *inst;
  char *scheme, *hostname, *port; /* the origin the credentials are for */
  const char *static_token;       /* borrowed from the config */
  http_oauth_client *oauth;
};

/* scheme, host and port (the scheme's default when absent) of url, as
 * libcurl's own URL parser reads them. 0, or -1 when url does not parse. */
static int origin_of(const char *url, char **scheme, char **host, char **port) {
  *scheme = *host = *port = NULL;
  CURLU *u = curl_url();
  int ok =
      u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) == CURLUE_OK;
  curl_url_cleanup(u);
  if (ok) return 0;
  curl_free(*scheme);
  curl_free(*host);
  curl_free(*port);
  *scheme = *host = *port = NULL;
  return -1;
}

static int same_origin(const aa_auth *a, const char *url) {
  char *scheme, *host, *port;
  if (origin_of(url, &scheme, &host, &port) != 0) return 0;
  int same = strcasecmp(scheme, a->scheme) == 0 &&
             strcasecmp(host, a->hostname) == 0 && strcmp(port, a->port) == 0;
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  return same;
}

void aa_auth_free(aa_auth *a) {
  if (!a) return;
  curl_free(a->scheme);
  curl_free(a->hostname);
  curl_free(a->port);
  http_oauth_client_free(a->oauth);
  free(a);
}

int aa_auth_new(const ceb_host *host, ceb_instance *inst, const ceb_config *cfg,
                const char *origin_url, int allow_http, aa_auth **out,
                char *err, size_t errlen) {
  *out = NULL;
  const char *token = ceb_config_str(cfg, "bearer_token");
  if (token && !*token) token = NULL;
  http_oauth_config oc;
  int oauth = http_oauth_config_read(cfg, &oc, err, errlen);
  if (oauth < 0) return CEB_ECONFIG;
  if (!token && !oauth) return CEB_OK;
  if (token && oauth) {
    snprintf(err, errlen, "bearer_token: set it or oauth2.token_url, not both");
    return CEB_ECONFIG;
  }
  const char *key = token ? "bearer_token" : "oauth2.token_url";
  if (!origin_url) {
    snprintf(err, errlen,
             "%s: needs url or registry.url (a file is read "
             "without credentials)",
             key);
    return CEB_ECONFIG;
  }
  if (token && strpbrk(token, "\r\n")) {
    snprintf(err, errlen, "bearer_token: holds a line break");
    return CEB_ECONFIG;
  }
  if (oauth && strncmp(oc.token_url, "https://", 8) != 0 &&
      !(allow_http && strncmp(oc.token_url, "http://", 7) == 0)) {
    snprintf(err, errlen,
             "oauth2.token_url: https only (http needs "
             "allow_insecure_http = true)");
    return CEB_ECONFIG;
  }
  aa_auth *a = calloc(1, sizeof *a);
  if (!a) return CEB_ENOMEM;
  a->host = host;
  a->inst = inst;
  a->static_token = token;
  if (origin_of(origin_url, &a->scheme, &a->hostname, &a->port) != 0) {
    aa_auth_free(a);
    snprintf(err, errlen, "%s: the source URL does not parse", key);
    return CEB_ECONFIG;
  }
  if (oauth) {
    int rc = http_oauth_client_new(&oc, &a->oauth, err, errlen);
    if (rc != CEB_OK) {
      aa_auth_free(a);
      return rc;
    }
  }
  *out = a;
  return CEB_OK;
}

int aa_auth_apply(aa_auth *a, CURL *easy, const char *url,
                  const aa_http_opts *o, uint64_t *gen, char *err,
                  size_t errlen) {
  *gen = 0;
  if (!a || !same_origin(a, url)) return 0;
  const char *token = a->static_token;
  if (a->oauth) {
    CURL *t = curl_easy_init();
    if (!t) {
      snprintf(err, errlen, "curl init failed");
      return -1;
    }
    int ok = aa_http_client_setup(t, o) == CURLE_OK;
    token = ok ? http_oauth_client_fetch(a->oauth, t, a->host->now_ms(a->inst),
                                         gen, err, errlen)
               : NULL;
    if (!ok) snprintf(err, errlen, "token endpoint: TLS setup failed");
    curl_easy_cleanup(t);
    if (!token) return -1;
  }
  /* Bearer through libcurl's auth, not a custom header: libcurl then
   * sends it to this host only, never after a redirect elsewhere. */
  curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
  curl_easy_setopt(easy, CURLOPT_XOAUTH2_BEARER, token);
  return 0;
}

int aa_auth_refused(aa_auth *a, uint64_t gen) {
  if (!a || !a->oauth || gen == 0) return 0;
  http_oauth_client_invalidate(a->oauth, gen);
  return 1;
}
