/* Binary content mode shared by the HTTP, Kafka and MQTT 5 bindings:
 * attributes travel as (prefixed) headers, data as the raw body.
 *
 * Round trips. JSON format -> binary mode -> JSON format is lossless except:
 * - typed extensions (integer, boolean) come back as strings, since headers
 *   carry no type (CloudEvents defines no typing for them);
 * - JSON data without datacontenttype comes back with an explicit
 *   "application/json" (implied by the JSON format; spec example 5);
 * - the data kind is chosen from the content type (cebi_data_kind_for):
 *   JSON media types give JSON data when the body parses, else BINARY (kept
 *   byte for byte, so the JSON format renders data_base64); textual types
 *   (text/..., XML, or a charset parameter) give TEXT when the body is UTF-8;
 *   everything else is BINARY. Text data with a non-textual type such as
 *   application/foo therefore comes back as data_base64 with the same bytes.
 * Structured mode is lossless. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int attr_from_header(const cebi_binding *b, ceb_event *ev,
                            const ceb_header *h, ceb_error *err) {
  size_t plen = strlen(b->prefix);
  const char *rest = h->name + plen;
  size_t rlen = strlen(rest);
  if (rlen == 0)
    return cebi_fail(err, CEB_EINVAL, "binding.header.name",
                     "%s header '%.64s' names no attribute", b->name, h->name);
  if (rlen > CEB_ATTR_NAME_MAX)
    return cebi_fail(err, CEB_EINVAL, "binding.header.name",
                     "%s header name '%.64s...' is too long", b->name, h->name);
  char name[CEB_ATTR_NAME_MAX + 1];
  for (size_t i = 0; i <= rlen; i++) {
    char c = rest[i];
    name[i] =
        (b->fold_case && c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
  }
  if (strcmp(name, "datacontenttype") == 0)
    return CEB_OK; /* the content type travels in its own header/property */
  if (ceb_event_get(ev, name))
    return cebi_fail(err, CEB_EINVAL, "binding.header.duplicate",
                     "%s attribute '%s' appears twice", b->name, name);
  if (strlen(h->value) != h->value_len ||
      !cebi_utf8_valid(h->value, h->value_len))
    return cebi_fail(err, CEB_EINVAL, "binding.header.value",
                     "%s header '%.64s' is not valid UTF-8 text", b->name,
                     h->name);
  char *decoded = NULL;
  const char *value = h->value;
  if (b->percent) {
    int rc = ceb_percent_decode(h->value, &decoded);
    if (rc == CEB_EINVAL)
      return cebi_fail(err, rc, "binding.header.percent",
                       "%s header '%.64s' has a malformed percent-encoding",
                       b->name, h->name);
    if (rc != CEB_OK) return cebi_fail(err, rc, "ce.nomem", "out of memory");
    value = decoded;
  }
  int rc = CEB_OK;
  if (strcmp(name, "specversion") == 0 && strcmp(value, "1.0") != 0)
    rc = cebi_fail(err, CEB_EINVAL, "ce.specversion.unsupported",
                   "specversion '%.32s' is not supported (only 1.0)", value);
  else if ((rc = ceb_event_set(ev, name, value)) == CEB_EINVAL)
    rc = cebi_fail(err, rc, "ce.attr.too_long",
                   "attribute '%s': value too long", name);
  else if (rc != CEB_OK)
    rc = cebi_fail(err, rc, "ce.nomem", "out of memory");
  free(decoded);
  return rc;
}

int cebi_binary_decode(const cebi_binding *b, const ceb_headers *headers,
                       const char *content_type, const void *body, size_t len,
                       ceb_event **out, ceb_error *err) {
  *out = NULL;
  ceb_event *ev = ceb_event_new();
  if (!ev) return cebi_fail(err, CEB_ENOMEM, "ce.nomem", "out of memory");
  size_t plen = strlen(b->prefix);
  int rc = CEB_OK;
  for (size_t i = 0; headers && i < headers->count && rc == CEB_OK; i++) {
    const ceb_header *h = &headers->items[i];
    if (b->skip && strcasecmp(h->name, b->skip) == 0) continue;
    if (strncasecmp(h->name, b->prefix, plen) != 0) continue;
    rc = attr_from_header(b, ev, h, err);
  }
  if (rc == CEB_OK && content_type) {
    while (*content_type == ' ' || *content_type == '\t')
      content_type++;
    if ((rc = ceb_event_set(ev, "datacontenttype", content_type)) != CEB_OK)
      cebi_fail(err, rc, "ce.attr.too_long", "content type too long");
  }
  if (rc == CEB_OK && len) {
    int strict = 0;
    ceb_data_kind kind = cebi_data_kind_for(content_type, body, len, &strict);
    if (kind == CEB_DATA_JSON && strict) {
      /* parsed just now: validation and the journal's encode need not */
      char *copy = cebi_memdup(body, len);
      rc = copy ? cebi_event_take_json_data(ev, copy, len) : CEB_ENOMEM;
      if (rc != CEB_OK) free(copy);
    } else {
      rc = ceb_event_set_data(ev, body, len, kind);
    }
    if (rc != CEB_OK) cebi_fail(err, rc, "ce.nomem", "out of memory");
  }
  if (rc != CEB_OK) {
    ceb_event_unref(ev);
    return rc;
  }
  *out = ev;
  return CEB_OK;
}

int cebi_binary_encode(const cebi_binding *b, const ceb_event *ev,
                       ceb_headers *headers, char **content_type, char **body,
                       size_t *len) {
  *content_type = NULL;
  *body = NULL;
  *len = 0;
  size_t n = ceb_event_attr_count(ev);
  size_t plen = strlen(b->prefix);
  size_t first = headers->count;
  int rc = CEB_OK;
  for (size_t i = 0; i < n && rc == CEB_OK; i++) {
    const char *name, *value;
    ceb_event_attr_at(ev, i, &name, &value, NULL);
    if (strcmp(name, "datacontenttype") == 0) continue;
    char hname[CEB_ATTR_NAME_MAX + 16];
    if (plen + strlen(name) >= sizeof hname) {
      rc = CEB_EINVAL;
      break;
    }
    memcpy(hname, b->prefix, plen);
    strcpy(hname + plen, name);
    char *enc = b->percent ? ceb_percent_encode(value) : NULL;
    if (b->percent && !enc) {
      rc = CEB_ENOMEM;
      break;
    }
    const char *v = enc ? enc : value;
    rc = ceb_headers_add(headers, hname, v, strlen(v));
    free(enc);
  }
  const char *ct = ceb_event_get(ev, "datacontenttype");
  if (rc == CEB_OK && !ct && ceb_event_data_kind(ev) == CEB_DATA_JSON)
    ct = "application/json"; /* implied by the JSON format; made explicit */
  if (rc == CEB_OK && ct && !(*content_type = strdup(ct))) rc = CEB_ENOMEM;
  size_t dlen;
  const void *data = ceb_event_data(ev, &dlen);
  if (rc == CEB_OK && data) {
    if (!(*body = cebi_memdup(data, dlen)))
      rc = CEB_ENOMEM;
    else
      *len = dlen;
  }
  if (rc != CEB_OK) {
    /* leave the caller's list as it was */
    for (size_t i = first; i < headers->count; i++) {
      free(headers->items[i].name);
      free(headers->items[i].value);
    }
    headers->count = first;
    free(*content_type);
    free(*body);
    *content_type = *body = NULL;
    *len = 0;
  }
  return rc;
}
