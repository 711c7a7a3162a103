/* Shared between the admin server and its endpoint handlers. */
#ifndef CEB_ADMIN_INTERNAL_H
#define CEB_ADMIN_INTERNAL_H

#include <ceb/event.h>
#include <jansson.h>
#include <stddef.h>

#include "admin/ceb_admin.h"

struct MHD_Connection;
struct MHD_Response;

/* Adds the headers every admin response carries: CEB_ADMIN_CSP,
 * X-Content-Type-Options, Referrer-Policy, X-Frame-Options. */
void ceb_admin_headers(struct MHD_Response *r);

/* Queue a response; return MHD_YES/MHD_NO as int. */
int ceb_admin_reply(struct MHD_Connection *c, int status,
                    const char *content_type, const char *body, size_t len);
/* Steals the reference to body. */
int ceb_admin_reply_json(struct MHD_Connection *c, int status, json_t *body);
int ceb_admin_problem(struct MHD_Connection *c, int status, const char *code,
                      const char *detail);
struct ceb_store;
/* A store read or write that failed: 503 store_unavailable with
 * Retry-After while the store says it cannot write (PostgreSQL away, a
 * full or failing disk: the operator's script should try again later),
 * else 500 store_error. what says which query. MHD's thread. */
int ceb_admin_store_problem(struct MHD_Connection *c, struct ceb_store *st,
                            const char *what);

int ceb_admin_metrics(const ceb_admin_view *view, struct MHD_Connection *c);
/* path is the part after "/v1" ("/routes", "/dlq/3", ...). */
int ceb_admin_v1(const ceb_admin_view *view, struct MHD_Connection *c,
                 const char *method, const char *path);
/* GET /v1/contracts/{name}/{version} and /v1/contracts/{name}/diff
 * (ceb_admin_contracts.c); sub is the part after "/contracts/". */
int ceb_admin_contract_get(const ceb_admin_view *view, struct MHD_Connection *c,
                           const char *sub);
/* Bounds of an event's status and timeline answers. An id longer than
 * ADMIN_ID_MAX bytes, the longest id an event can carry (so any id a source
 * accepted is looked up), is refused (400 id_too_long; the intermediary's
 * GET /v1/events/{id} has the same bound). Of an id many events carry
 * (one per source, per client), the newest ADMIN_EVENTS_MAX; of an event's
 * failed attempts and dead letters (a retry-forever route, an event
 * replayed and dead again thousands of times), the newest
 * ADMIN_HISTORY_MAX each. Each answer says "truncated" when it left
 * older ones out, and the store reads no more than that (plus one). */
#define ADMIN_ID_MAX CEB_ATTR_VALUE_MAX
#define ADMIN_EVENTS_MAX 20
#define ADMIN_HISTORY_MAX 100

/* Removes the oldest (first) items of arr past max; 1 when it did. */
int ceb_admin_keep_newest(json_t *arr, size_t max);

/* GET /v1/events/{id}/timeline (ceb_admin_timeline.c); id unescaped. */
int ceb_admin_timeline(const ceb_admin_view *view, struct MHD_Connection *c,
                       const char *id, const char *source);
/* POST /v1/routes/{route}/replay (ceb_admin_replay.c); route unescaped. */
int ceb_admin_replay(const ceb_admin_view *view, struct MHD_Connection *c,
                     const char *route);
/* The query parameter name, NULL when absent or empty. */
const char *ceb_admin_arg(struct MHD_Connection *c, const char *name);

#endif
