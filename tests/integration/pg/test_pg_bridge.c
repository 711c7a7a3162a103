/* The real `cebridge run` on a PostgreSQL store (store = postgresql://…,
 * the password from store.password = file:…): HTTP intermediary -> 202 ->
 * webhook sink -> a receiver in this test. Then PostgreSQL restarts under
 * load (four clients posting): while it is down, clients get 503 with
 * Retry-After and application/problem+json and /readyz says 503; the bridge
 * recovers by itself; every event that got a 202 is delivered. The
 * password never reaches the log. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_pg.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"
#include "hin_harness.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:pg"
#define CLIENTS 4
/* 202s per client at most, and attempts at most: the loads are bounded */
#define PER_CLIENT_MAX 4000
#define PER_CLIENT_TRIES 100000

/* ---- receiver: ceb_test_rx, answering 204 ---- */

static void rx_answer(void *arg, const rx_request *req, size_t index,
                      rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 204;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- clients ---- */

typedef struct load {
  char url[128];
  atomic_int stop;
  atomic_int accepted, unavailable, other, bad_503;
  pthread_mutex_t lock;
  char **ok_ids; /* every id that got a 202 */
  size_t nok, capok;
} load;

typedef struct client {
  load *l;
  int no;
} client;

static long post_event(const char *url, const char *id, hin_resp *out) {
  char h_id[96];
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: " SRC,
                              "ce-type: nl.edu.test.created",
                              "ce-time: 2026-01-01T00:00:00Z",
                              h_id,
                              "Content-Type: application/json",
                              NULL};
  *out = hin_request(url, "POST", hdrs, "{\"n\":1}", 7, 0);
  return out->status;
}

static void *client_main(void *arg) {
  client *c = arg;
  load *l = c->l;
  int ok = 0;
  for (int i = 0;
       ok < PER_CLIENT_MAX && i < PER_CLIENT_TRIES && !atomic_load(&l->stop);
       i++) {
    char id[64];
    snprintf(id, sizeof id, "c%d-%d", c->no, i);
    hin_resp r;
    long st = post_event(l->url, id, &r);
    if (st == 202) {
      pthread_mutex_lock(&l->lock);
      if (l->nok == l->capok) {
        l->capok = l->capok ? l->capok * 2 : 1024;
        l->ok_ids = realloc(l->ok_ids, l->capok * sizeof *l->ok_ids);
      }
      l->ok_ids[l->nok++] = strdup(id);
      pthread_mutex_unlock(&l->lock);
      atomic_fetch_add(&l->accepted, 1);
      ok++;
    } else if (st == 503) {
      char ra[32], ct[64];
      if (!hin_header(&r, "Retry-After", ra, sizeof ra) ||
          !hin_header(&r, "Content-Type", ct, sizeof ct) ||
          strstr(ct, "application/problem+json") == NULL)
        atomic_fetch_add(&l->bad_503, 1);
      atomic_fetch_add(&l->unavailable, 1);
      /* a client backs off before it tries again (as Retry-After asks) */
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    } else {
      atomic_fetch_add(&l->other, 1);
    }
    hin_resp_free(&r);
  }
  return NULL;
}

typedef struct at_least {
  atomic_int *v;
  int want;
} at_least;

static int reached(void *arg) {
  at_least *a = arg;
  return atomic_load(a->v) >= a->want;
}

typedef struct readyz {
  char url[128];
  long want;
} readyz;

static int readyz_is(void *arg) {
  readyz *z = arg;
  hin_resp r = hin_request(z->url, "GET", NULL, NULL, 0, 0);
  long st = r.status;
  hin_resp_free(&r);
  return st == z->want;
}

/* The admin API while the database is away: a store query answers 503
 * problem+json store_unavailable with Retry-After (it was 500 store_error:
 * a script could not tell "try later" from a bug). */
typedef struct admin_down {
  char base[128];
  char bearer[200];
  const char *method, *path;
  long last; /* the last answer's status */
} admin_down;

static int admin_says_unavailable(void *arg) {
  admin_down *a = arg;
  char url[300], ra[32];
  snprintf(url, sizeof url, "%s%s", a->base, a->path);
  const char *h[] = {a->bearer, NULL};
  hin_resp r = hin_request(url, a->method, h, NULL, 0, 0);
  int ok = r.status == 503 && hin_header(&r, "Retry-After", ra, sizeof ra) &&
           atoi(ra) > 0 && hin_header(&r, "Content-Type", url, sizeof url) &&
           strcmp(url, "application/problem+json") == 0 &&
           hin_json_str(&r, "code", "store_unavailable");
  a->last = r.status;
  hin_resp_free(&r);
  return ok;
}

/* A store read that waits (a table lock held by the test) holds its own
 * admin connection only: /healthz, /readyz and other calls still answer.
 * One libmicrohttpd thread served every admin connection before, so the
 * liveness probe hung behind a slow DLQ query (kubelet would restart a
 * bridge that is merely waiting on its database). */
typedef struct slow_call {
  pthread_t th;
  char url[300];
  char bearer[200];
  long status;
} slow_call;

static void *slow_call_main(void *arg) {
  slow_call *sc = arg;
  const char *h[] = {sc->bearer, NULL};
  hin_resp r = hin_request(sc->url, "GET", h, NULL, 0, 0);
  sc->status = r.status;
  hin_resp_free(&r);
  return NULL;
}

/* 1 when a session of the bridge waits for a lock on the dlq table. */
static int dlq_read_waits(void *arg) {
  PGconn *c = arg;
  PGresult *r =
      PQexec(c, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type"
                " = 'Lock' AND query LIKE '%FROM dlq%'");
  int n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : 0;
  PQclear(r);
  return n > 0;
}

static void slow_store_read(ceb_test_pg *pg, const char *dir, int aport) {
  PGconn *lk = ceb_test_pg_connect(pg);
  CHECK(lk != NULL);
  if (!lk) return;
  PGresult *r = PQexec(lk, "BEGIN; LOCK TABLE dlq IN ACCESS EXCLUSIVE MODE");
  CHECK_INT(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  slow_call sc = {.status = -1};
  snprintf(sc.url, sizeof sc.url, "http://127.0.0.1:%d/v1/dlq", aport);
  char tpath[700];
  snprintf(tpath, sizeof tpath, "%s/admin.token", dir);
  char *tok = ceb_test_read_file(tpath, NULL);
  if (tok) tok[strcspn(tok, "\r\n")] = '\0';
  snprintf(sc.bearer, sizeof sc.bearer, "Authorization: Bearer %s",
           tok ? tok : "");
  free(tok);
  pthread_create(&sc.th, NULL, slow_call_main, &sc);
  /* another session: pg_stat_activity is read once per transaction */
  PGconn *watch = ceb_test_pg_connect(pg);
  CHECK_MSG(watch && ceb_test_wait(dlq_read_waits, watch, 30000),
            "the DLQ read never waited for the lock");
  PQfinish(watch);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", aport);
  hin_resp h = hin_request(url, "GET", NULL, NULL, 0, 0);
  CHECK_MSG(h.status == 200, "/healthz beside a waiting read: %ld", h.status);
  hin_resp_free(&h);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", aport);
  h = hin_request(url, "GET", NULL, NULL, 0, 0);
  CHECK_MSG(h.status == 200, "/readyz beside a waiting read: %ld", h.status);
  hin_resp_free(&h);
  r = PQexec(lk, "COMMIT");
  PQclear(r);
  pthread_join(sc.th, NULL);
  CHECK_INT(sc.status, 200); /* the waiting read completes */
  PQfinish(lk);
}

/* GET /v1/routes while the database is away: the route is listed with
 * its configuration, its queue figures null and the store's reason (it
 * said queue_depth 0: "nothing waiting" with 4 clients' events pending). */
static int routes_say_unknown(void *arg) {
  admin_down *a = arg;
  char url[300];
  snprintf(url, sizeof url, "%s/v1/routes", a->base);
  const char *h[] = {a->bearer, NULL};
  hin_resp r = hin_request(url, "GET", h, NULL, 0, 0);
  json_t *doc = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
  json_t *route = json_array_get(doc, 0);
  const char *why = json_string_value(json_object_get(route, "queue_unknown"));
  int ok = json_is_null(json_object_get(route, "queue_depth")) &&
           json_is_null(json_object_get(route, "oldest_age_ms")) && why &&
           strstr(why, "the store is unavailable") &&
           json_is_string(json_object_get(route, "to")) &&
           json_is_string(json_object_get(route, "circuit"));
  a->last = r.status;
  json_decref(doc);
  hin_resp_free(&r);
  return ok;
}

typedef struct all_rx {
  rx_server *r;
  load *l;
  size_t missing;
} all_rx;

/* 1 when every 202'd id is among the received ones. */
static int all_delivered(void *arg) {
  all_rx *a = arg;
  size_t count = rx_count(a->r), n = 0;
  const char **got = malloc((count ? count : 1) * sizeof *got);
  for (size_t i = 0; i < count; i++) {
    const char *id = rx_get(a->r, i)->event_id;
    if (id) got[n++] = id;
  }
  if (n) qsort(got, n, sizeof *got, cmp_str);
  a->missing = 0;
  for (size_t i = 0; i < a->l->nok; i++)
    if (!n || !bsearch(&a->l->ok_ids[i], got, n, sizeof *got, cmp_str))
      a->missing++;
  free(got);
  return a->missing == 0;
}

static void write_conf(const char *dir, const ceb_test_pg *pg, int rxp) {
  char path[700];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/conf/pgpass", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%s\n", pg->password);
    fclose(f);
  }
  snprintf(path, sizeof path, "%s/conf/00-bridge.conf", dir);
  f = fopen(path, "w");
  if (!f) return;
  fprintf(f,
          "[bridge]\n"
          "store = postgresql://ceb@127.0.0.1:%d/ceb\n"
          "store.password = file:%s/conf/pgpass\n"
          "store.pool = 4\n"
          "state_dir = %s\n"
          "admin.listen = 127.0.0.1:0\n"
          "admin.port_file = %s/aport\n"
          "log.format = text\n"
          "drain_timeout = 10s\n"
          "\n[source intermediary]\n"
          "plugin = http\n"
          "listen = 127.0.0.1:0\n"
          "port_file = %s/port\n"
          "auth = none\n"
          "\n[sink partner]\n"
          "plugin = http\n"
          "url = http://127.0.0.1:%d/hook\n"
          "allow_insecure_http = true\n"
          "mode = structured\n"
          "\n[route partners]\n"
          "from = intermediary\n"
          "to = partner\n",
          pg->port, dir, dir, dir, dir, rxp);
  fclose(f);
}

int main(void) {
  ceb_test_pg_require();
  ceb_test_pg pg;
  if (ceb_test_pg_start(&pg, "pg-bridge") != 0) {
    CHECK(0);
    return ceb_test_done("integration_pg_bridge");
  }
  char *dir = ceb_test_tmpdir("pg_bridge");
  rx_server *r = rx_start(rx_answer, NULL);
  CHECK(r != NULL);
  if (!r) {
    free(dir);
    ceb_test_pg_cleanup(&pg);
    return ceb_test_done("integration_pg_bridge");
  }
  write_conf(dir, &pg, rx_port(r));
  char conf[600], logp[600], pf[600], apf[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(logp, sizeof logp, "%s/bridge.log", dir);
  snprintf(pf, sizeof pf, "%s/port", dir);
  snprintf(apf, sizeof apf, "%s/aport", dir);
  pid_t pid = ceb_test_bridge_start(conf, logp);
  int port = ceb_test_wait_port_file(pf, 30000);
  int aport = ceb_test_wait_port_file(apf, 30000);
  CHECK(port > 0 && aport > 0);

  load l = {.lock = PTHREAD_MUTEX_INITIALIZER};
  snprintf(l.url, sizeof l.url, "http://127.0.0.1:%d/events", port);
  readyz z;
  snprintf(z.url, sizeof z.url, "http://127.0.0.1:%d/readyz", aport);

  /* the basics: one event, 202, delivered */
  hin_resp first;
  CHECK_INT(post_event(l.url, "first", &first), 202);
  hin_resp_free(&first);
  pthread_mutex_lock(&l.lock);
  l.ok_ids = malloc(1024 * sizeof *l.ok_ids);
  l.capok = 1024;
  l.ok_ids[l.nok++] = strdup("first");
  pthread_mutex_unlock(&l.lock);
  all_rx all = {r, &l, 0};
  CHECK(ceb_test_wait(all_delivered, &all, 30000));

  /* load, and PostgreSQL restarts under it */
  pthread_t th[CLIENTS];
  client cl[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    cl[i] = (client){&l, i};
    pthread_create(&th[i], NULL, client_main, &cl[i]);
  }
  at_least acc = {&l.accepted, 100};
  CHECK(ceb_test_wait(reached, &acc, 60000));
  CHECK_INT(ceb_test_pg_stop(&pg, CEB_TEST_PG_FAST), 0);
  at_least down = {&l.unavailable, 20};
  CHECK_MSG(ceb_test_wait(reached, &down, 60000), "503s while down: %d",
            atomic_load(&l.unavailable));
  z.want = 503;
  CHECK(ceb_test_wait(readyz_is, &z, 30000));
  {
    admin_down ad = {.method = "GET", .path = "/v1/dlq"};
    snprintf(ad.base, sizeof ad.base, "http://127.0.0.1:%d", aport);
    char tpath[700];
    snprintf(tpath, sizeof tpath, "%s/admin.token", dir);
    char *tok = ceb_test_read_file(tpath, NULL);
    CHECK(tok != NULL);
    if (tok) tok[strcspn(tok, "\r\n")] = '\0';
    snprintf(ad.bearer, sizeof ad.bearer, "Authorization: Bearer %s",
             tok ? tok : "");
    free(tok);
    CHECK_MSG(ceb_test_wait(admin_says_unavailable, &ad, 30000),
              "admin %s %s while down: %ld", ad.method, ad.path, ad.last);
    ad.method = "POST";
    ad.path = "/v1/routes/partners/replay?since=-1h&dry_run=true";
    CHECK_MSG(ceb_test_wait(admin_says_unavailable, &ad, 30000),
              "admin %s %s while down: %ld", ad.method, ad.path, ad.last);
    ad.path = "/v1/dlq/replay?route=partners&dry_run=true";
    CHECK_MSG(ceb_test_wait(admin_says_unavailable, &ad, 30000),
              "admin %s %s while down: %ld", ad.method, ad.path, ad.last);
    CHECK_MSG(ceb_test_wait(routes_say_unknown, &ad, 30000),
              "GET /v1/routes while down: %ld, queue figures not null",
              ad.last);
  }
  CHECK_INT(ceb_test_pg_up(&pg), 0);
  acc.want = atomic_load(&l.accepted) + 100;
  CHECK_MSG(ceb_test_wait(reached, &acc, 60000),
            "202s after PostgreSQL came back: %d of %d",
            atomic_load(&l.accepted), acc.want);
  z.want = 200;
  CHECK(ceb_test_wait(readyz_is, &z, 30000));
  atomic_store(&l.stop, 1);
  for (int i = 0; i < CLIENTS; i++)
    pthread_join(th[i], NULL);

  CHECK_MSG(ceb_test_wait(all_delivered, &all, 120000),
            "%zu of %zu accepted events never delivered", all.missing, l.nok);
  CHECK_INT(atomic_load(&l.bad_503), 0);
  slow_store_read(&pg, dir, aport);
  fprintf(stderr,
          "pg bridge: %d accepted, %d answered 503, %d other, %zu delivered\n",
          atomic_load(&l.accepted) + 1, atomic_load(&l.unavailable),
          atomic_load(&l.other), rx_count(r));

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 60000), 0);
  char *log = ceb_test_read_file(logp, NULL);
  CHECK(log != NULL);
  CHECK_MSG(log && strstr(log, pg.password) == NULL,
            "the password is in the bridge log");
  CHECK(log && strstr(log, "unreachable") != NULL);
  free(log);

  rx_stop(r);
  for (size_t i = 0; i < l.nok; i++)
    free(l.ok_ids[i]);
  free(l.ok_ids);
  ceb_test_pg_cleanup(&pg);
  free(dir);
  return ceb_test_done("integration_pg_bridge");
}
