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
  /* one pass (json_dumpb would need a second one to size the buffer);
   * jansson allocates with malloc */
  char *buf = json_dumps(doc, JSON_COMPACT);
  if (!buf) return CEB_ENOMEM;
  *out = buf;
  *len = strlen(buf);
  return CEB_OK;
}

int idoc_dump_payload(json_t *doc, const char *field, const void *bytes,
                      size_t len, const char *content_type, char **out,
                      size_t *out_len) {
  if (!bytes || !ceb_media_type_is_json(content_type) ||
      !ceb_json_valid(bytes, len)) {
    int rc = idoc_set_payload(doc, field, bytes, len, content_type);
    return rc == CEB_OK ? idoc_dump(doc, out, out_len) : rc;
  }
  char *head = NULL;
  size_t hl = 0;
  int rc = idoc_dump(doc, &head, &hl);
  if (rc != CEB_OK) return rc;
  /* head is "{...}": drop its '}' and append the two members */
  size_t fl = strlen(field);
  size_t n = hl - 1 + 1 + fl + 3 + len + 2 + fl + 20 + 1;
  char *buf = malloc(n + 1);
  if (!buf) {
    free(head);
    return CEB_ENOMEM;
  }
  size_t at = hl - 1;
  memcpy(buf, head, at);
  free(head);
  if (at > 1) buf[at++] = ',';
  at += (size_t)sprintf(buf + at, "\"%s\":", field);
  memcpy(buf + at, bytes, len);
  at += len;
  at += (size_t)sprintf(buf + at, ",\"%s_encoding\":\"json\"}", field);
  *out = buf;
  *out_len = at;
  return CEB_OK;
}
