/* The shared pieces of a source's input document: the JSON text a source
 * hands the host for its `map` program (include/ceb/plugin.h), one per
 * received message, built by the transport's own builder
 * (plugins/http/http_in_doc.c, plugins/kafka/kafka_doc.c,
 * plugins/mqtt/mqtt_doc.c). Every transport renders bytes (a body, a
 * value, a payload, a key, a header value) the same way, here:
 *
 *   payload: the bytes parsed as one JSON value (any: object, array,
 *            string, number, true, false, null) when the content type is
 *            a JSON one or absent and they parse, encoding "json";
 *            else the bytes as a string when they are UTF-8 (a NUL is
 *            kept: JSON writes it \u0000),
 *            encoding "text"; else their standard base64 (RFC 4648 with
 *            padding), encoding "base64".
 *   text:    the last two only (a key or a header value is never parsed).
 *
 * Documents are jansson objects until idoc_dump writes them compact. All
 * functions are reentrant; a document belongs to the thread building it.
 * The transports' fields are documented in docs/integration-guide.md
 * ("Input documents"). */
#ifndef INPUT_DOC_H
#define INPUT_DOC_H

#include <stddef.h>

#include <jansson.h>

/* Sets doc[field] to the payload rendering of len bytes and
 * doc[field "_encoding"] to "json", "text" or "base64". bytes NULL (a
 * Kafka tombstone, no body): both null. content_type NULL: no type was
 * given, JSON is tried. CEB_OK or CEB_ENOMEM. */
int idoc_set_payload(json_t *doc, const char *field, const void *bytes,
                     size_t len, const char *content_type);

/* A new JSON string of len bytes when they are UTF-8 (*base64 = 0; a NUL
 * is kept), else of their base64 (*base64 = 1). NULL on allocation
 * failure. The caller owns the reference. */
json_t *idoc_text(const void *bytes, size_t len, int *base64);

/* Adds a header-like pair to a map and a list, the two shapes every
 * transport's document gives its headers in: map[name] = value (a later
 * pair of the same name replaces an earlier one: the map is for the common
 * case of one value per name), and list gets {"name", "value"} appended
 * (every pair in order, with "encoding": "base64" when value is not text;
 * value NULL: a null value). map or list may be NULL. CEB_OK or
 * CEB_ENOMEM. */
int idoc_add_pair(json_t *map, json_t *list, const char *name,
                  const void *value, size_t len);

/* Sets doc[field] to a copy of str, or to null when str is NULL; a str that
 * is not UTF-8 becomes its base64 (as idoc_text). CEB_OK or CEB_ENOMEM. */
int idoc_set_str(json_t *doc, const char *field, const char *str);

/* Writes doc compact (no spaces, keys in insertion order). CEB_OK with *out
 * malloc'd and NUL-terminated (free with free()) and *len its length, or
 * CEB_ENOMEM. doc is not consumed. */
int idoc_dump(const json_t *doc, char **out, size_t *len);

/* idoc_set_payload then idoc_dump, with the payload last; a JSON payload
 * that ceb_json_valid accepts is written as it came (its bytes, spacing
 * and number spelling kept) instead of being parsed into doc and written
 * again: a 1 KiB body cost about 30 us that way, most of a mapped
 * request's own work. Same results and ownership as the two calls. */
int idoc_dump_payload(json_t *doc, const char *field, const void *bytes,
                      size_t len, const char *content_type, char **out,
                      size_t *out_len);

#endif
