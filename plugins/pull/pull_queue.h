/* The pull queue's durable storage: a SQLite file (WAL, synchronous=FULL)
 * in the instance's data directory. A writer thread batches appends (one
 * transaction, one fsync per batch) and reports each append once it is
 * durable; readers page through it by sequence number; a commit removes
 * everything up to a cursor.
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef PULL_QUEUE_H
#define PULL_QUEUE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pull_queue pull_queue;

/* Called on the writer thread once an append is durable (status CEB_OK;
 * a duplicate idempotency key counts as durable) or failed (< 0). */
typedef void (*pull_append_cb)(void *arg, int status);

/* Opens (creating) path and starts the writer. NULL with err set. */
pull_queue *pull_queue_open(const char *path, size_t max_events, char *err,
                            size_t errlen);
/* Stops the writer after flushing queued appends, closes. NULL ignored. */
void pull_queue_close(pull_queue *q);

/* Queues an append of event_json (copied) under idem_key (copied; an
 * existing key is not stored twice). CEB_OK (cb comes later), CEB_EBUSY
 * when the queue holds max_events, CEB_ESHUTDOWN when closing. */
int pull_queue_append(pull_queue *q, const char *idem_key,
                      const char *event_json, pull_append_cb cb, void *arg);

/* Up to max events after `after` (and after the committed cursor), waiting
 * up to wait_ms for the first one. Returns a new JSON array of events and
 * sets *last to the sequence of the last one (or max(after, committed)). */
json_t *pull_queue_read(pull_queue *q, int64_t after, size_t max,
                        int64_t wait_ms, int64_t *last);

/* Removes every event with sequence <= cursor. CEB_OK, CEB_EINVAL when the
 * cursor is beyond the last event ever appended. */
int pull_queue_commit(pull_queue *q, int64_t cursor, int64_t *committed);

/* Events stored and not committed. */
int64_t pull_queue_depth(pull_queue *q);

/* Wakes long polls (used before shutdown). */
void pull_queue_wake_all(pull_queue *q);

#endif
