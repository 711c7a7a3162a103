/* Callback URL checks (http_callback.h). Parsed with libcurl's URL API, the
 * parser the sink sends with, so that what is checked is what is sent. */
#include "http_callback.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <ceb/status.h>
#include <curl/curl.h>

static int loopback_host(const char *host) {
  /* curl gives an IPv6 literal in brackets */
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "[::1]") == 0 ||
         strcasecmp(host, "localhost") == 0;
}

int http_callback_url_check(const char *url, char *why, size_t whylen) {
  size_t n = url ? strlen(url) : 0;
  if (n == 0) {
    snprintf(why, whylen, "empty");
    return CEB_EINVAL;
  }
  if (n > HTTP_CALLBACK_URL_MAX) {
    snprintf(why, whylen, "longer than %d bytes", HTTP_CALLBACK_URL_MAX);
    return CEB_EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)url[i];
    if (c <= 0x20 || c >= 0x7f) {
      snprintf(why, whylen,
               "contains a control character, a space or a non-ASCII byte "
               "(percent-encode it)");
      return CEB_EINVAL;
    }
  }
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *user = NULL, *frag = NULL;
  int rc = CEB_EINVAL;
  if (!u) {
    snprintf(why, whylen, "out of memory");
    return CEB_ENOMEM;
  }
  if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
    snprintf(why, whylen, "not an absolute URL");
  } else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
    snprintf(why, whylen, "must not carry user information");
  } else if (curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0) == CURLUE_OK) {
    snprintf(why, whylen, "must not carry a fragment");
  } else if (strcasecmp(scheme, "https") == 0) {
    rc = CEB_OK;
  } else if (strcasecmp(scheme, "http") == 0 && loopback_host(host)) {
    rc = CEB_OK;
  } else if (strcasecmp(scheme, "http") == 0) {
    snprintf(why, whylen,
             "http is allowed only to a loopback address; use "
             "https");
  } else {
    snprintf(why, whylen, "scheme must be https");
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(user);
  curl_free(frag);
  curl_url_cleanup(u);
  return rc;
}
