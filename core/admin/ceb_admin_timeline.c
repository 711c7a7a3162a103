/* GET /v1/events/{id}/timeline[?source=]: what happened to an event, in
 * time order, per (source, id) match:
 *   {"id", "events":[{"seq","source","type","received_at","settled_at",
 *     "timeline":[{"at","what","route"?, ...}]}]}
 * what: received; attempt ("n", "status", "reason", "outcome": retrying,
 * dead or delivered; "started_at" and "duration_ms" when known);
 * dead_lettered ("reason", "attempts", "dlq_id", "error"); replayed
 * ("dlq_id"); delivered; in_flight; next_attempt; settled. Built from the
 * journal, the store's history of failed attempts, the delivery rows (the
 * successful attempt) and the event's dead letters. An engine without the
 * history (ceb_store_attempts_of NULL) gives the first and last attempt of
 * each run instead. Bounded (ceb_admin_internal.h): the newest
 * ADMIN_EVENTS_MAX matches ("truncated" at the top when more), and per
 * event the newest ADMIN_HISTORY_MAX failed attempts and dead letters
 * ("truncated" on the event when older ones were left out). MHD's threads;
 * store read connections only. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "admin/ceb_admin_internal.h"
#include "runtime/ceb_runtime.h"

static json_int_t num(json_t *o, const char *k) {
  return json_integer_value(json_object_get(o, k));
}

/* Appends {"at", "what", "route"} plus the fields of extra (stolen), when
 * at is known. */
static void add(json_t *tl, json_int_t at, const char *what, const char *route,
                json_t *extra) {
  if (at <= 0) {
    json_decref(extra);
    return;
  }
  json_t *e = json_pack("{s:I, s:s}", "at", at, "what", what);
  if (route) json_object_set_new(e, "route", json_string(route));
  if (extra) {
    json_object_update(e, extra);
    json_decref(extra);
  }
  json_array_append_new(tl, e);
}

/* The first and last attempt of a run of n attempts. */
static void attempts(json_t *tl, const char *route, json_int_t n,
                     json_int_t first, json_int_t last, json_t *status,
                     json_t *reason) {
  if (n <= 0) return;
  if (n > 1) add(tl, first, "attempt", route, json_pack("{s:I}", "n", 1));
  add(tl, last, "attempt", route,
      json_pack("{s:I, s:O, s:O}", "n", n, "status",
                status ? status : json_null(), "reason",
                reason ? reason : json_null()));
}

static int by_time(const void *a, const void *b) {
  json_int_t x = num(*(json_t *const *)a, "at"),
             y = num(*(json_t *const *)b, "at");
  return x < y ? -1 : x > y;
}

/* Stable order by time: received first, equal times in insertion order. */
static json_t *sorted(json_t *tl) {
  size_t n = json_array_size(tl);
  json_t **v = calloc(n ? n : 1, sizeof *v);
  if (!v) return tl;
  for (size_t i = 0; i < n; i++)
    v[i] = json_array_get(tl, i);
  /* insertion sort: stable, and timelines are short */
  for (size_t i = 1; i < n; i++)
    for (size_t k = i; k > 0 && by_time(&v[k - 1], &v[k]) > 0; k--) {
      json_t *t = v[k];
      v[k] = v[k - 1];
      v[k - 1] = t;
    }
  json_t *out = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append(out, v[i]);
  free(v);
  json_decref(tl);
  return out;
}

/* Every failed attempt from the store's history: when it started, how
 * long it took, its answer and whether it retried or dead-lettered. */
static void failed_attempts(json_t *tl, json_t *hist) {
  json_t *a;
  size_t i;
  json_array_foreach(hist, i, a) {
    json_int_t started = num(a, "started_at"), at = num(a, "at");
    json_t *x = json_pack("{s:I, s:O, s:O, s:O}", "n", num(a, "n"), "status",
                          json_object_get(a, "status"), "reason",
                          json_object_get(a, "reason"), "outcome",
                          json_object_get(a, "outcome"));
    if (started > 0 && at >= started) {
      json_object_set_new(x, "started_at", json_integer(started));
      json_object_set_new(x, "duration_ms", json_integer(at - started));
    }
    add(tl, at, "attempt", json_string_value(json_object_get(a, "route")), x);
  }
}

/* *cut set when older attempts or dead letters were left out. */
static json_t *timeline_of(ceb_store *st, json_t *ev, int *cut) {
  json_t *tl = json_array();
  add(tl, num(ev, "received_at"), "received", NULL, NULL);
  /* NULL: the engine keeps no history; the delivery rows and dead
   * letters then give the first and last attempt of each run */
  json_t *hist =
      ceb_store_attempts_of_max(st, num(ev, "seq"), ADMIN_HISTORY_MAX + 1);
  *cut = ceb_admin_keep_newest(hist, ADMIN_HISTORY_MAX);
  failed_attempts(tl, hist);
  json_t *dead =
      ceb_store_dlq_of_seq_max(st, num(ev, "seq"), ADMIN_HISTORY_MAX + 1);
  *cut |= ceb_admin_keep_newest(dead, ADMIN_HISTORY_MAX);
  json_t *d;
  size_t i;
  json_array_foreach(dead, i, d) {
    const char *route = json_string_value(json_object_get(d, "route"));
    if (!hist)
      attempts(tl, route, num(d, "attempts"), num(d, "first_attempt_at"),
               num(d, "last_attempt_at"), json_object_get(d, "status"),
               json_object_get(d, "last_reason"));
    add(tl, num(d, "created_at"), "dead_lettered", route,
        json_pack("{s:O, s:I, s:I, s:O}", "reason",
                  json_object_get(d, "reason"), "attempts", num(d, "attempts"),
                  "dlq_id", num(d, "id"), "error",
                  json_object_get(d, "error") ? json_object_get(d, "error")
                                              : json_null()));
    add(tl, num(d, "replayed_at"), "replayed", route,
        json_pack("{s:I}", "dlq_id", num(d, "id")));
  }
  json_decref(dead);
  json_t *r;
  json_array_foreach(json_object_get(ev, "routes"), i, r) {
    const char *route = json_string_value(json_object_get(r, "route"));
    const char *state = json_string_value(json_object_get(r, "state"));
    if (!state || strcmp(state, "dead") == 0) continue; /* its dead letter */
    int done = strcmp(state, "done") == 0;
    if (!hist)
      attempts(tl, route, num(r, "attempts"), num(r, "first_attempt_at"),
               num(r, "last_attempt_at"), json_object_get(r, "last_status"),
               json_object_get(r, "last_reason"));
    else if (done) /* the history lists failures: this is the success */
      add(tl, num(r, "last_attempt_at"), "attempt", route,
          json_pack("{s:I, s:O, s:O, s:s}", "n", num(r, "attempts"), "status",
                    json_object_get(r, "last_status"), "reason",
                    json_object_get(r, "last_reason"), "outcome", "delivered"));
    if (done)
      add(tl, num(r, "last_attempt_at"), "delivered", route, NULL);
    else if (strcmp(state, "in-progress") == 0)
      add(tl,
          num(r, "last_attempt_at") ? num(r, "last_attempt_at")
                                    : num(ev, "received_at"),
          "in_flight", route, NULL);
    else
      add(tl, num(r, "next_attempt_at"), "next_attempt", route, NULL);
  }
  json_decref(hist);
  add(tl, num(ev, "settled_at"), "settled", NULL, NULL);
  return sorted(tl);
}

int ceb_admin_timeline(const ceb_admin_view *view, struct MHD_Connection *c,
                       const char *id, const char *source) {
  ceb_store *st = ceb_runtime_store(view->rt);
  json_t *s = ceb_store_event_status_max(st, id, source, ADMIN_EVENTS_MAX + 1);
  if (!s)
    return ceb_admin_store_problem(c, ceb_runtime_store(view->rt),
                                   "status query failed");
  if (json_array_size(s) == 0) {
    json_decref(s);
    return ceb_admin_problem(c, 404, "unknown_event",
                             "no event with that id was accepted (or it "
                             "expired after the retention period)");
  }
  int events_cut = ceb_admin_keep_newest(s, ADMIN_EVENTS_MAX);
  json_t *out = json_array(), *ev;
  size_t i;
  json_array_foreach(s, i, ev) {
    json_t *o = json_pack(
        "{s:I, s:O, s:O, s:O, s:O}", "seq", num(ev, "seq"), "source",
        json_object_get(ev, "source"), "type", json_object_get(ev, "type"),
        "received_at", json_object_get(ev, "received_at"), "settled_at",
        json_object_get(ev, "settled_at") ? json_object_get(ev, "settled_at")
                                          : json_null());
    json_object_set_new(o, "routes",
                        json_incref(json_object_get(ev, "routes")));
    int cut = 0;
    json_object_set_new(o, "timeline", timeline_of(st, ev, &cut));
    json_object_set_new(o, "truncated", json_boolean(cut));
    json_array_append_new(out, o);
  }
  json_decref(s);
  return ceb_admin_reply_json(c, 200,
                              json_pack("{s:s, s:o, s:b}", "id", id, "events",
                                        out, "truncated", events_cut));
}
