/* The shared renderings of a source's input document (input_doc.h).
 * jansson does the work: json_loadb parses, json_stringn checks UTF-8 (it
 * refuses invalid sequences), json_dumpb writes; the SDK's base64 encodes. */
#include "input_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/codec.h>
#include <ceb/status.h>

json_t *idoc_text(const void *bytes, size_t len, int *base64) {
  *base64 = 0;
  json_t *s = json_stringn(len ? bytes : "", len);
  if (s) return s;
  /* Not UTF-8 (json_stringn also fails without memory: then so does the
   * base64 below, and the caller reports ENOMEM). */
  char *b64 = ceb_base64_encode(bytes, len);
  if (!b64) return NULL;
  *base64 = 1;
  s = json_string(b64);
  ceb_free(b64);
  return s;
}

/* doc[name] = v, consuming v; CEB_ENOMEM when v is NULL or the set fails. */
static int set_new(json_t *doc, const char *name, json_t *v) {
  return v && json_object_set_new(doc, name, v) == 0 ? CEB_OK : CEB_ENOMEM;
}

int idoc_set_payload(json_t *doc, const char *field, const void *bytes,
                     size_t len, const char *content_type) {
  char enc_name[64];
  if (snprintf(enc_name, sizeof enc_name, "%s_encoding", field) >=
      (int)sizeof enc_name)
    return CEB_EINVAL;
  if (!bytes)
    return set_new(doc, field, json_null()) == CEB_OK
               ? set_new(doc, enc_name, json_null())
               : CEB_ENOMEM;
  json_t *v = NULL;
  const char *enc = "json";
  /* Any JSON value, as a JSON text may be a scalar; a NUL escaped inside a
   * string (\u0000) is legal JSON. A parse failure is not an error: the
   * bytes are then given as they are. */
  if (ceb_media_type_is_json(content_type))
    v = json_loadb(bytes, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  if (!v) {
    int b64 = 0;
    v = idoc_text(bytes, len, &b64);
    enc = b64 ? "base64" : "text";
  }
  if (set_new(doc, field, v) != CEB_OK) return CEB_ENOMEM;
  return set_new(doc, enc_name, json_string(enc));
}

int idoc_add_pair(json_t *map, json_t *list, const char *name,
                  const void *value, size_t len) {
  int b64 = 0;
  json_t *v = value ? idoc_text(value, len, &b64) : json_null();
  int b64_name = 0;
  json_t *n = idoc_text(name, strlen(name), &b64_name);
  if (!v || !n) {
    json_decref(v);
    json_decref(n);
    return CEB_ENOMEM;
  }
  int rc = CEB_OK;
  /* A name that is not UTF-8 cannot be an object key: list only. */
  if (map && !b64_name && json_object_set(map, name, v) != 0) rc = CEB_ENOMEM;
  if (rc == CEB_OK && list) {
    json_t *e = json_object();
    if (!e || json_object_set(e, "name", n) || json_object_set(e, "value", v) ||
        (b64 && set_new(e, "encoding", json_string("base64")) != CEB_OK) ||
        (b64_name &&
         set_new(e, "name_encoding", json_string("base64")) != CEB_OK)) {
      json_decref(e);
      rc = CEB_ENOMEM;
    } else if (json_array_append_new(list, e)) { /* consumes e */
      rc = CEB_ENOMEM;
    }
  }
  json_decref(v);
  json_decref(n);
  return rc;
}

int idoc_set_str(json_t *doc, const char *field, const char *str) {
  if (!str) return set_new(doc, field, json_null());
  int b64 = 0;
  return set_new(doc, field, idoc_text(str, strlen(str), &b64));
}

int idoc_dump(const json_t *doc, char **out, size_t *len) {
  size_t need = json_dumpb(doc, NULL, 0, JSON_COMPACT);
  if (need == 0) return CEB_ENOMEM;
  char *buf = malloc(need + 1);
  if (!buf) return CEB_ENOMEM;
  if (json_dumpb(doc, buf, need, JSON_COMPACT) != need) {
    free(buf);
    return CEB_ENOMEM;
  }
  buf[need] = '\0';
  *out = buf;
  *len = need;
  return CEB_OK;
}
