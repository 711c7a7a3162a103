/* Helpers shared between the SDK's event, codec and validation files.
 * Everything here is named cebi_* and stays local to libceb (sdk/ceb.map). */
#ifndef CEB_EVENT_INTERNAL_H
#define CEB_EVENT_INTERNAL_H

#include <ceb/codec.h>
#include <ceb/event.h>
#include <ceb/status.h>

#include <stddef.h>
#include <stdint.h>

/* Fills err (may be NULL) with status, code and a printf-style message;
 * returns status so callers can `return cebi_fail(...)`. */
int cebi_fail(ceb_error *err, int status, const char *code, const char *fmt,
              ...) __attribute__((format(printf, 4, 5)));

/* 1 when the len bytes are well-formed UTF-8 (no overlongs, no surrogates)
 * without NUL bytes. */
int cebi_utf8_valid(const void *buf, size_t len);

/* The CloudEvents "String" rule on a NUL-terminated attribute value
 * (ceb_ce_string.c): CEBI_STR_OK, or what the first offending character
 * is, with its code point in *cp_out (0 for bad UTF-8) and its byte offset
 * in *at_out (either may be NULL). Pure; any thread. */
typedef enum cebi_str_fault {
  CEBI_STR_OK = 0,
  CEBI_STR_CONTROL,   /* U+0000-U+001F, U+007F-U+009F */
  CEBI_STR_SURROGATE, /* U+D800-U+DFFF (CESU-8 bytes) */
  CEBI_STR_NONCHAR,   /* U+FDD0-U+FDEF, U+xFFFE, U+xFFFF */
  CEBI_STR_UTF8       /* not well-formed UTF-8 */
} cebi_str_fault;
cebi_str_fault cebi_ce_string_check(const char *value, uint32_t *cp_out,
                                    size_t *at_out);

/* Case-insensitive comparison of the media type's "type/subtype" (parameters
 * and surrounding whitespace ignored) with `essence`. */
int cebi_media_type_is(const char *content_type, const char *essence);

/* The event of a JSON object text whose data member (already checked) is
 * text[data_start, data_end), with the attributes read directly: CEB_OK and
 * *out (without data), or -1 when the jansson path must decide (see
 * ceb_json_attrs.c for what it leaves to it). */
int cebi_json_attrs_decode(const char *text, size_t len, size_t data_start,
                           size_t data_end, ceb_event **out);
/* 1 when jansson (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES) accepts the
 * text; 0 when not, or not sure (then ask jansson). ceb_json_valid.c. */
int cebi_json_valid(const void *text, size_t len);

/* The data kind a protocol body gets in binary mode: JSON when the content
 * type is JSON and the body parses as one JSON value; TEXT when the content
 * type is textual (text/..., XML, or a charset parameter) and the body is
 * valid UTF-8; otherwise BINARY. An empty body is NONE. *strict (may be
 * NULL) is 1 for JSON without duplicate member names. */
ceb_data_kind cebi_data_kind_for(const char *content_type, const void *body,
                                 size_t len, int *strict);

/* Binary-mode mapping shared by HTTP, Kafka and MQTT 5.
 * decode: every header whose name starts with `prefix` (case-insensitive;
 * "" takes every header) becomes the attribute named by the rest, lowercased
 * when `fold_case`; values are percent-decoded when `percent`. The header
 * named `skip` (may be NULL) and any "datacontenttype" attribute header are
 * ignored: content_type (may be NULL) gives datacontenttype. */
typedef struct cebi_binding {
  const char *prefix;
  int percent;
  int fold_case;
  const char *skip;
  const char *name; /* binding name for messages: "http", "kafka", "mqtt" */
} cebi_binding;

int cebi_binary_decode(const cebi_binding *b, const ceb_headers *headers,
                       const char *content_type, const void *body, size_t len,
                       ceb_event **out, ceb_error *err);
/* encode: appends prefixed headers for every attribute but datacontenttype;
 * *content_type is datacontenttype, or application/json for JSON data without
 * one, or NULL; *body is a copy of the data (NULL when none). Free both with
 * ceb_free. */
int cebi_binary_encode(const cebi_binding *b, const ceb_event *ev,
                       ceb_headers *headers, char **content_type, char **body,
                       size_t *len);

/* JSON format on a parsed jansson object (used by the batch codec). */
struct json_t;
int cebi_json_decode_object(struct json_t *obj, ceb_event **out,
                            ceb_error *err);
/* New reference to a JSON object for ev; NULL with *status set on error. */
struct json_t *cebi_json_encode_object(const ceb_event *ev, int *status);
/* Serialises a jansson value compactly into a malloc'd NUL-terminated buffer.
 */
int cebi_json_dump(struct json_t *value, char **out, size_t *out_len);

/* Sets JSON data from text known to be one valid JSON value (dumped by
 * cebi_json_dump, or a value jansson accepted, cut from the input),
 * NUL-terminated at len, taking ownership of text, and marks it trusted:
 * validation and the JSON encoder then use the text as is instead of parsing it
 * again. Any later ceb_event_set_data clears the mark; clones keep it. */
int cebi_event_take_json_data(ceb_event *ev, char *text, size_t len);
/* The JSON format of ev without a jansson tree (ceb_json_write.c): the
 * same bytes as a compact dump of cebi_json_encode_object. JSON data must
 * be trusted; no attribute may be named "data" or "data_base64". */
int cebi_json_write(const ceb_event *ev, char **out, size_t *out_len);
/* 1 when ev holds trusted JSON data (see above). */
int cebi_event_json_trusted(const ceb_event *ev);
/* ceb_validate.c: records that ev's current content has no CloudEvents
 * error (ceb_event_checked() reads it; every change clears it). */
void cebi_event_mark_ce_valid(const ceb_event *ev);

/* Where the top-level "data" member is in a JSON object text: the value's
 * bytes [value_start, value_end) and the bytes [cut_start, cut_end) whose
 * removal leaves the object without it (the member and one comma). */
typedef struct cebi_json_split {
  size_t value_start, value_end;
  size_t cut_start, cut_end;
} cebi_json_split;
/* 1 when s (n bytes) is an object with exactly one "data" member that the
 * scanner could delimit; 0 otherwise (no data, an escaped key, malformed or
 * too deep text): then parse the whole text. Delimits only; validating the
 * pieces is the caller's job. */
int cebi_json_split_data(const char *s, size_t n, cebi_json_split *out);

/* Copies len bytes into a new NUL-terminated malloc'd buffer. */
char *cebi_memdup(const void *p, size_t len);

#endif
