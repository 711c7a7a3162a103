/* Circuits per destination of a webhook sink whose URL is a template
 * (url = https://partner/${schachome}): one institution's failing endpoint
 * opens the circuit of that expanded URL only, never the sink's, so other
 * destinations keep flowing. Same rules as the host's circuit: closed until
 * `failures` consecutive failed attempts, then open for open_for_ms (every
 * attempt due meanwhile fails at once without being sent), then half-open:
 * one probe; its success closes it, its failure opens it again.
 *
 * Only destinations with a failure on record are kept (a closed circuit with
 * no failures is the default), at most HTTP_DEST_MAX of them; beyond that a
 * new destination is not tracked (it behaves as closed). Not thread-safe:
 * the sink's loop thread owns the table. */
#ifndef HTTP_OUT_CIRCUIT_H
#define HTTP_OUT_CIRCUIT_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_DEST_MAX 4096

typedef struct http_dest_table http_dest_table;

/* failures >= 1, open_for_ms > 0. NULL on allocation failure. */
http_dest_table *http_dest_new(uint32_t failures, int64_t open_for_ms);
void http_dest_free(http_dest_table *t);

/* 1 when an attempt to dest may be sent at now (closed, or the half-open
 * probe, which is then marked as started), 0 when its circuit refuses it;
 * *open_until is then when the next probe may go (now or later). */
int http_dest_allow(http_dest_table *t, const char *dest, int64_t now,
                    int64_t *open_until);
/* The result of an attempt that was sent. */
void http_dest_success(http_dest_table *t, const char *dest);
/* Returns 1 when this failure opened the circuit. */
int http_dest_failure(http_dest_table *t, const char *dest, int64_t now);
/* Opens at once (the destination answered 410 Gone). */
void http_dest_trip(http_dest_table *t, const char *dest, int64_t now);
/* An attempt allowed by http_dest_allow was not sent after all (deadline,
 * shutdown): a half-open circuit may probe again. */
void http_dest_cancel(http_dest_table *t, const char *dest);
/* Destinations on record, and how many of them are open (metrics, tests). */
size_t http_dest_count(const http_dest_table *t, size_t *open);

#endif
