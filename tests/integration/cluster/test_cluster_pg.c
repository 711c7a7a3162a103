/* Two real bridges (`cebridge run`) on one PostgreSQL database, both
 * active (issue 14, items 3 and 4):
 *  1. wake-ups: with store.poll_interval = 1h, an event ingested on the
 *     bridge whose only delivery slot is held (the receiver keeps its first
 *     delivery unanswered until the second arrives) is delivered by the
 *     other bridge: only a notification can have told it. Ordering, not
 *     wall time: the receiver answers the first delivery once it has the
 *     second, and fails the test past a deadline far below the poll;
 *  2. the cluster view: /v1/cluster (admin token) and `cebridge cluster
 *     --json` list both bridges with fresh heartbeats; /metrics series
 *     carry bridge="<instance id>";
 *  3. a leader task ("sweeper") runs on exactly one bridge; it moves to
 *     the other when the leader is frozen (SIGSTOP: its session times out
 *     idle), the thawed bridge leads nothing, and it takes the task back
 *     when the new leader is killed (-9);
 *  4. a pull consumer alternating between the bridges (fetch on one,
 *     commit on the other) gets every event once, in order;
 *  5. `cebridge status` and `dlq list` work on the database by its URI. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_pg.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:cluster"
#define TOKEN "cluster-test-admin-token-0123456789abcdef"
#define NPULL 24

/* ---- the receiver (ceb_test_rx): which bridge delivered which id, in
 * order. The bridge delivering HOLD_ID waits for the answer: its one
 * slot stays taken until another delivery arrived (or 60 s passed: the
 * test then fails on the other delivery's absence). ---- */

#define HOLD_ID "h1"

static rx_server *g_rx;

static void rx_answer(void *arg, const rx_request *req, size_t index,
                      rx_response *resp) {
  (void)arg;
  resp->status = 204;
  const char *id = ceb_headers_get(&req->headers, "ce-id");
  if (id && strcmp(id, HOLD_ID) == 0) rx_wait(g_rx, index + 2, 60000);
}

/* Index of the (last) delivery of id, or -1; *by gets its x-bridge. */
static int rx_find(const char *id, const char **by) {
  int at = -1;
  size_t n = rx_count(g_rx);
  for (size_t i = 0; i < n; i++) {
    const rx_request *r = rx_get(g_rx, i);
    const char *got = ceb_headers_get(&r->headers, "ce-id");
    if (got && strcmp(got, id) == 0) {
      at = (int)i;
      if (by) *by = ceb_headers_get(&r->headers, "x-bridge");
    }
  }
  return at;
}

static int rx_has(void *arg) {
  return rx_find(arg, NULL) >= 0;
}

/* ---- bridges ---- */

typedef struct bridge {
  char name[8];
  char dir[600];
  char log[700];
  pid_t pid;
  int in_port, admin_port, pull_port;
} bridge;

static int bridge_start(bridge *b, const char *tmp, const char *name,
                        const ceb_test_pg *pg, int rxp) {
  snprintf(b->name, sizeof b->name, "%s", name);
  snprintf(b->dir, sizeof b->dir, "%s/%s", tmp, name);
  snprintf(b->log, sizeof b->log, "%s/%s.log", tmp, name);
  mkdir(b->dir, 0700);
  char conf[8192];
  snprintf(conf, sizeof conf,
           "[bridge]\n"
           "store = %s\n"
           "store.poll_interval = 1h\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s/admin.port\n"
           "admin.token = " TOKEN "\n"
           "[source in]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/in.port\nauth = none\n"
           "[sink out]\nplugin = http\nurl = http://127.0.0.1:%d/hook\n"
           "allow_insecure_http = true\ntimeout = 90s\nheaders.x-bridge = %s\n"
           "[sink outbox]\nplugin = pull\nlisten = 127.0.0.1:0\n"
           "port_file = %s/pull.port\nauth = none\n"
           "[route hook]\nfrom = in\nto = out\nmatch.type = nl.edu.hook.*\n"
           "max_inflight = 1\ntimeout = 90s\n"
           "[route pull]\nfrom = in\nto = outbox\nmatch.type = nl.edu.pull.*\n"
           "order_by = source\n",
           pg->uri, b->dir, b->dir, rxp, name, b->dir);
  CHECK_INT(ceb_test_write_file(b->dir, "bridge.conf", conf), 0);
  char pf[700];
  snprintf(pf, sizeof pf, "%s/admin.port", b->dir);
  unlink(pf);
  b->pid = ceb_test_bridge_start(b->dir, b->log);
  if (b->pid <= 0) return -1;
  b->admin_port = ceb_test_wait_port_file(pf, 120000);
  snprintf(pf, sizeof pf, "%s/in.port", b->dir);
  b->in_port = ceb_test_wait_port_file(pf, 60000);
  snprintf(pf, sizeof pf, "%s/pull.port", b->dir);
  b->pull_port = ceb_test_wait_port_file(pf, 60000);
  return b->admin_port > 0 && b->in_port > 0 && b->pull_port > 0 ? 0 : -1;
}

static int post(const bridge *b, const char *id, const char *type) {
  char url[128], h_id[96], h_type[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", b->in_port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  snprintf(h_type, sizeof h_type, "ce-type: %s", type);
  const char *hdrs[] = {"ce-specversion: 1.0",
                        "ce-source: " SRC,
                        h_type,
                        h_id,
                        "Content-Type: application/json",
                        NULL};
  return ceb_test_http("POST", url, hdrs, "{\"n\":1}", 7, NULL);
}

static json_t *admin_get(const bridge *b, const char *path, int *status) {
  char url[160];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", b->admin_port, path);
  const char *hdrs[] = {"Authorization: Bearer " TOKEN, NULL};
  char *body = NULL;
  *status = ceb_test_http("GET", url, hdrs, NULL, 0, &body);
  json_t *j = body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  return j;
}

/* The instance id leading task in a /v1/cluster answer, "" when none. */
static const char *leader_of(json_t *view, const char *task, char *out,
                             size_t n) {
  out[0] = '\0';
  size_t i, k;
  json_t *in, *t;
  json_array_foreach(json_object_get(view, "instances"), i, in) {
    json_array_foreach(json_object_get(in, "leads"), k, t) {
      if (strcmp(json_string_value(t), task) == 0)
        snprintf(out, n, "%s", json_string_value(json_object_get(in, "id")));
    }
  }
  return out;
}

typedef struct lead_wait {
  const bridge *ask;
  const char *not_id; /* a leader other than this one */
  char got[160];
} lead_wait;

static int other_leads(void *arg) {
  lead_wait *w = arg;
  int st;
  json_t *v = admin_get(w->ask, "/v1/cluster", &st);
  leader_of(v, "sweeper", w->got, sizeof w->got);
  json_decref(v);
  return st == 200 && w->got[0] && strcmp(w->got, w->not_id) != 0;
}

/* `cebridge status h2 --store URI --json` says done on route hook. */
typedef struct status_arg {
  const char *uri, *tmp;
} status_arg;

static int status_done(void *arg) {
  status_arg *a = arg;
  char cmd[3000], path[700];
  snprintf(path, sizeof path, "%s/status.json", a->tmp);
  snprintf(cmd, sizeof cmd, "%s/cebridge status h2 --store '%s' --json > %s",
           CEB_TEST_BIN_DIR, a->uri, path);
  if (system(cmd) != 0) return 0;
  char *text = ceb_test_read_file(path, NULL);
  int ok = text && strstr(text, "\"hook\"") && strstr(text, "\"done\"");
  free(text);
  return ok;
}

/* Two sessions LISTEN on the bridges' channel. */
static int two_listening(void *arg) {
  return ceb_test_pg_int(arg, "SELECT count(*) FROM pg_stat_activity WHERE"
                              " application_name = 'cebridge-listen'") == 2;
}

/* ---- the pull consumer ---- */

static int pull_round(const bridge *fetch_on, const bridge *commit_on,
                      char seen[][64], size_t *nseen) {
  char url[200], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/pull/outbox?max=5&wait=10s",
           fetch_on->pull_port);
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) != 200) {
    free(body);
    return -1;
  }
  json_t *j = json_loads(body ? body : "", 0, NULL);
  free(body);
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(j, "events"), i, e) {
    if (*nseen < NPULL * 2)
      snprintf(seen[(*nseen)++], 64, "%s",
               json_string_value(json_object_get(e, "id")));
  }
  const char *cursor = json_string_value(json_object_get(j, "cursor"));
  snprintf(url, sizeof url,
           "http://127.0.0.1:%d/v1/pull/outbox/commit?"
           "cursor=%s",
           commit_on->pull_port, cursor ? cursor : "0");
  int st = ceb_test_http("POST", url, NULL, "", 0, NULL);
  int n = (int)json_array_size(json_object_get(j, "events"));
  json_decref(j);
  return st == 200 ? n : -1;
}

int main(void) {
  ceb_test_pg_require();
  char *tmp = ceb_test_tmpdir("cluster_pg");
  ceb_test_pg pg;
  if (ceb_test_pg_start(&pg, "cluster_pg_db") != 0) {
    CHECK_MSG(0, "PostgreSQL did not start");
    return ceb_test_done("integration_cluster_pg");
  }
  g_rx = rx_start(rx_answer, NULL);
  CHECK(g_rx != NULL);
  int rxp = g_rx ? rx_port(g_rx) : 0;
  bridge a, b;
  CHECK_INT(bridge_start(&a, tmp, "A", &pg, rxp), 0);
  CHECK_INT(bridge_start(&b, tmp, "B", &pg, rxp), 0);

  /* Both bridges listen for notifications before the test relies on
   * them (each connects its listener in the background at start). */
  PGconn *probe = ceb_test_pg_connect(&pg);
  CHECK(probe != NULL);
  CHECK(ceb_test_wait(two_listening, probe, 60000));
  PQfinish(probe);

  /* 1. Wake-ups. h1 to A: whichever bridge delivers it keeps it (the
   * receiver holds it); h2 to that same bridge, whose one slot is taken:
   * the other one must deliver h2, and it polls only hourly. */
  CHECK_INT(post(&a, HOLD_ID, "nl.edu.hook.created"), 202);
  CHECK(ceb_test_wait(rx_has, HOLD_ID, 60000));
  const char *by1 = NULL, *by2 = NULL;
  int i1 = rx_find(HOLD_ID, &by1);
  const bridge *holder = by1 && strcmp(by1, "B") == 0 ? &b : &a;
  const bridge *other = holder == &a ? &b : &a;
  CHECK_INT(post(holder, "h2", "nl.edu.hook.created"), 202);
  CHECK(ceb_test_wait(rx_has, "h2", 45000));
  int i2 = rx_find("h2", &by2);
  CHECK(i2 > i1);
  if (i2 >= 0) CHECK_STR(by2, other->name);

  /* 2. The cluster view lists both, with fresh heartbeats, from either
   * bridge's admin API and from the CLI on the store. */
  int st;
  json_t *v = admin_get(&a, "/v1/cluster", &st);
  CHECK_INT(st, 200);
  CHECK_INT(json_array_size(json_object_get(v, "instances")), 2);
  size_t i;
  json_t *in;
  json_array_foreach(json_object_get(v, "instances"), i, in) {
    CHECK(!json_is_true(json_object_get(in, "stale")));
    CHECK(json_integer_value(json_object_get(in, "pid")) == a.pid ||
          json_integer_value(json_object_get(in, "pid")) == b.pid);
  }
  /* /metrics of a bridge on a shared store: every series carries
   * bridge="<its instance id>" */
  {
    char aid[160] = "";
    json_array_foreach(json_object_get(v, "instances"), i, in) {
      if (json_integer_value(json_object_get(in, "pid")) == a.pid)
        snprintf(aid, sizeof aid, "%s",
                 json_string_value(json_object_get(in, "id")));
    }
    char url[128], want[400], *text = NULL;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", a.admin_port);
    CHECK_INT(ceb_test_http("GET", url, NULL, NULL, 0, &text), 200);
    snprintf(want, sizeof want, "cebridge_events_accepted_total{bridge=\"%s\",",
             aid);
    CHECK_MSG(aid[0] && text && strstr(text, want), "no %s in /metrics", want);
    snprintf(want, sizeof want, "process_open_fds{bridge=\"%s\"}", aid);
    CHECK_MSG(text && strstr(text, want), "no %s in /metrics", want);
    free(text);
  }
  json_decref(v);
  {
    char cmd[2400], out[700];
    snprintf(out, sizeof out, "%s/cluster.json", tmp);
    snprintf(cmd, sizeof cmd, "%s/cebridge cluster -c %s --json > %s",
             CEB_TEST_BIN_DIR, a.dir, out);
    CHECK_INT(system(cmd), 0);
    char *text = ceb_test_read_file(out, NULL);
    json_t *cv = text ? json_loads(text, 0, NULL) : NULL;
    CHECK_INT(json_array_size(json_object_get(cv, "instances")), 2);
    json_decref(cv);
    free(text);
  }

  /* Operator commands open the store by its spec, from any machine: the
   * event h2's status (done, once the holder's settle landed) and the DLQ,
   * by URI alone (no config directory). */
  status_arg sa = {.uri = pg.uri, .tmp = tmp};
  CHECK(ceb_test_wait(status_done, &sa, 30000));
  {
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "%s/cebridge dlq list --store '%s' --json > /dev/null",
             CEB_TEST_BIN_DIR, pg.uri);
    int rc = system(cmd); /* 1: nothing dead (2 would be a store error) */
    CHECK_INT(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 1);
  }

  /* 3. One sweeper; it moves when its bridge is killed. */
  lead_wait w = {.ask = &a, .not_id = ""};
  CHECK(ceb_test_wait(other_leads, &w, 30000));
  char first[160];
  snprintf(first, sizeof first, "%s", w.got);
  v = admin_get(&a, "/v1/cluster", &st);
  int leaders = 0;
  json_array_foreach(json_object_get(v, "instances"), i, in) {
    size_t k;
    json_t *t;
    json_array_foreach(json_object_get(in, "leads"), k, t) leaders +=
        strcmp(json_string_value(t), "sweeper") == 0;
  }
  CHECK_INT(leaders, 1);
  /* which bridge is it? its pid is in the view */
  pid_t leader_pid = 0;
  json_array_foreach(json_object_get(v, "instances"), i, in) {
    if (strcmp(json_string_value(json_object_get(in, "id")), first) == 0)
      leader_pid = (pid_t)json_integer_value(json_object_get(in, "pid"));
  }
  json_decref(v);
  bridge *dead = leader_pid == a.pid ? &a : &b;
  bridge *alive = dead == &a ? &b : &a;
  CHECK(leader_pid == a.pid || leader_pid == b.pid);

  /* 4 first (both alive): the pull consumer alternates bridges. */
  for (int k = 0; k < NPULL; k++) {
    char id[32];
    snprintf(id, sizeof id, "p%02d", k);
    CHECK_INT(post(k % 2 ? &b : &a, id, "nl.edu.pull.created"), 202);
  }
  char seen[NPULL * 2][64];
  size_t nseen = 0;
  for (int round = 0; round < 40 && nseen < NPULL; round++) {
    int n = pull_round(round % 2 ? &b : &a, round % 2 ? &a : &b, seen, &nseen);
    CHECK(n >= 0);
    if (n < 0) break;
  }
  CHECK_INT(nseen, NPULL);
  /* each once, in order: one ordering key (order_by = source), so the
   * bridges delivered them one at a time in posting order, whichever
   * bridge took each; the consumer, fetching and committing on alternate
   * bridges, sees exactly that order */
  for (size_t k = 0; k < nseen && k < NPULL; k++) {
    char want[16];
    snprintf(want, sizeof want, "p%02zu", k);
    CHECK_STR(seen[k], want);
  }

  /* 3 continued. Freeze the leader (SIGSTOP): its TCP connection stays,
   * but its leader session ends once idle past its timeout, and the other
   * bridge takes the sweeper over. Thaw it: it finds its session gone and
   * leads nothing. Then kill -9 the new leader: the thawed one takes the
   * sweeper back. */
  bridge *leader = dead, *second = alive;
  CHECK_INT(kill(leader->pid, SIGSTOP), 0);
  lead_wait w2 = {.ask = second, .not_id = first};
  CHECK(ceb_test_wait(other_leads, &w2, 90000));
  char now_id[160];
  snprintf(now_id, sizeof now_id, "%s", w2.got);
  CHECK_INT(kill(leader->pid, SIGCONT), 0);
  CHECK(ceb_test_pid_stop(second->pid, SIGKILL, 30000) == -1);
  second->pid = 0;
  lead_wait w3 = {.ask = leader, .not_id = now_id};
  CHECK(ceb_test_wait(other_leads, &w3, 90000));
  CHECK_STR(w3.got, first);

  /* the survivor stops cleanly (under the sanitizers: nothing leaked) */
  CHECK_INT(ceb_test_pid_stop(leader->pid, SIGTERM, 60000), 0);
  for (int k = 0; k < 2; k++) {
    char *text = ceb_test_read_file(k ? b.log : a.log, NULL);
    CHECK(text && !strstr(text, "runtime error") &&
          !strstr(text, "AddressSanitizer"));
    free(text);
  }
  rx_stop(g_rx);
  ceb_test_pg_cleanup(&pg);
  int rc = ceb_test_done("integration_cluster_pg");
  free(tmp);
  return rc;
}
