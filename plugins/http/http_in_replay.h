/* Webhook-ids seen within the signature tolerance window, to refuse a
 * replayed signed request. Bounded: at most `max` ids; when full, the
 * oldest is forgotten (a replay of it older than the window fails the
 * timestamp check anyway unless the set is too small for the load).
 * Thread-safe. */
#ifndef HTTP_IN_REPLAY_H
#define HTTP_IN_REPLAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct http_replay http_replay;

http_replay *http_replay_new(size_t max, int64_t window_ms);
void http_replay_free(http_replay *r);
/* Records id at now_ms. 1 when new, 0 when seen within the window. */
int http_replay_check_add(http_replay *r, const char *id, int64_t now_ms);
/* 1 when id was recorded within the window, else 0; records nothing (the
 * intermediary asks before processing and records only once the request's
 * events are durable, so a failed request's retry is not refused). */
int http_replay_seen(http_replay *r, const char *id, int64_t now_ms);

#endif
