/* The job status a client reads of an event it sent (ceb_host.event_status,
 * ABI 1.2): the RIO Mapper job model (seed 001, docs/integration-guide.md
 * "Job status") derived from the store's own record of the event's
 * deliveries, so it is as durable as they are and needs no table of its
 * own. */
#include "runtime/runtime_job.h"

#include <stdio.h>
#include <string.h>

#include <ceb/ceb.h>

#include "delivery/ceb_deadletter.h"
#include "runtime/runtime_internal.h"
#include "store/ceb_store.h"

/* Bounds of one lookup: an id longer than JOB_ID_MAX (the longest id an
 * event can carry, so every id ingest accepted) is no event's (CEB_EINVAL;
 * the intermediary answers 400 before asking); of the
 * events carrying an id (one per source and client) the newest
 * JOB_EVENTS_MAX are read, of an event's dead letters (one per route and
 * death: an event replayed and dead again) the newest JOB_DLQ_MAX. Each
 * lookup is then a bounded read whatever the store holds. */
#define JOB_ID_MAX CEB_ATTR_VALUE_MAX
#define JOB_EVENTS_MAX 100
#define JOB_DLQ_MAX 100

/* The dead letter of route in the event's DLQ rows (its newest: a replayed
 * event may have died before). */
static const char *dead_reason(json_t *dlq, const char *route) {
  const char *reason = NULL;
  size_t i;
  json_t *row;
  json_array_foreach(dlq, i, row) {
    const char *r = json_string_value(json_object_get(row, "route"));
    if (r && strcmp(r, route) == 0)
      reason = json_string_value(json_object_get(row, "reason"));
  }
  return reason;
}

/* One route's final answer (a route's state "done" or "dead"); 0 while it
 * is still open. */
static int route_final(json_t *rt) {
  const char *state = json_string_value(json_object_get(rt, "state"));
  return state && (strcmp(state, "done") == 0 || strcmp(state, "dead") == 0);
}

static int route_dead(json_t *rt) {
  const char *state = json_string_value(json_object_get(rt, "state"));
  return state && strcmp(state, "dead") == 0;
}

/* "in-progress" once anything was tried (a retry waits its turn), else
 * "pending". */
static const char *open_status(json_t *routes) {
  size_t i;
  json_t *rt;
  json_array_foreach(routes, i, rt) {
    const char *state = json_string_value(json_object_get(rt, "state"));
    if (json_integer_value(json_object_get(rt, "attempts")) > 0 ||
        (state && strcmp(state, "pending") != 0 && !route_final(rt)))
      return "in-progress";
  }
  return "pending";
}

/* error / time-out of the first route that died. */
static void set_failed(ceb_store *st, json_t *ev, json_t *out, json_t *rt) {
  const char *route = json_string_value(json_object_get(rt, "route"));
  json_t *dlq = ceb_store_dlq_of_seq_max(
      st, (int64_t)json_integer_value(json_object_get(ev, "seq")), JOB_DLQ_MAX);
  const char *why = dead_reason(dlq, route ? route : "");
  int timeout = why && strcmp(why, CEB_DEAD_DEADLINE) == 0;
  const char *reason = json_string_value(json_object_get(rt, "last_reason"));
  const char *err = json_string_value(json_object_get(rt, "last_error"));
  json_object_set_new(out, "status",
                      json_string(timeout ? "time-out" : "error"));
  /* The seed's phases are the RIO Mapper's own steps; the bridge's are
   * the egress mapping and the delivery to the partner. */
  json_object_set_new(out, "phase",
                      json_string(reason && strncmp(reason, "mapping", 7) == 0
                                      ? "mapping"
                                      : "delivering"));
  char msg[700];
  if (timeout)
    snprintf(msg, sizeof msg,
             "the route's deadline passed before the partner took it "
             "(last: %s%s%.512s)",
             reason ? reason : "no attempt", err ? ": " : "", err ? err : "");
  else
    snprintf(msg, sizeof msg, "%s%s%.512s", reason ? reason : "failed",
             err ? ": " : "", err ? err : "");
  json_object_set_new(out, "message", json_string(msg));
  json_object_set(out, "route", json_object_get(rt, "route"));
  json_decref(dlq);
}

static void set_done(json_t *out, json_t *routes) {
  json_object_set_new(out, "status", json_string("done"));
  json_t *rt = json_array_get(routes, 0); /* NULL: nothing to deliver */
  if (!rt) return;
  json_t *code = json_object_get(rt, "last_status");
  json_t *body = json_object_get(rt, "response");
  json_object_set_new(out, "response",
                      json_pack("{s:O,s:O}", "status",
                                code ? code : json_null(), "body",
                                body ? body : json_null()));
}

/* Each route's own part, for an event a route fans out. */
static json_t *routes_view(json_t *routes) {
  json_t *arr = json_array();
  size_t i;
  json_t *rt;
  json_array_foreach(routes, i, rt) {
    json_t *o = json_object();
    static const char *const keys[] = {
        "route", "state", "attempts", "last_status", "next_attempt_at", NULL};
    for (int k = 0; keys[k]; k++) {
      json_t *v = json_object_get(rt, keys[k]);
      if (v) json_object_set(o, keys[k], v);
    }
    json_array_append_new(arr, o);
  }
  return arr;
}

/* 1 when route is a callbacks route of rt. */
static int hidden(const ceb_runtime *rt, const char *route) {
  for (size_t r = 0; route && r < rt->nroutes; r++)
    if (rt->routes[r]->callbacks && strcmp(rt->routes[r]->name, route) == 0)
      return 1;
  return 0;
}

/* ev's routes without the callbacks routes (a new array). */
static json_t *visible_routes(const ceb_runtime *rt, json_t *routes) {
  json_t *out = json_array();
  size_t i;
  json_t *row;
  json_array_foreach(routes, i, row) {
    if (!hidden(rt, json_string_value(json_object_get(row, "route"))))
      json_array_append(out, row);
  }
  return out;
}

static json_t *job_of(ceb_runtime *rt, json_t *ev);

int cebr_job_status(ceb_runtime *rt, const char *client, const char *id,
                    json_t **out) {
  *out = NULL;
  ceb_store *st = rt ? rt->store : NULL;
  if (!st || !id || !*id || strlen(id) > JOB_ID_MAX) return CEB_EINVAL;
  if (!client) client = "";
  json_t *all = ceb_store_event_status_max(st, id, NULL, JOB_EVENTS_MAX);
  if (!all) return CEB_EIO;
  /* the newest of this client's events with that id: (client, source, id)
   * is the key, so another source may have used the same id */
  json_t *ev = NULL;
  size_t i;
  json_t *row;
  json_array_foreach(all, i, row) {
    const char *c = json_string_value(json_object_get(row, "client"));
    if (strcmp(c ? c : "", client) == 0) ev = row;
  }
  if (!ev) {
    json_decref(all);
    return CEB_ENOTFOUND;
  }
  *out = job_of(rt, ev);
  json_decref(all);
  return *out ? CEB_OK : CEB_ENOMEM;
}

int cebr_job_status_seq(ceb_runtime *rt, int64_t seq, const char *id,
                        json_t **out) {
  *out = NULL;
  ceb_store *st = rt ? rt->store : NULL;
  if (!st || !id || !*id) return CEB_EINVAL;
  /* not bounded to the newest: the callback of this very row must be
   * built, however many newer events share its id */
  json_t *all = ceb_store_event_status(st, id, NULL);
  if (!all) return CEB_EIO;
  json_t *ev = NULL;
  size_t i;
  json_t *row;
  json_array_foreach(all, i, row) {
    if (json_integer_value(json_object_get(row, "seq")) == seq) ev = row;
  }
  if (ev) *out = job_of(rt, ev);
  json_decref(all);
  return !ev ? CEB_ENOTFOUND : *out ? CEB_OK : CEB_ENOMEM;
}

/* The job document of one event row of ceb_store_event_status. */
static json_t *job_of(ceb_runtime *rt, json_t *ev) {
  ceb_store *st = rt->store;
  size_t i;
  json_t *row;
  json_t *o = json_object();
  static const char *const keys[] = {"id", "source", "type", "received_at",
                                     NULL};
  for (int k = 0; keys[k]; k++)
    json_object_set(o, keys[k], json_object_get(ev, keys[k]));
  json_t *routes = visible_routes(rt, json_object_get(ev, "routes"));
  json_t *dead = NULL;
  int open = 0;
  json_array_foreach(routes, i, row) {
    if (!route_final(row)) open = 1;
    if (!dead && route_dead(row)) dead = row;
  }
  if (open)
    json_object_set_new(o, "status", json_string(open_status(routes)));
  else if (dead)
    set_failed(st, ev, o, dead);
  else
    set_done(o, routes);
  json_object_set_new(o, "routes", routes_view(routes));
  json_decref(routes);
  return o;
}
