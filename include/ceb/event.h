/* cebridge public SDK: the one in-memory CloudEvent.
 *
 * Ownership: an event is reference counted. ceb_event_new() returns a
 * reference owned by the caller; ceb_event_unref() drops it. Whoever holds the
 * only reference may mutate the event; once an event is shared (submitted to
 * the host, or handed to a sink in ceb_delivery) it is immutable and may be
 * read from any thread. Reference counting is atomic.
 *
 * Attributes are kept in their canonical string form (CloudEvents 1.0
 * "type system" string encoding) with their type, so every codec can render
 * them losslessly. Context attributes have fixed types; extensions decoded
 * from the JSON format keep the JSON type (boolean, integer, string); from
 * protocol headers they are strings. Data is kept as bytes plus a kind that
 * tells how the JSON format must render it. */
#ifndef CEB_EVENT_H
#define CEB_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ceb_event ceb_event;

typedef enum ceb_attr_type {
  CEB_ATTR_STRING = 0,
  CEB_ATTR_BOOLEAN = 1, /* "true" | "false" */
  CEB_ATTR_INTEGER = 2, /* decimal, 32-bit signed range */
  CEB_ATTR_BINARY = 3,  /* base64 text */
  CEB_ATTR_URI = 4,
  CEB_ATTR_URI_REF = 5,
  CEB_ATTR_TIMESTAMP = 6 /* RFC 3339 */
} ceb_attr_type;

typedef enum ceb_data_kind {
  CEB_DATA_NONE = 0,   /* no data */
  CEB_DATA_BINARY = 1, /* opaque bytes: JSON format renders data_base64 */
  CEB_DATA_TEXT = 2,   /* UTF-8 text: JSON format renders a JSON string */
  CEB_DATA_JSON = 3    /* the bytes are one JSON value: JSON format embeds it */
} ceb_data_kind;

/* Longest attribute name / value the SDK accepts (the NL GOV profile limits
 * names to 20; CloudEvents itself sets no limit, we keep a sane one). The
 * value bound is also the longest event id any source can journal, and so
 * the bound of the event status lookups (the intermediary's
 * GET /v1/events/{id}, the admin API's): every id accepted can be looked
 * up. */
#define CEB_ATTR_NAME_MAX 64
#define CEB_ATTR_VALUE_MAX 4096

/* New empty event, refcount 1, owned by the caller. NULL on out of memory. */
ceb_event *ceb_event_new(void);
/* Adds a reference; returns ev. Thread-safe. */
ceb_event *ceb_event_ref(ceb_event *ev);
/* Drops a reference; frees on the last. NULL is ignored. Thread-safe. */
void ceb_event_unref(ceb_event *ev);
/* Deep copy with refcount 1, owned by the caller. NULL on out of memory. */
ceb_event *ceb_event_clone(const ceb_event *ev);

/* Sets attribute `name` to `value` (copied). The type is the fixed type of a
 * context attribute, else CEB_ATTR_STRING. value NULL unsets. Returns
 * CEB_EINVAL for an empty name, a name over CEB_ATTR_NAME_MAX or a value over
 * CEB_ATTR_VALUE_MAX; names are not otherwise checked here (validation does
 * that, so that invalid input can be reported, not silently fixed). */
int ceb_event_set(ceb_event *ev, const char *name, const char *value);
/* Same with an explicit type (used for typed extensions). */
int ceb_event_set_typed(ceb_event *ev, const char *name, ceb_attr_type type,
                        const char *value);
/* Value of attribute `name` or NULL when unset. Borrowed: valid while the
 * event lives and the attribute is not changed. */
const char *ceb_event_get(const ceb_event *ev, const char *name);
/* Type of attribute `name`; CEB_ATTR_STRING when unset. */
ceb_attr_type ceb_event_get_type(const ceb_event *ev, const char *name);

/* Iteration in a stable order: specversion, id, source, type, then the other
 * context attributes, then extensions in name order. Borrowed pointers. */
size_t ceb_event_attr_count(const ceb_event *ev);
int ceb_event_attr_at(const ceb_event *ev, size_t index, const char **name,
                      const char **value, ceb_attr_type *type);

/* Replaces the data with a copy of `len` bytes. kind CEB_DATA_NONE clears. */
int ceb_event_set_data(ceb_event *ev, const void *data, size_t len,
                       ceb_data_kind kind);
/* Borrowed data bytes (not NUL-terminated by contract, though the SDK keeps a
 * trailing NUL for convenience) and their length; NULL when there is none. */
const void *ceb_event_data(const ceb_event *ev, size_t *len);
ceb_data_kind ceb_event_data_kind(const ceb_event *ev);

/* Size used for the profile's size limit: the length of every attribute name
 * and value plus the data bytes (an approximation of the structured form). */
size_t ceb_event_size(const ceb_event *ev);

/* 1 when `name` is one of the CloudEvents 1.0 context attributes. */
int ceb_attr_is_context(const char *name);
/* Fixed type of a context attribute; CEB_ATTR_STRING for others. */
ceb_attr_type ceb_attr_context_type(const char *name);

#ifdef __cplusplus
}
#endif
#endif
