/* Media types (RFC 2046 / RFC 9110 syntax): validation, JSON detection,
 * CloudEvents mode selection and the binary-mode data kind. */
#include "ceb_event_internal.h"

#include <ceb/validate.h>

#include <jansson.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar. */
static int is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9'))
    return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static const char *skip_ows(const char *p) {
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

static const char *skip_token(const char *p) {
  while (is_tchar((unsigned char)*p))
    p++;
  return p;
}

int ceb_valid_media_type(const char *type) {
  if (!type) return 0;
  const char *p = type, *q = skip_token(p);
  if (q == p || *q != '/') return 0;
  p = q + 1;
  q = skip_token(p);
  if (q == p) return 0;
  p = skip_ows(q);
  while (*p == ';') {
    p = skip_ows(p + 1);
    q = skip_token(p);
    if (q == p || *q != '=') return 0;
    p = q + 1;
    if (*p == '"') {
      for (p++; *p != '"'; p++) {
        if (!*p) return 0;
        if (*p == '\\' && !*++p) return 0;
      }
      p++;
    } else {
      q = skip_token(p);
      if (q == p) return 0;
      p = q;
    }
    p = skip_ows(p);
  }
  return *p == '\0';
}

/* Copies the lowercased "type/subtype" of content_type into buf. */
static int essence(const char *content_type, char *buf, size_t size) {
  const char *p = skip_ows(content_type);
  size_t n = 0;
  while (*p && *p != ';' && *p != ' ' && *p != '\t') {
    if (n + 1 >= size) return 0;
    char c = *p++;
    buf[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
  }
  buf[n] = '\0';
  return n > 0;
}

int cebi_media_type_is(const char *content_type, const char *want) {
  char buf[128];
  return content_type && essence(content_type, buf, sizeof buf) &&
         strcmp(buf, want) == 0;
}

ceb_mode ceb_http_mode_of(const char *content_type) {
  if (cebi_media_type_is(content_type, "application/cloudevents+json"))
    return CEB_MODE_STRUCTURED;
  if (cebi_media_type_is(content_type, "application/cloudevents-batch+json"))
    return CEB_MODE_BATCH;
  return CEB_MODE_BINARY;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int ceb_media_type_is_json(const char *content_type) {
  char buf[128];
  if (!content_type) return 1;
  if (!essence(content_type, buf, sizeof buf)) return 0;
  return strcmp(buf, "application/json") == 0 ||
         strcmp(buf, "text/json") == 0 || ends_with(buf, "+json");
}

/* Textual: text/..., XML types, or an explicit charset parameter. */
static int media_type_is_text(const char *content_type) {
  char buf[128];
  if (!content_type || !essence(content_type, buf, sizeof buf)) return 0;
  if (strncmp(buf, "text/", 5) == 0 || ends_with(buf, "/xml") ||
      ends_with(buf, "+xml"))
    return 1;
  return strcasestr(content_type, "charset=") != NULL;
}

ceb_data_kind cebi_data_kind_for(const char *content_type, const void *body,
                                 size_t len, int *strict) {
  if (strict) *strict = 0;
  if (len == 0) return CEB_DATA_NONE;
  if (content_type && ceb_media_type_is_json(content_type)) {
    /* strict (no duplicate member names anywhere) is what every reader of
     * the journal accepts, so such data can be marked trusted; duplicates
     * are rare and then cost a second, lenient parse */
    if (cebi_json_valid(body, len)) {
      if (strict) *strict = 1;
      return CEB_DATA_JSON;
    }
    json_t *j =
        json_loadb(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    if (j) {
      if (strict) *strict = 1;
    } else {
      j = json_loadb(body, len, JSON_DECODE_ANY, NULL);
    }
    if (j) {
      json_decref(j);
      return CEB_DATA_JSON;
    }
    return CEB_DATA_BINARY;
  }
  if (media_type_is_text(content_type) && cebi_utf8_valid(body, len))
    return CEB_DATA_TEXT;
  return CEB_DATA_BINARY;
}
