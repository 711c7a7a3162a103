/* Several bridges on one PostgreSQL (issue 14, "Proven by"), each scenario
 * a ctest entry of its own (argv[1]), against a private PostgreSQL 15
 * (tests/common/ceb_test_pg.h), real `cebridge run` processes, 16 client
 * threads posting round robin and retrying on another bridge
 * (ha_load.h), and one webhook receiver behind them (ha_receiver.h).
 * Nothing sleeps to wait: every wait is a condition with a deadline; every
 * load is bounded (events per client) and stopped by the test.
 *
 *   kill     three bridges, kill -9 one of them twice during the load and
 *            restart it: every 202'd event delivered at least once, no key
 *            out of order, duplicates counted and reported, the killed
 *            instances' claims taken over once their lease ends (not
 *            before, not much after)
 *   freeze   SIGSTOP a bridge with deliveries in flight past its lease,
 *            the other takes them over, SIGCONT: the frozen bridge's late
 *            settles are refused (logged), no event ends in two final
 *            states (delivered and dead-lettered)
 *   dedupe   the same event posted to two bridges: one journal row, one
 *            delivery; the same Idempotency-Key sent to two bridges at
 *            once: one processed, the other 409 or the replayed answer
 *   dbrestart  PostgreSQL stopped under load: clients get 503 with
 *            Retry-After meanwhile, the bridges recover by themselves once
 *            it is back, nothing acknowledged is lost
 *   rolling  SIGTERM each bridge in turn and start it again under load,
 *            clients retrying on another bridge: no 202'd event lost */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_pg.h"
#include "ceb_test_proc.h"
#include "ha_bridge.h"
#include "ha_load.h"
#include "ha_receiver.h"

#define CLIENTS 16
#define KEYS 4          /* ordering keys per client */
#define PER_CLIENT 4000 /* events per client at most */
#define RATE 60         /* events a second per client at most */
#define MAXB 3
/* The route's timeout; a claim's lease is that plus 30 s
 * (CEBE_LEASE_MARGIN_MS: the engine settles every attempt by its timeout,
 * so a lease is never renewed), which is longer than store.lease here. */
#define ROUTE_TIMEOUT_S 2
#define LEASE_MS ((ROUTE_TIMEOUT_S + 30) * 1000)

typedef struct ha_env {
  ceb_test_pg pg;
  char *dir;
  ha_receiver *rx;
  ha_bridge b[MAXB];
  int nb;
  _Atomic int ports[MAXB]; /* intermediary ports the clients use */
  const char *extra;       /* more [bridge] keys */
  int rate;                /* events a second per client, 0: RATE */
  const char *sink_extra;  /* more [sink hook] keys */
} ha_env;

/* The instance name of bridge i's start number `start`: each start is a
 * new instance, so the claims of a killed one can be told apart. */
static void instance_name(char *buf, size_t len, int i, int start) {
  snprintf(buf, len, "node%d-s%d", i, start);
}

/* (Re)writes bridge i's config for its next start. */
static int write_conf(ha_env *e, int i) {
  char conf[4096], inst[32];
  instance_name(inst, sizeof inst, i, e->b[i].starts + 1);
  snprintf(conf, sizeof conf,
           "[bridge]\n"
           "store = %s\n"
           "instance = %s\n"
           "store.lease = 5s\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s/admin.port\n"
           "log.format = text\n"
           "profile = warn\n"
           "drain_timeout = 10s\n"
           "%s"
           "\n[source intermediary]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/http.port\n"
           "auth = none\n"
           "idempotency = optional\n"
           "\n[sink hook]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/hook\n"
           "allow_insecure_http = true\n"
           "%s"
           "\n[route posted]\n"
           "from = intermediary\n"
           "to = hook\n"
           "order_by = subject\n"
           "timeout = %ds\n"
           "dlq = store\n",
           e->pg.uri, inst, e->b[i].dir, e->extra ? e->extra : "", e->b[i].dir,
           ha_receiver_port(e->rx), e->sink_extra ? e->sink_extra : "",
           ROUTE_TIMEOUT_S);
  return ha_bridge_write_conf(&e->b[i], conf);
}

/* Starts bridge i (a new instance name) and publishes its intermediary
 * port to the clients. */
static int start(ha_env *e, int i) {
  char path[700];
  snprintf(path, sizeof path, "%s/http.port", e->b[i].dir);
  unlink(path);
  if (write_conf(e, i) != 0 || ha_bridge_start(&e->b[i]) != 0) return -1;
  int port = ceb_test_wait_port_file(path, 30000);
  if (port <= 0) return -1;
  atomic_store(&e->ports[i], port);
  return 0;
}

/* Bridge i gets sig while the clients still use it (they see 503
 * draining, resets, refused connections and retry on another bridge, as
 * behind a balancer that has not noticed yet); once it is gone the
 * clients stop trying it. */
static int stop(ha_env *e, int i, int sig) {
  int rc = ha_bridge_stop(&e->b[i], sig);
  atomic_store(&e->ports[i], 0);
  return rc;
}

static int env_up(ha_env *e, const char *tag, int nb, const char *extra) {
  const char *sink_extra = e->sink_extra; /* set before, the rest not */
  memset(e, 0, sizeof *e);
  e->nb = nb;
  e->extra = extra;
  e->sink_extra = sink_extra;
  if (ceb_test_pg_start(&e->pg, tag) != 0) return -1;
  e->dir = ceb_test_tmpdir(tag);
  e->rx = ha_receiver_start(CLIENTS, PER_CLIENT, KEYS);
  if (!e->dir || !e->rx) return -1;
  for (int i = 0; i < nb; i++) {
    char name[16];
    snprintf(name, sizeof name, "node%d", i);
    if (ha_bridge_init(&e->b[i], e->dir, name, "") != 0) return -1;
  }
  for (int i = 0; i < nb; i++)
    if (start(e, i) != 0) return -1;
  return 0;
}

static void env_down(ha_env *e) {
  for (int i = 0; i < e->nb; i++) {
    if (e->b[i].pid > 0) ha_bridge_stop(&e->b[i], SIGKILL);
    if (ceb_test_failures && e->b[i].starts) ha_bridge_dump_logs(&e->b[i]);
  }
  ha_receiver_stop(e->rx);
  ceb_test_pg_cleanup(&e->pg);
  free(e->dir);
}

/* ---- waits ---- */

typedef struct accepted_arg {
  ha_load *l;
  long want;
} accepted_arg;

/* Also true when the clients are through (then the check after the wait
 * finds out whether the step it waited for happened under load). */
static int accepted_reached(void *arg) {
  accepted_arg *a = arg;
  return ha_load_accepted(a->l) >= a->want || ha_load_finished(a->l);
}

/* Waits until `more` further events got their 202 (120 s). */
static int wait_accepted(ha_load *l, long more) {
  accepted_arg a = {l, ha_load_accepted(l) + more};
  return ceb_test_wait(accepted_reached, &a, 120000) &&
         ha_load_accepted(l) >= a.want;
}

typedef struct delivered_arg {
  ha_env *e;
  ha_load *l;
  int c, n; /* where the scan got to: the first event not yet delivered */
  const unsigned char *snapshot; /* NULL: every accepted event */
} delivered_arg;

/* Every event the clients got a 202 for (or those of the snapshot) was
 * delivered at least once. Resumes its scan where it stopped. */
static int all_delivered(void *arg) {
  delivered_arg *a = arg;
  for (; a->c < CLIENTS; a->c++, a->n = 0)
    for (; a->n < PER_CLIENT; a->n++) {
      int want = a->snapshot ? a->snapshot[a->c * PER_CLIENT + a->n]
                             : ha_load_is_accepted(a->l, a->c, a->n);
      if (want && ha_receiver_times(a->e->rx, a->c, a->n) == 0) return 0;
    }
  return 1;
}

/* Which events had their 202 now (malloc'd, CLIENTS * PER_CLIENT). */
static unsigned char *accepted_now(ha_load *l) {
  unsigned char *s = malloc((size_t)CLIENTS * PER_CLIENT);
  for (int c = 0; s && c < CLIENTS; c++)
    for (int n = 0; n < PER_CLIENT; n++)
      s[c * PER_CLIENT + n] = (unsigned char)ha_load_is_accepted(l, c, n);
  return s;
}

/* The end of every scenario with load: the clients stopped, every 202'd
 * event must reach the receiver; reports and checks loss, order and
 * duplicates. */
static void check_outcome(ha_env *e, ha_load *l, const char *what) {
  delivered_arg d = {e, l, 0, 0, NULL};
  int done = ceb_test_wait(all_delivered, &d, 180000);
  ha_load_stats st;
  ha_load_stats_get(l, &st);
  ha_rx_counts rc;
  ha_receiver_counts(e->rx, &rc);
  long lost = 0;
  for (int c = 0; c < CLIENTS; c++)
    for (int n = 0; n < PER_CLIENT; n++)
      if (ha_load_is_accepted(l, c, n) && !ha_receiver_times(e->rx, c, n)) {
        if (!lost++) fprintf(stderr, "%s: ha-%d-%d lost\n", what, c, n);
      }
  fprintf(stderr,
          "%s: %ld events got a 202; delivered %ld, duplicates %ld (%.2f %%), "
          "out of order %ld, lost %ld; clients saw %ld 503 (%ld with "
          "Retry-After), %ld 409, %ld transport errors, %ld other (%s), "
          "%ld retries\n",
          what, ha_load_accepted(l), rc.delivered, rc.duplicates,
          rc.delivered ? 100.0 * rc.duplicates / rc.delivered : 0.0,
          rc.disorder, lost, st.refused, st.retry_after, st.conflict,
          st.transport, st.other, st.first_other, st.retries);
  CHECK_MSG(done, "%s: not every 202'd event delivered", what);
  CHECK_INT(lost, 0);
  CHECK_MSG(rc.disorder == 0, "%s: %ld out of order, first %s", what,
            rc.disorder, rc.first_disorder);
  CHECK_INT(rc.unparsable, 0);
  CHECK_INT(st.other, 0);
}

static ha_load *load_start(ha_env *e, int idem) {
  ha_load_opts o = {CLIENTS,
                    PER_CLIENT,
                    KEYS,
                    e->nb,
                    e->ports,
                    idem,
                    e->rate ? e->rate : RATE};
  return ha_load_start(&o);
}

/* ---- scenarios ---- */

/* Deliveries in progress whose lease instance `inst` holds. */
static long held_by(PGconn *db, const char *inst) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM delivery WHERE state = 1 AND "
           "lease_owner = '%s'",
           inst);
  return (long)ceb_test_pg_int(db, sql);
}

typedef struct held_arg {
  PGconn *db;
  char inst[32];
  long held;      /* claims it held when it was killed */
  int64_t killed; /* when */
  int64_t moved;  /* when none was left, 0 before */
} held_arg;

static int released(void *arg) {
  held_arg *a = arg;
  return held_by(a->db, a->inst) == 0;
}

static int holds(void *arg) {
  held_arg *a = arg;
  return held_by(a->db, a->inst) > 0;
}

/* held_by(a->inst) unchanged for 500 ms: a frozen (SIGSTOP) bridge's
 * backends have run what it had sent already. Its last pipelined group
 * (a settle of the claims it held, COMMIT included) may still be in the
 * server's socket buffer when the process stops, and the server commits
 * it after the freeze: claims counted before that are settled by their
 * own, valid lease, not moved by another instance. */
typedef struct stable_arg {
  held_arg *k;
  long last;
  int64_t since;
} stable_arg;

static int held_stable(void *arg) {
  stable_arg *s = arg;
  long now_held = held_by(s->k->db, s->k->inst);
  int64_t now = ceb_test_now_ms();
  if (now_held != s->last) {
    s->last = now_held;
    s->since = now;
    return 0;
  }
  return now - s->since >= 500;
}

/* Both killed instances' claims moved (records when each did). */
static int all_released(void *arg) {
  held_arg *k = arg;
  int done = 1;
  for (int i = 0; i < 2; i++) {
    if (!k[i].moved && released(&k[i])) k[i].moved = ceb_test_now_ms();
    done &= k[i].moved != 0;
  }
  return done;
}

/* kill -9 bridge 1 twice under load, restarting it each time (a new
 * instance name per start). The slow receiver keeps deliveries in flight,
 * so each killed instance holds claims: they move to the other bridges
 * once their lease ends, not before (fencing: no two instances deliver a
 * claim at once) and not much after. */
static void scenario_kill(void) {
  ha_env e = {0};
  CHECK_INT(env_up(&e, "ha-kill", 3, NULL), 0);
  PGconn *db = ceb_test_failures ? NULL : ceb_test_pg_connect(&e.pg);
  CHECK(db != NULL);
  if (!db) goto out;
  ha_receiver_delay(e.rx, 50);
  ha_load *l = load_start(&e, 0);
  CHECK(l != NULL);
  if (!l) goto out;
  held_arg k[2];
  memset(k, 0, sizeof k);
  for (int round = 0; round < 2; round++) {
    CHECK(wait_accepted(l, 1500));
    k[round].db = db;
    instance_name(k[round].inst, sizeof k[round].inst, 1, e.b[1].starts);
    /* killed while it holds claims: frozen first so the store's count is
     * the one the kill leaves (a loaded machine caught it holding none);
     * if it held none at that moment, let it run until it does */
    long held = 0;
    for (int tries = 0; tries < 20 && held == 0; tries++) {
      CHECK(ceb_test_wait(holds, &k[round], 30000));
      kill(e.b[1].pid, SIGSTOP);
      stable_arg sa = {&k[round], -1, ceb_test_now_ms()};
      CHECK(ceb_test_wait(held_stable, &sa, 30000));
      held = held_by(db, k[round].inst);
      if (held == 0) kill(e.b[1].pid, SIGCONT);
    }
    stop(&e, 1, SIGKILL);
    k[round].killed = ceb_test_now_ms();
    k[round].held = held;
    CHECK_INT(start(&e, 1), 0);
  }
  CHECK(ceb_test_wait(all_released, k, LEASE_MS + 60000));
  for (int round = 0; round < 2; round++) {
    double took = (k[round].moved - k[round].killed) / 1000.0;
    fprintf(stderr,
            "kill %d: %s held %ld claims; none left %.1f s after the kill "
            "(lease %d s)\n",
            round + 1, k[round].inst, k[round].held, took, LEASE_MS / 1000);
    CHECK_MSG(k[round].held > 0, "%s held no claim: the kill proves nothing",
              k[round].inst);
    /* a claim in progress at the kill was made at most a route timeout
     * before it, so its lease ends at least 30 s after the kill */
    CHECK_MSG(took >= (LEASE_MS - ROUTE_TIMEOUT_S * 1000 - 1000) / 1000.0,
              "claims of %s moved before their lease ended (%.1f s)",
              k[round].inst, took);
    CHECK_MSG(took <= (LEASE_MS + 20000) / 1000.0,
              "claims of %s took %.1f s to move", k[round].inst, took);
  }
  CHECK(wait_accepted(l, 1500));
  ha_load_stop(l);
  ha_receiver_delay(e.rx, 0);
  check_outcome(&e, l, "kill");
  ha_load_free(l);
out:
  if (db) PQfinish(db);
  env_down(&e);
}

/* Lines of a bridge's logs that contain needle. */
static int log_count(const ha_bridge *b, const char *needle) {
  char *text = ha_bridge_logs(b);
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p++)
    n++;
  free(text);
  return n;
}

typedef struct log_arg {
  const ha_bridge *b;
  const char *needle;
} log_arg;

static int log_has(void *arg) {
  log_arg *a = arg;
  return log_count(a->b, a->needle) > 0;
}

/* SIGSTOP bridge 0 while it holds claims (a slow receiver), past its
 * lease: bridge 1 delivers what bridge 0 held; SIGCONT: bridge 0's late
 * outcomes are refused (its log says so), nothing is dead-lettered, every
 * event is delivered, and every delivery row ends settled once. */
static void scenario_freeze(void) {
  ha_env e = {0};
  /* The frozen bridge's attempts all time out when it wakes up (its clock
   * jumped past their timeouts): five of them open its sink's circuit, and
   * an open circuit makes the engine claim whatever falls due and fail it
   * at once ("circuit.open"), counting an attempt and pushing the
   * delivery's next try out by the retry schedule, although the other
   * bridge's circuit is closed. That is the engine's single-bridge design
   * (ENGINE NOTE in the report of issue 14's tests); it stretches this
   * scenario past any deadline, so the circuit stays out of it here. */
  e.sink_extra = "circuit.failures = 1000000\n";
  CHECK_INT(env_up(&e, "ha-freeze", 2, NULL), 0);
  PGconn *db = ceb_test_failures ? NULL : ceb_test_pg_connect(&e.pg);
  CHECK(db != NULL);
  if (!db) goto out;
  /* 100 ms an answer: each bridge's 8 sink connections carry 80 events a
   * second, and always hold claims; the clients offer less than the one
   * bridge left can carry, so no backlog hides the takeover */
  ha_receiver_delay(e.rx, 100);
  e.rate = 4;
  ha_load *l = load_start(&e, 0);
  CHECK(l != NULL);
  if (!l) goto out;
  CHECK(wait_accepted(l, 300));
  char inst[32];
  instance_name(inst, sizeof inst, 0, e.b[0].starts);
  /* frozen while it holds claims: the store says so once it is stopped
   * (a stopped bridge settles nothing); if it held none at that moment,
   * let it run until it does and freeze it again */
  held_arg h = {.db = db};
  snprintf(h.inst, sizeof h.inst, "%s", inst);
  long held = 0;
  for (int tries = 0; tries < 20 && held == 0; tries++) {
    CHECK(ceb_test_wait(holds, &h, 30000));
    kill(e.b[0].pid, SIGSTOP);
    held = held_by(db, inst);
    if (held == 0) kill(e.b[0].pid, SIGCONT);
  }
  int port0 = atomic_exchange(&e.ports[0], 0);
  unsigned char *before = accepted_now(l);
  delivered_arg d = {&e, l, 0, 0, before};
  /* bridge 0 is frozen: only bridge 1, after bridge 0's leases ended, can
   * deliver what bridge 0 had claimed */
  int64_t t0 = ceb_test_now_ms();
  CHECK(ceb_test_wait(all_delivered, &d, LEASE_MS + 60000));
  fprintf(stderr,
          "freeze: %s held %ld claims when frozen; everything 202'd before "
          "was delivered %.1f s later (lease %d s)\n",
          inst, held, (ceb_test_now_ms() - t0) / 1000.0, LEASE_MS / 1000);
  CHECK_MSG(held > 0, "the frozen instance held no claim");
  free(before);
  /* its claims may have reached the receiver before the freeze (their
   * requests were already written): woken before its leases ended, it
   * would settle them legitimately. Wake it only once another bridge holds
   * them (taken over after the lease), so every settle it then makes is
   * late. */
  CHECK_MSG(ceb_test_wait(released, &h, LEASE_MS + 60000),
            "the frozen instance's claims were not taken over");
  int refused_before = log_count(&e.b[0], "late settle refused");
  kill(e.b[0].pid, SIGCONT);
  log_arg la = {&e.b[0], "late settle refused"};
  CHECK_MSG(ceb_test_wait(log_has, &la, 30000),
            "the frozen bridge's late settles were not refused in its log");
  fprintf(stderr, "freeze: %d late settles refused after SIGCONT\n",
          log_count(&e.b[0], "late settle refused") - refused_before);
  atomic_store(&e.ports[0], port0);
  CHECK(wait_accepted(l, 200));
  ha_load_stop(l);
  ha_receiver_delay(e.rx, 0);
  check_outcome(&e, l, "freeze");
  /* one final state each: nothing dead-lettered, nothing left open */
  CHECK_INT(ceb_test_pg_int(db, "SELECT count(*) FROM dlq"), 0);
  CHECK_INT(ceb_test_pg_int(db, "SELECT count(*) FROM delivery WHERE "
                                "dlq_id IS NOT NULL"),
            0);
  ha_load_free(l);
out:
  if (db) PQfinish(db);
  env_down(&e);
}

typedef struct post_arg {
  int port;
  const char *body;
  const char *idem;
  int status;
  atomic_int *go;
} post_arg;

static int post(int port, const char *body, const char *idem) {
  char url[96], h[160];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h, sizeof h, "Idempotency-Key: %s", idem ? idem : "");
  const char *hdr[] = {"Content-Type: application/cloudevents+json",
                       idem ? h : NULL, NULL};
  return ceb_test_http("POST", url, hdr, body, strlen(body), NULL);
}

static void *post_thread(void *arg) {
  post_arg *a = arg;
  while (!atomic_load(a->go)) {
  }
  a->status = post(a->port, a->body, a->idem);
  return NULL;
}

static void event_body(char *buf, size_t len, const char *id, int n) {
  snprintf(buf, len,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:nld:oin:"
           "00000001234567890000:systeem:ha\",\"type\":\"nl.edu.ha.posted\","
           "\"subject\":\"k-%d-0\",\"time\":\"2026-11-26T12:00:00Z\","
           "\"data\":{\"n\":%d}}",
           id, n / PER_CLIENT, n);
}

typedef struct times_arg {
  ha_receiver *rx;
  int c, n;
} times_arg;

static int delivered_once(void *arg) {
  times_arg *a = arg;
  return ha_receiver_times(a->rx, a->c, a->n) >= 1;
}

/* The same event through both bridges, one after the other and at once;
 * the same Idempotency-Key through both at once. */
static void scenario_dedupe(void) {
  ha_env e = {0};
  CHECK_INT(env_up(&e, "ha-dedupe", 2, NULL), 0);
  if (ceb_test_failures) goto out;
  PGconn *db = ceb_test_pg_connect(&e.pg);
  CHECK(db != NULL);
  char body[1024], id[64];
  /* one after the other: both answers 202, one row, one delivery */
  snprintf(id, sizeof id, "ha-0-0");
  event_body(body, sizeof body, id, 0);
  CHECK_INT(post(atomic_load(&e.ports[0]), body, NULL), 202);
  CHECK_INT(post(atomic_load(&e.ports[1]), body, NULL), 202);
  /* at once, 20 events, each to both bridges; then the same
   * Idempotency-Key (and event) to both at once, 20 keys */
  int statuses[2][3] = {{0}}; /* [idem][202, 409, other] */
  for (int k = 1; k <= 40; k++) {
    int idem = k > 20;
    snprintf(id, sizeof id, "ha-0-%d", k);
    event_body(body, sizeof body, id, k);
    char key[40]; /* Idempotency-Key is a UUID v4 */
    snprintf(key, sizeof key, "00000000-0000-4000-8000-%012d", k);
    atomic_int go = 0;
    post_arg a[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
      a[i] =
          (post_arg){atomic_load(&e.ports[i]), body, idem ? key : NULL, 0, &go};
      pthread_create(&t[i], NULL, post_thread, &a[i]);
    }
    atomic_store(&go, 1);
    for (int i = 0; i < 2; i++) {
      pthread_join(t[i], NULL);
      int s = a[i].status;
      statuses[idem][s == 202 ? 0 : s == 409 ? 1 : 2]++;
      if (s != 202 && s != 409)
        fprintf(stderr, "dedupe: %s answered %d\n", id, s);
    }
  }
  fprintf(stderr,
          "dedupe: same event at once: %d x 202, %d x 409; same "
          "Idempotency-Key at once: %d x 202, %d x 409\n",
          statuses[0][0], statuses[0][1], statuses[1][0], statuses[1][1]);
  CHECK_INT(statuses[0][2] + statuses[1][2], 0);
  /* at least one of each pair processed */
  CHECK(statuses[0][0] >= 20 && statuses[1][0] >= 20);
  for (int k = 0; k <= 40; k++) {
    times_arg ta = {e.rx, 0, k};
    CHECK_MSG(ceb_test_wait(delivered_once, &ta, 30000), "ha-0-%d", k);
  }
  /* Both bridges drained: anything still to go out went. */
  CHECK_INT(stop(&e, 0, SIGTERM), 0);
  CHECK_INT(stop(&e, 1, SIGTERM), 0);
  for (int k = 0; k <= 40; k++)
    CHECK_MSG(ha_receiver_times(e.rx, 0, k) == 1, "ha-0-%d delivered %d times",
              k, ha_receiver_times(e.rx, 0, k));
  if (db) {
    int64_t rows = ceb_test_pg_int(
        db, "SELECT count(*) FROM journal WHERE id LIKE 'ha-0-%'");
    CHECK_INT(rows, 41);
    PQfinish(db);
  }
out:
  env_down(&e);
}

typedef struct refused_arg {
  ha_load *l;
  long want;
} refused_arg;

static int refused_reached(void *arg) {
  refused_arg *a = arg;
  ha_load_stats st;
  ha_load_stats_get(a->l, &st);
  return st.refused >= a->want;
}

static int not_ready(void *arg) {
  ha_bridge *b = arg;
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", b->admin_port);
  return ceb_test_http("GET", url, NULL, NULL, 0, NULL) == 503;
}

static int ready(void *arg) {
  ha_bridge *b = arg;
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", b->admin_port);
  return ceb_test_http("GET", url, NULL, NULL, 0, NULL) == 200;
}

/* PostgreSQL goes away under load (fast shutdown) and comes back. */
static void scenario_dbrestart(void) {
  ha_env e = {0};
  CHECK_INT(env_up(&e, "ha-dbrestart", 2, NULL), 0);
  if (ceb_test_failures) goto out;
  ha_load *l = load_start(&e, 0);
  CHECK(l != NULL);
  if (!l) goto out;
  CHECK(wait_accepted(l, 1500));
  ha_load_stats st;
  ha_load_stats_get(l, &st);
  CHECK_INT(ceb_test_pg_stop(&e.pg, CEB_TEST_PG_FAST), 0);
  refused_arg ra = {l, st.refused + 50};
  CHECK_MSG(ceb_test_wait(refused_reached, &ra, 60000),
            "the clients got no 503 while the database was down");
  CHECK(ceb_test_wait(not_ready, &e.b[0], 30000));
  long during = ha_load_accepted(l);
  CHECK_INT(ceb_test_pg_up(&e.pg), 0);
  CHECK(ceb_test_wait(ready, &e.b[0], 60000));
  CHECK(ceb_test_wait(ready, &e.b[1], 60000));
  CHECK(wait_accepted(l, 1500));
  fprintf(stderr, "dbrestart: %ld accepted before the database came back\n",
          during);
  ha_load_stop(l);
  check_outcome(&e, l, "dbrestart");
  ha_load_stats_get(l, &st);
  CHECK_MSG(st.retry_after == st.refused, "%ld of %ld 503s had Retry-After",
            st.retry_after, st.refused);
  ha_load_free(l);
out:
  env_down(&e);
}

/* Each bridge in turn: out of the balancer, SIGTERM (drain, exit 0),
 * started again, back in. */
static void scenario_rolling(void) {
  ha_env e = {0};
  CHECK_INT(env_up(&e, "ha-rolling", 3, NULL), 0);
  if (ceb_test_failures) goto out;
  ha_load *l = load_start(&e, 0);
  CHECK(l != NULL);
  if (!l) goto out;
  for (int i = 0; i < e.nb; i++) {
    CHECK(wait_accepted(l, 1000));
    CHECK_INT(stop(&e, i, SIGTERM), 0);
    CHECK_INT(start(&e, i), 0);
  }
  CHECK(wait_accepted(l, 1000));
  ha_load_stop(l);
  check_outcome(&e, l, "rolling");
  ha_load_free(l);
out:
  env_down(&e);
}

int main(int argc, char **argv) {
  ceb_test_pg_require();
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const char *s = argc > 1 ? argv[1] : "";
  char name[64];
  snprintf(name, sizeof name, "test_ha_pg %s", s);
  if (!strcmp(s, "kill"))
    scenario_kill();
  else if (!strcmp(s, "freeze"))
    scenario_freeze();
  else if (!strcmp(s, "dedupe"))
    scenario_dedupe();
  else if (!strcmp(s, "dbrestart"))
    scenario_dbrestart();
  else if (!strcmp(s, "rolling"))
    scenario_rolling();
  else
    fprintf(stderr, "usage: test_ha_pg kill|freeze|dedupe|dbrestart|rolling\n");
  return ceb_test_done(name);
}
