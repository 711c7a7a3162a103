/* The intermediary's 202 answer,
 * {"status":"accepted","accepted":N,"duplicates":M,"ids":[...]}, written
 * as text directly: it is sent for every accepted request, and a JSON tree
 * built and dumped for it cost several allocations each time. The text is
 * what jansson's compact dump of the same object gives.
 * Pure functions; thread-safe. */
#ifndef HTTP_IN_ACK_H
#define HTTP_IN_ACK_H

#include <ceb/ceb.h>

#include <stddef.h>

/* The events' ids as a JSON array (["a","b"]), escaped as jansson escapes
 * strings; a byte that is not part of valid UTF-8 is written as \ufffd (a
 * missing id as ""). Returns a malloc'd, NUL-terminated string (caller
 * frees) and sets *len; NULL when out of memory. */
char *http_ack_ids(ceb_event *const *events, size_t count, size_t *len);

/* The 202 body around ids (the text http_ack_ids returned; NULL: no "ids"
 * member, after a mapped submit whose ids the map program made). Returns a
 * malloc'd, NUL-terminated string (caller frees) and sets *len; NULL when
 * out of memory. */
char *http_ack_body(size_t accepted, size_t duplicates, const char *ids,
                    size_t ids_len, size_t *len);

/* Writes s as a JSON string literal (quotes included) to out, or only
 * counts when out is NULL. Returns the number of bytes (no NUL written). */
size_t http_json_quote(char *out, const char *s);

#endif
