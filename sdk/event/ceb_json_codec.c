/* JSON event format (CloudEvents 1.0.2 json-format.md) on jansson.
 *
 * Decoding rules beyond the schema: specversion must be "1.0"; context
 * attributes are JSON strings (null = unset); extensions are strings,
 * integers or booleans (null = unset; reals, objects and arrays are errors);
 * `data` and `data_base64` together are an error. `data: null` counts as no
 * data. Duplicate member names are rejected. */
#include "ceb_event_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_LOAD_FLAGS (JSON_REJECT_DUPLICATES)

int cebi_json_dump(json_t *value, char **out, size_t *out_len) {
  size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17);
  size_t n = json_dumpb(value, NULL, 0, flags);
  if (n == 0) return CEB_EINVAL;
  char *buf = malloc(n + 1);
  if (!buf) return CEB_ENOMEM;
  if (json_dumpb(value, buf, n, flags) != n) {
    free(buf);
    return CEB_EINTERNAL;
  }
  buf[n] = '\0';
  *out = buf;
  if (out_len) *out_len = n;
  return CEB_OK;
}

static int set_attr(ceb_event *ev, const char *name, ceb_attr_type type,
                    const char *value, ceb_error *err) {
  int rc = ceb_event_set_typed(ev, name, type, value);
  if (rc == CEB_EINVAL)
    return cebi_fail(err, CEB_EINVAL, "ce.attr.too_long",
                     "attribute '%.64s': name or value too long", name);
  if (rc != CEB_OK) return cebi_fail(err, rc, "ce.nomem", "out of memory");
  return CEB_OK;
}

static int decode_member(ceb_event *ev, const char *name, json_t *v,
                         ceb_error *err) {
  if (json_is_null(v))
    return CEB_OK; /* null = unset, for context attributes and extensions */
  if (ceb_attr_is_context(name)) {
    if (!json_is_string(v))
      return cebi_fail(err, CEB_EINVAL, "ce.attr.type",
                       "context attribute '%s' must be a JSON string", name);
    if (strcmp(name, "specversion") == 0 &&
        strcmp(json_string_value(v), "1.0") != 0)
      return cebi_fail(err, CEB_EINVAL, "ce.specversion.unsupported",
                       "specversion '%.32s' is not supported (only 1.0)",
                       json_string_value(v));
    return set_attr(ev, name, CEB_ATTR_STRING, json_string_value(v), err);
  }
  char num[32];
  switch (json_typeof(v)) {
  case JSON_STRING:
    return set_attr(ev, name, CEB_ATTR_STRING, json_string_value(v), err);
  case JSON_TRUE:
  case JSON_FALSE:
    return set_attr(ev, name, CEB_ATTR_BOOLEAN,
                    json_is_true(v) ? "true" : "false", err);
  case JSON_INTEGER:
    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return set_attr(ev, name, CEB_ATTR_INTEGER, num, err);
  case JSON_REAL:
    return cebi_fail(err, CEB_EINVAL, "ce.attr.type",
                     "extension '%.64s' must be an integer, not a decimal",
                     name);
  default:
    return cebi_fail(err, CEB_EINVAL, "ce.attr.type",
                     "extension '%.64s' must be a string, integer or boolean",
                     name);
  }
}

static int decode_data(ceb_event *ev, json_t *data, json_t *b64,
                       ceb_error *err) {
  if (b64) {
    if (!json_is_string(b64))
      return cebi_fail(err, CEB_EINVAL, "ce.data_base64.type",
                       "data_base64 must be a JSON string");
    unsigned char *bytes;
    size_t n;
    int rc = ceb_base64_decode(json_string_value(b64), json_string_length(b64),
                               &bytes, &n);
    if (rc == CEB_EINVAL)
      return cebi_fail(err, rc, "ce.data_base64.invalid",
                       "data_base64 is not valid base64 (RFC 4648)");
    if (rc != CEB_OK) return cebi_fail(err, rc, "ce.nomem", "out of memory");
    rc = ceb_event_set_data(ev, bytes, n, CEB_DATA_BINARY);
    free(bytes);
    return rc == CEB_OK ? rc : cebi_fail(err, rc, "ce.nomem", "out of memory");
  }
  if (!data) return CEB_OK;
  const char *ct = ceb_event_get(ev, "datacontenttype");
  int rc;
  if (json_is_string(data) && !ceb_media_type_is_json(ct)) {
    rc = ceb_event_set_data(ev, json_string_value(data),
                            json_string_length(data), CEB_DATA_TEXT);
  } else {
    char *text;
    size_t n;
    rc = cebi_json_dump(data, &text, &n);
    if (rc == CEB_OK) rc = cebi_event_take_json_data(ev, text, n);
  }
  return rc == CEB_OK ? rc : cebi_fail(err, rc, "ce.nomem", "out of memory");
}

int cebi_json_decode_object(json_t *obj, ceb_event **out, ceb_error *err) {
  *out = NULL;
  if (!json_is_object(obj))
    return cebi_fail(err, CEB_EINVAL, "ce.json.not_object",
                     "a CloudEvent in JSON format must be a JSON object");
  json_t *data = json_object_get(obj, "data");
  json_t *b64 = json_object_get(obj, "data_base64");
  if (json_is_null(data)) data = NULL;
  if (json_is_null(b64)) b64 = NULL;
  if (data && b64)
    return cebi_fail(err, CEB_EINVAL, "ce.data.both",
                     "an event must not have both data and data_base64");
  ceb_event *ev = ceb_event_new();
  if (!ev) return cebi_fail(err, CEB_ENOMEM, "ce.nomem", "out of memory");
  const char *name;
  json_t *v;
  int rc = CEB_OK;
  json_object_foreach(obj, name, v) {
    if (strcmp(name, "data") == 0 || strcmp(name, "data_base64") == 0) continue;
    if (!*name) {
      rc = cebi_fail(err, CEB_EINVAL, "ce.attr.name", "empty attribute name");
      break;
    }
    if ((rc = decode_member(ev, name, v, err)) != CEB_OK) break;
  }
  if (rc == CEB_OK) rc = decode_data(ev, data, b64, err);
  if (rc != CEB_OK) {
    ceb_event_unref(ev);
    return rc;
  }
  *out = ev;
  return CEB_OK;
}

/* The fast path: the attributes without the data member go through jansson,
 * the data value (an object or array) is copied as it is. Returns CEB_OK,
 * or -1 when the text does not suit it; then the caller parses the whole
 * text, which also gives the error message for malformed input. */
/* Gives *out the data value's bytes as they are; on failure frees *out. */
static int take_data(const char *buf, const cebi_json_split *sp,
                     ceb_event **out, ceb_error *err) {
  size_t dlen = sp->value_end - sp->value_start;
  char *text = cebi_memdup(buf + sp->value_start, dlen);
  if (!text || cebi_event_take_json_data(*out, text, dlen) != CEB_OK) {
    free(text);
    ceb_event_unref(*out);
    *out = NULL;
    return cebi_fail(err, CEB_ENOMEM, "ce.nomem", "out of memory");
  }
  return CEB_OK;
}

static int decode_split(const char *buf, size_t len, int trusted,
                        ceb_event **out, ceb_error *err) {
  cebi_json_split sp;
  if (!cebi_json_split_data(buf, len, &sp)) return -1;
  char c = buf[sp.value_start];
  if (c != '{' && c != '[') return -1; /* strings may be text data */
  size_t dlen = sp.value_end - sp.value_start;
  if (!trusted && !cebi_json_valid(buf + sp.value_start, dlen)) {
    json_t *data =
        json_loadb(buf + sp.value_start, dlen, JSON_LOAD_FLAGS, NULL);
    if (!data) return -1;
    json_decref(data);
  }
  if (cebi_json_attrs_decode(buf, len, sp.value_start, sp.value_end, out) ==
      CEB_OK)
    return take_data(buf, &sp, out, err);
  size_t alen = len - (sp.cut_end - sp.cut_start);
  char *attrs = malloc(alen + 1);
  if (!attrs) return cebi_fail(err, CEB_ENOMEM, "ce.nomem", "out of memory");
  memcpy(attrs, buf, sp.cut_start);
  memcpy(attrs + sp.cut_start, buf + sp.cut_end, len - sp.cut_end);
  attrs[alen] = '\0';
  json_t *obj = json_loadb(attrs, alen, JSON_LOAD_FLAGS, NULL);
  free(attrs);
  if (!obj) return -1;
  int rc = CEB_EINVAL;
  if (!json_object_get(obj, "data_base64")) /* both: the full path says so */
    rc = cebi_json_decode_object(obj, out, err);
  json_decref(obj);
  if (rc == CEB_EINVAL && !*out) return -1;
  if (rc != CEB_OK) return rc;
  return take_data(buf, &sp, out, err);
}

static int decode_text(const char *buf, size_t len, int trusted,
                       ceb_event **out, ceb_error *err) {
  ceb_error_clear(err);
  if (!out || (!buf && len))
    return cebi_fail(err, CEB_EINVAL, "ce.arg", "invalid argument");
  *out = NULL;
  if (buf) {
    int rc = decode_split(buf, len, trusted, out, err);
    if (rc != -1) return rc;
    ceb_error_clear(err);
    /* no data member, or not one the split takes: attributes only */
    if (cebi_json_attrs_decode(buf, len, SIZE_MAX, SIZE_MAX, out) == CEB_OK)
      return CEB_OK;
  }
  json_error_t jerr;
  json_t *obj = json_loadb(buf ? buf : "", len, JSON_LOAD_FLAGS, &jerr);
  if (!obj)
    return cebi_fail(err, CEB_EINVAL, "ce.json.malformed",
                     "malformed JSON at line %d column %d: %s", jerr.line,
                     jerr.column, jerr.text);
  int rc = cebi_json_decode_object(obj, out, err);
  json_decref(obj);
  return rc;
}

int ceb_json_decode(const char *buf, size_t len, ceb_event **out,
                    ceb_error *err) {
  return decode_text(buf, len, 0, out, err);
}

int ceb_json_decode_trusted(const char *buf, size_t len, ceb_event **out,
                            ceb_error *err) {
  return decode_text(buf, len, 1, out, err);
}

static json_t *attr_value(const char *value, ceb_attr_type type, int ctx) {
  if (!ctx && type == CEB_ATTR_BOOLEAN &&
      (!strcmp(value, "true") || !strcmp(value, "false")))
    return json_boolean(value[0] == 't');
  if (!ctx && type == CEB_ATTR_INTEGER) {
    char *end;
    errno = 0;
    long long n = strtoll(value, &end, 10);
    if (*value && !*end && errno == 0) return json_integer((json_int_t)n);
  }
  /* Anything else (including a malformed typed value) stays a string so that
   * nothing is lost; validation reports the bad value. */
  return json_string(value);
}

static int encode_data(const ceb_event *ev, json_t *obj, int with_data) {
  if (!with_data) return CEB_OK;
  size_t len;
  const char *data = ceb_event_data(ev, &len);
  json_t *v = NULL;
  const char *key = "data";
  switch (ceb_event_data_kind(ev)) {
  case CEB_DATA_NONE:
    return CEB_OK;
  case CEB_DATA_JSON:
    v = json_loadb(data, len, JSON_DECODE_ANY, NULL);
    break;
  case CEB_DATA_TEXT:
    v = json_stringn(data, len); /* NULL for invalid UTF-8 */
    break;
  case CEB_DATA_BINARY: {
    char *b64 = ceb_base64_encode(data, len);
    if (!b64) return CEB_ENOMEM;
    v = json_string(b64);
    free(b64);
    key = "data_base64";
    break;
  }
  }
  if (!v) return CEB_EINVAL;
  return json_object_set_new(obj, key, v) == 0 ? CEB_OK : CEB_ENOMEM;
}

static json_t *encode_object(const ceb_event *ev, int *status, int with_data) {
  json_t *obj = json_object();
  if (!obj) {
    *status = CEB_ENOMEM;
    return NULL;
  }
  size_t n = ceb_event_attr_count(ev);
  for (size_t i = 0; i < n; i++) {
    const char *name, *value;
    ceb_attr_type type;
    ceb_event_attr_at(ev, i, &name, &value, &type);
    json_t *v = attr_value(value, type, ceb_attr_is_context(name));
    /* json_string fails on invalid UTF-8 */
    if (!v || json_object_set_new(obj, name, v) != 0) {
      json_decref(obj);
      *status = CEB_EINVAL;
      return NULL;
    }
  }
  int rc = encode_data(ev, obj, with_data);
  if (rc != CEB_OK) {
    json_decref(obj);
    *status = rc;
    return NULL;
  }
  *status = CEB_OK;
  return obj;
}

json_t *cebi_json_encode_object(const ceb_event *ev, int *status) {
  return encode_object(ev, status, 1);
}

int ceb_json_encode(const ceb_event *ev, char **out, size_t *out_len) {
  if (!ev || !out) return CEB_EINVAL;
  *out = NULL;
  /* The direct writer (ceb_json_write.c) unless data is JSON text that
   * was never checked (jansson parses it), or an attribute is named like a
   * data member (invalid, but representable: the object path lets the
   * data member replace it). */
  if ((ceb_event_data_kind(ev) != CEB_DATA_JSON ||
       cebi_event_json_trusted(ev)) &&
      !ceb_event_get(ev, "data") && !ceb_event_get(ev, "data_base64"))
    return cebi_json_write(ev, out, out_len);
  int rc;
  json_t *obj = cebi_json_encode_object(ev, &rc);
  if (!obj) return rc;
  rc = cebi_json_dump(obj, out, out_len);
  json_decref(obj);
  return rc;
}
