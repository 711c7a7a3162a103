/* Leaders, instances and the cluster view on PostgreSQL (pg_cluster.h).
 *
 * A task's leader holds a session-level advisory lock (key: a 64-bit hash
 * of "ceb-lead:<task>") on a connection kept for that alone: PostgreSQL
 * releases the lock when the session ends, whether the bridge stopped,
 * crashed or lost the network, and another bridge's next try takes it.
 * While a bridge believes it leads, each call checks that the session is
 * still there (a round trip), so a bridge that lost its session stops
 * leading at its next round; between the loss and that round two bridges
 * may both run the task once, which the tasks allow (sweeping and
 * forwarding are idempotent: a forward is at least once anyway).
 *
 * A frozen bridge (SIGSTOP, a VM paused) keeps its TCP connection, so
 * PostgreSQL would keep its locks: the session is opened with
 * idle_session_timeout = LEAD_IDLE_MS, and a live leader's round trips
 * (the sweeper asks every 5 s) keep it; a frozen one's session ends after
 * LEAD_IDLE_MS and another bridge takes the tasks over at its next try. A
 * task asked about less often than that (a contracts sync every hour) just
 * takes its lock again on a new session, if no one else holds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_cluster.h"
#include "store/postgres/pg_internal.h"

/* An instance without a heartbeat for this long is "stale" in the view;
 * one silent for STALE_DROP_MS leaves the table at the next heartbeat of
 * any bridge. */
#define STALE_MS 30000
#define STALE_DROP_MS 3600000
/* idle_session_timeout of the leader session (PostgreSQL 14+). */
#define LEAD_IDLE_MS 15000

/* FNV-1a, 64 bits, as a signed bigint for pg_try_advisory_lock. */
static int64_t lock_key(const char *task) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = "ceb-lead:"; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  for (const char *p = task; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  return (int64_t)h;
}

static void lead_drop_locked(ceb_store_impl *s) {
  PQfinish(s->lead_conn);
  s->lead_conn = NULL;
  for (size_t i = 0; i < s->nheld; i++)
    free(s->held[i]);
  s->nheld = 0;
}

void cebpg_lead_close(ceb_store_impl *s) {
  pthread_mutex_lock(&s->lead_lock);
  lead_drop_locked(s);
  free(s->held);
  s->held = NULL;
  s->capheld = 0;
  pthread_mutex_unlock(&s->lead_lock);
}

static int held_locked(ceb_store_impl *s, const char *task) {
  for (size_t i = 0; i < s->nheld; i++)
    if (strcmp(s->held[i], task) == 0) return 1;
  return 0;
}

/* One statement on the leader session; NULL (session dropped) on failure. */
static PGresult *lead_exec(ceb_store_impl *s, const char *sql,
                           const cebpg_params *p, ExecStatusType want) {
  PGresult *r = PQexecParams(s->lead_conn, sql, p ? p->n : 0, NULL,
                             p ? p->v : NULL, NULL, NULL, 0);
  if (PQresultStatus(r) == want) return r;
  char msg[400];
  cebpg_scrub(s->pool, PQresultErrorMessage(r), msg, sizeof msg);
  ceb_log_warn("store: leader session: %s; every task it led is given up", msg);
  PQclear(r);
  lead_drop_locked(s);
  return NULL;
}

int cebpg_try_lead(ceb_store_impl *s, const char *task, int64_t now) {
  if (!task || !*task) return CEB_EINVAL;
  pthread_mutex_lock(&s->lead_lock);
  if (s->lead_conn && PQstatus(s->lead_conn) != CONNECTION_OK)
    lead_drop_locked(s);
  if (!s->lead_conn) {
    char err[400] = "";
    s->lead_conn = cebpg_pool_connect(s->pool, err, sizeof err);
    if (!s->lead_conn) {
      ceb_log_debug("store: leader session: %s", err);
      pthread_mutex_unlock(&s->lead_lock);
      return 0;
    }
    char sql[80];
    snprintf(sql, sizeof sql, "SET idle_session_timeout = %d", LEAD_IDLE_MS);
    /* refused by a server older than 14: locks then follow TCP only */
    PQclear(PQexec(s->lead_conn, sql));
    PQclear(PQexec(s->lead_conn, "SET application_name = 'cebridge-lead'"));
  }
  int lead = 0;
  if (held_locked(s, task)) {
    /* still ours while the session lives */
    PGresult *r = lead_exec(s, "SELECT 1", NULL, PGRES_TUPLES_OK);
    lead = r != NULL;
    PQclear(r);
    pthread_mutex_unlock(&s->lead_lock);
    return lead;
  }
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, lock_key(task));
  PGresult *r = lead_exec(s, "SELECT pg_try_advisory_lock($1::bigint)", &p,
                          PGRES_TUPLES_OK);
  lead = r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
  PQclear(r);
  if (lead) {
    if (s->nheld == s->capheld) {
      size_t cap = s->capheld ? s->capheld * 2 : 8;
      char **n = realloc(s->held, cap * sizeof *n);
      if (n) {
        s->held = n;
        s->capheld = cap;
      }
    }
    char *t = s->nheld < s->capheld ? strdup(task) : NULL;
    if (t) {
      s->held[s->nheld++] = t;
    } else { /* cannot remember it: give it back rather than hold it blind */
      cebpg_params q = {.n = 0};
      cebpg_p_int(&q, lock_key(task));
      PQclear(lead_exec(s, "SELECT pg_advisory_unlock($1::bigint)", &q,
                        PGRES_TUPLES_OK));
      pthread_mutex_unlock(&s->lead_lock);
      return 0;
    }
    /* recorded for the cluster view (the lock is the truth) */
    cebpg_params q = {.n = 0};
    cebpg_p_text(&q, task);
    cebpg_p_text(&q, s->instance);
    cebpg_p_int(&q, now);
    PQclear(lead_exec(s,
                      "INSERT INTO leaders (task, instance, since) VALUES"
                      " ($1, $2, $3) ON CONFLICT (task) DO UPDATE SET"
                      " instance = excluded.instance, since = excluded.since",
                      &q, PGRES_COMMAND_OK));
    lead = s->lead_conn != NULL;
  }
  pthread_mutex_unlock(&s->lead_lock);
  return lead;
}

int cebpg_heartbeat(ceb_store_impl *s, const ceb_store_member *m, int64_t now) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, s->instance);
  cebpg_p_text(&p, m && m->hostname ? m->hostname : "");
  cebpg_p_int(&p, m ? m->pid : 0);
  cebpg_p_text(&p, m && m->version ? m->version : "");
  cebpg_p_int(&p, m && m->started_at ? m->started_at : now);
  cebpg_p_int(&p, now);
  cebpg_p_int(&p, now - STALE_DROP_MS);
  PGresult *r = cebpg_query(
      s, "heartbeat",
      "WITH gone AS (DELETE FROM instances WHERE heartbeat_at < $7"
      " AND id <> $1)"
      " INSERT INTO instances (id, hostname, pid, version, started_at,"
      " heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO"
      " UPDATE SET hostname = excluded.hostname, pid = excluded.pid,"
      " version = excluded.version, heartbeat_at = excluded.heartbeat_at",
      &p);
  if (!r) return CEB_EIO;
  PQclear(r);
  return CEB_OK;
}

int cebpg_leave(ceb_store_impl *s) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, s->instance);
  PGresult *r = cebpg_query(s, "leave",
                            "WITH l AS (DELETE FROM leaders WHERE instance"
                            " = $1) DELETE FROM instances WHERE id = $1",
                            &p);
  if (!r) return CEB_EIO;
  PQclear(r);
  return CEB_OK;
}

/* The instance object of id in arr, added (with only its id) when absent:
 * a lease holder that never registered (or left the table). */
static json_t *instance_of(json_t *arr, const char *id) {
  size_t i;
  json_t *o;
  json_array_foreach(arr, i, o) {
    if (strcmp(json_string_value(json_object_get(o, "id")), id) == 0) return o;
  }
  o = json_pack("{s:s, s:b, s:o, s:o}", "id", id, "stale", 1, "leads",
                json_array(), "leases", json_object());
  json_array_append_new(arr, o);
  return o;
}

json_t *cebpg_cluster_view(ceb_store_impl *s, int64_t now) {
  PGresult *r = cebpg_query(s, "cluster view",
                            "SELECT id, hostname, pid, version, started_at,"
                            " heartbeat_at FROM instances"
                            " ORDER BY started_at, id",
                            NULL);
  if (!r) return NULL;
  json_t *arr = json_array();
  static const char *const cols[] = {"id",      "hostname",   "pid",
                                     "version", "started_at", "heartbeat_at"};
  for (int i = 0; i < PQntuples(r); i++) {
    json_t *o = json_object();
    for (int k = 0; k < 6; k++)
      cebpg_json_col(o, cols[k], r, i, k);
    json_object_set_new(o, "stale",
                        json_boolean(cebpg_int(r, i, 5) < now - STALE_MS));
    json_object_set_new(o, "leads", json_array());
    json_object_set_new(o, "leases", json_object());
    json_array_append_new(arr, o);
  }
  PQclear(r);
  r = cebpg_query(s, "cluster view",
                  "SELECT task, instance FROM leaders"
                  " ORDER BY task",
                  NULL);
  if (!r) {
    json_decref(arr);
    return NULL;
  }
  for (int i = 0; i < PQntuples(r); i++)
    json_array_append_new(
        json_object_get(instance_of(arr, PQgetvalue(r, i, 1)), "leads"),
        json_string(PQgetvalue(r, i, 0)));
  PQclear(r);
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, now);
  r = cebpg_query(s, "cluster view",
                  "SELECT lease_owner, route, lease_until > $1, count(*)"
                  " FROM delivery WHERE open AND state = 1 GROUP BY 1, 2, 3"
                  " ORDER BY 2",
                  &p);
  if (!r) {
    json_decref(arr);
    return NULL;
  }
  json_t *expired = json_object();
  for (int i = 0; i < PQntuples(r); i++) {
    const char *owner = PQgetisnull(r, i, 0) ? "" : PQgetvalue(r, i, 0);
    const char *route = PQgetvalue(r, i, 1);
    int live = strcmp(PQgetvalue(r, i, 2), "t") == 0;
    int64_t n = cebpg_int(r, i, 3);
    json_t *into =
        live ? json_object_get(instance_of(arr, owner), "leases") : expired;
    json_int_t had = json_integer_value(json_object_get(into, route));
    json_object_set_new(into, route, json_integer(had + n));
  }
  PQclear(r);
  return json_pack("{s:s, s:o, s:o}", "instance", s->instance, "instances", arr,
                   "leases_expired", expired);
}
