/* OAuth2 client credentials for callers on a thread of their own (the
 * asyncapi fetcher): the config reading both plugins share, and one
 * blocking token request on libcurl. The webhook sink performs the same
 * request in its event loop instead (plugins/http/http_out_request.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <ceb/status.h>

#include "http_body.h"
#include "http_oauth.h"

/* Token endpoint answers are small; a bigger one is not a token. */
#define MAX_TOKEN_RESPONSE (64 * 1024)

int http_oauth_config_read(const ceb_config *cfg, http_oauth_config *oc,
                           char *err, size_t errlen) {
  memset(oc, 0, sizeof *oc);
  oc->token_url = ceb_config_str(cfg, "oauth2.token_url");
  oc->client_id = ceb_config_str(cfg, "oauth2.client_id");
  oc->client_secret = ceb_config_str(cfg, "oauth2.client_secret");
  oc->private_key_path = ceb_config_str(cfg, "oauth2.private_key");
  oc->key_id = ceb_config_str(cfg, "oauth2.key_id");
  oc->scope = ceb_config_str(cfg, "oauth2.scope");
  oc->audience = ceb_config_str(cfg, "oauth2.audience");
  oc->refresh_margin_ms =
      ceb_config_duration_ms(cfg, "oauth2.refresh_margin", 60000);
  if (oc->token_url && *oc->token_url) return 1;
  if (oc->client_id || oc->client_secret || oc->private_key_path) {
    snprintf(err, errlen, "oauth2.* settings need oauth2.token_url");
    return -1;
  }
  return 0;
}

const char *http_oauth_client_fetch(http_oauth_client *c, CURL *easy,
                                    int64_t now_ms, uint64_t *generation,
                                    char *err, size_t errlen) {
  const char *tok = http_oauth_client_token(c, now_ms, generation);
  if (tok) return tok;
  char *form = NULL;
  const char *user = NULL, *password = NULL;
  int rc = http_oauth_client_request(c, now_ms, &form, &user, &password);
  if (rc != CEB_OK) {
    snprintf(err, errlen, "token request: %s", ceb_strerror(rc));
    return NULL;
  }
  http_body b = {.max = MAX_TOKEN_RESPONSE};
  curl_easy_setopt(easy, CURLOPT_URL, http_oauth_client_url(c));
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, form);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(form));
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, http_body_write);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &b);
  if (user) {
    curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(easy, CURLOPT_USERNAME, user);
    curl_easy_setopt(easy, CURLOPT_PASSWORD, password);
  }
  CURLcode cc = curl_easy_perform(easy);
  long status = 0;
  if (cc == CURLE_OK) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  /* The credentials leave the handle before anything else may use it. */
  curl_easy_setopt(easy, CURLOPT_USERNAME, NULL);
  curl_easy_setopt(easy, CURLOPT_PASSWORD, NULL);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, NULL);
  OPENSSL_cleanse(form, strlen(form));
  free(form);
  if (cc != CURLE_OK) {
    snprintf(err, errlen, "token endpoint: %s",
             b.too_large ? "response too large" : curl_easy_strerror(cc));
    free(b.data);
    return NULL;
  }
  rc =
      http_oauth_client_complete(c, status, b.data, b.len, now_ms, err, errlen);
  if (b.data) OPENSSL_cleanse(b.data, b.len);
  free(b.data);
  return rc == CEB_OK ? http_oauth_client_token(c, now_ms, generation) : NULL;
}
