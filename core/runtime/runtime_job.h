/* The job status of an event for the client that sent it (runtime_job.c):
 * the model of ceb_host.event_status. */
#ifndef CEB_RUNTIME_JOB_H
#define CEB_RUNTIME_JOB_H

#include <jansson.h>

#include "runtime/ceb_runtime.h"
#include "store/ceb_store.h"

/* *out: a new object {"id","source","type","received_at","status",...,
 * "routes":[...]} (caller decrefs) for the newest event id submitted by
 * client (NULL: ""). status: "pending" (nothing tried yet), "in-progress"
 * (tried, a route still open), "done" (every route delivered; "response"
 * {"status","body"} of the first route), "error" or "time-out" (every
 * route settled, one dead-lettered: "time-out" when its route's deadline
 * passed, else "error"; both with "phase", "message" and "route").
 * The callbacks routes' deliveries are left out: a client's callback is
 * not part of its event's status (it is sent once that is final).
 * CEB_OK, CEB_ENOTFOUND (unknown id, or only another client's),
 * CEB_EINVAL, CEB_EIO. Blocking store reads; any thread. */
int cebr_job_status(ceb_runtime *rt, const char *client, const char *id,
                    json_t **out);
/* The same document for journal row seq of event id (a callback's), any
 * client. CEB_OK, CEB_ENOTFOUND (swept), CEB_EIO. */
int cebr_job_status_seq(ceb_runtime *rt, int64_t seq, const char *id,
                        json_t **out);

#endif
