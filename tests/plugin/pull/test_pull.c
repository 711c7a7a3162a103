/* The pull plugin through its real ABI (dlopen) with the fake host: durable
 * append then ACK, fetch with cursor and max, long poll woken by a delivery,
 * commit, restart keeps uncommitted events (the queue is in the host's
 * store), an earlier version's queue file moved into the store, backpressure
 * when full, errors
 * as problem+json, and the auth rules. */
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"
#include "loader/ceb_loader.h"

typedef struct inst {
  ceb_fake_host *fake;
  ceb_config *cfg;
  void *state;
  int port;
  char url[256];
} inst;

static const ceb_plugin *g_desc;
static char *g_tmp;

static ceb_config *make_cfg(const char *const *kv) {
  ceb_config *cfg = cebi_config_new("outbox");
  for (size_t i = 0; kv[i]; i += 2)
    cebi_config_put(cfg, kv[i], kv[i + 1], "test.conf", (int)i + 1);
  cebi_config_set_spec(cfg, g_desc->config_sink, ceb_spec_sink_common);
  return cfg;
}

static int inst_open(inst *in, const char *data_dir, const char *const *kv) {
  memset(in, 0, sizeof *in);
  in->fake = ceb_fake_host_new("outbox", CEB_ROLE_SINK);
  /* the queue lives in the host's store; a restart reopens it */
  char store[600];
  snprintf(store, sizeof store, "%s/store.db", data_dir);
  CHECK_INT(ceb_fake_host_queue(in->fake, store), CEB_OK);
  in->cfg = make_cfg(kv);
  ceb_instance_info info = {sizeof info, "outbox", CEB_ROLE_SINK, data_dir};
  int st = g_desc->init(&in->fake->host, &in->fake->inst, &info, in->cfg,
                        &in->state);
  if (st != CEB_OK) {
    CHECK(in->state == NULL); /* a failed init leaves nothing to destroy */
    in->state = NULL;
    return st;
  }
  char pf[512];
  snprintf(pf, sizeof pf, "%s/port", g_tmp);
  remove(pf);
  st = g_desc->start(in->state);
  if (st != CEB_OK)
    return st;
  in->port = ceb_test_wait_port_file(pf, 5000);
  snprintf(in->url, sizeof in->url, "http://127.0.0.1:%d/v1/pull/outbox",
           in->port);
  return in->port > 0 ? CEB_OK : CEB_EIO;
}

static void inst_close(inst *in) {
  if (in->state) {
    g_desc->drain(in->state, 0);
    g_desc->destroy(in->state);
  }
  cebi_config_free(in->cfg);
  ceb_fake_host_free(in->fake);
}

static ceb_event *make_event(const char *id) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:test");
  ceb_event_set(ev, "type", "nl.edu.test.created");
  ceb_event_set_data(ev, "{\"n\":1}", 7, CEB_DATA_JSON);
  return ev;
}

/* Delivers id and waits for its settle; returns the outcome. */
static int deliver(inst *in, const char *id, const char *idem) {
  ceb_event *ev = make_event(id);
  ceb_delivery *d = ceb_fake_delivery_new(in->fake, ev, "r", NULL, 1);
  if (idem) {
    free((char *)d->idempotency_key);
    d->idempotency_key = strdup(idem);
  }
  size_t before = ceb_fake_settle_count(in->fake);
  int st = g_desc->deliver(in->state, d);
  CHECK_INT(st, CEB_OK);
  CHECK(ceb_fake_wait_settles(in->fake, before + 1, 5000));
  ceb_fake_settle s;
  int outcome = -1;
  if (ceb_fake_settle_get(in->fake, before, &s))
    outcome = s.info.outcome;
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  return outcome;
}

static json_t *get_json(const char *url, int *status) {
  char *body = NULL;
  *status = ceb_test_http("GET", url, NULL, NULL, 0, &body);
  json_t *j = body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  return j;
}

static const char *ev_id(json_t *events, size_t i) {
  return json_string_value(json_object_get(json_array_get(events, i), "id"));
}

typedef struct poll_arg {
  char url[300];
  json_t *result;
  int status;
} poll_arg;

static void *long_poll(void *arg) {
  poll_arg *p = arg;
  p->result = get_json(p->url, &p->status);
  return NULL;
}

int main(void) {
  g_tmp = ceb_test_tmpdir("pull");
  ceb_loaded_plugin *lp;
  char err[512];
  CHECK_INT(ceb_loaded_open(CEB_PLUGIN_DIR "/pull.so", "pull", &lp, err,
                            sizeof err),
            CEB_OK);
  if (!lp) {
    fprintf(stderr, "%s\n", err);
    return ceb_test_done("plugin_pull");
  }
  g_desc = lp->desc;
  char pf[512], data[512];
  snprintf(pf, sizeof pf, "%s/port", g_tmp);
  snprintf(data, sizeof data, "%s/data", g_tmp);
  CHECK_INT(mkdir(data, 0700), 0);
  const char *kv[] = {"listen", "127.0.0.1:0", "auth", "none", "port_file",
                      pf, "max_batch", "2", NULL};
  inst in;
  CHECK_INT(inst_open(&in, data, kv), CEB_OK);

  CHECK_INT(deliver(&in, "e1", NULL), CEB_ACK);
  CHECK_INT(deliver(&in, "e2", NULL), CEB_ACK);
  CHECK_INT(deliver(&in, "e3", "same-key"), CEB_ACK);
  /* A retried delivery (same idempotency key) is not queued twice. */
  CHECK_INT(deliver(&in, "e3", "same-key"), CEB_ACK);

  int status;
  json_t *j = get_json(in.url, &status);
  CHECK_INT(status, 200);
  json_t *evs = json_object_get(j, "events");
  CHECK_INT(json_array_size(evs), 2); /* max_batch */
  CHECK_STR(ev_id(evs, 0), "e1");
  CHECK_STR(ev_id(evs, 1), "e2");
  CHECK_STR(json_string_value(json_object_get(j, "cursor")), "2");
  json_decref(j);

  char url[400];
  snprintf(url, sizeof url, "%s?cursor=2&max=2", in.url);
  j = get_json(url, &status);
  evs = json_object_get(j, "events");
  CHECK_INT(json_array_size(evs), 1);
  CHECK_STR(ev_id(evs, 0), "e3");
  CHECK_STR(json_string_value(json_object_get(j, "cursor")), "3");
  json_decref(j);

  /* Long poll past the end returns when the next event is durable. */
  poll_arg pa = {.status = 0};
  snprintf(pa.url, sizeof pa.url, "%s?cursor=3&wait=20s", in.url);
  pthread_t th;
  pthread_create(&th, NULL, long_poll, &pa);
  CHECK_INT(deliver(&in, "e4", NULL), CEB_ACK);
  pthread_join(th, NULL);
  CHECK_INT(pa.status, 200);
  CHECK_INT(json_array_size(json_object_get(pa.result, "events")), 1);
  CHECK_STR(ev_id(json_object_get(pa.result, "events"), 0), "e4");
  json_decref(pa.result);

  /* Commit up to 2: a fetch without cursor starts after it. */
  char *body = NULL;
  snprintf(url, sizeof url, "%s/commit?cursor=2", in.url);
  CHECK_INT(ceb_test_http("POST", url, NULL, "", 0, &body), 200);
  CHECK(body && strstr(body, "\"committed\":\"2\""));
  free(body);
  j = get_json(in.url, &status);
  CHECK_STR(ev_id(json_object_get(j, "events"), 0), "e3");
  json_decref(j);

  /* Errors are problem+json with the right status. */
  snprintf(url, sizeof url, "%s/commit?cursor=99", in.url);
  CHECK_INT(ceb_test_http("POST", url, NULL, "", 0, &body), 422);
  CHECK(body && strstr(body, "cursor_beyond_end"));
  free(body);
  snprintf(url, sizeof url, "%s/commit", in.url);
  CHECK_INT(ceb_test_http("POST", url, NULL, "", 0, NULL), 400);
  snprintf(url, sizeof url, "%s?max=0", in.url);
  CHECK_INT(ceb_test_http("GET", url, NULL, NULL, 0, NULL), 400);
  snprintf(url, sizeof url, "%s?wait=10m", in.url);
  CHECK_INT(ceb_test_http("GET", url, NULL, NULL, 0, NULL), 400);
  CHECK_INT(ceb_test_http("POST", in.url, NULL, "", 0, NULL), 405);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/pull/other", in.port);
  CHECK_INT(ceb_test_http("GET", url, NULL, NULL, 0, NULL), 404);

  /* A restart keeps what was not committed, and the committed cursor. */
  inst_close(&in);
  CHECK_INT(inst_open(&in, data, kv), CEB_OK);
  j = get_json(in.url, &status);
  evs = json_object_get(j, "events");
  CHECK_INT(json_array_size(evs), 2);
  CHECK_STR(ev_id(evs, 0), "e3");
  CHECK_STR(ev_id(evs, 1), "e4");
  json_decref(j);
  inst_close(&in);

  /* Full queue: the delivery is settled RETRY (backpressure), not lost. */
  char data2[512];
  snprintf(data2, sizeof data2, "%s/data2", g_tmp);
  CHECK_INT(mkdir(data2, 0700), 0);
  const char *kv_small[] = {"listen", "127.0.0.1:0", "auth", "none",
                            "port_file", pf, "queue.max", "1", NULL};
  CHECK_INT(inst_open(&in, data2, kv_small), CEB_OK);
  CHECK_INT(deliver(&in, "f1", NULL), CEB_ACK);
  CHECK_INT(deliver(&in, "f2", NULL), CEB_RETRY);
  inst_close(&in);

  /* Upgrade: the queue file an earlier version kept in the data directory
   * moves into the store at init: what was not committed is fetched (in
   * order, numbered anew), the file is renamed so it is not read again,
   * and a restart does not move it twice. */
  char data3[512], old[600], moved[640];
  snprintf(data3, sizeof data3, "%s/data3", g_tmp);
  CHECK_INT(mkdir(data3, 0700), 0);
  snprintf(old, sizeof old, "%s/queue.db", data3);
  snprintf(moved, sizeof moved, "%s.imported", old);
  sqlite3 *db = NULL;
  CHECK_INT(sqlite3_open(old, &db), SQLITE_OK);
  CHECK_INT(
      sqlite3_exec(db,
                   "PRAGMA journal_mode=WAL;"
                   "CREATE TABLE events(seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                   "idem TEXT UNIQUE, event TEXT NOT NULL, enqueued_at INTEGER "
                   "NOT NULL);"
                   "CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
                   "INSERT INTO events(idem, event, enqueued_at) VALUES"
                   " ('k1', '{\"id\":\"old1\"}', 1),"
                   " ('k2', '{\"id\":\"old2\"}', 1),"
                   " ('k3', '{\"id\":\"old3\"}', 1);"
                   "DELETE FROM events WHERE seq <= 1;"
                   "INSERT INTO meta VALUES ('committed', 1);",
                   NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  CHECK_INT(inst_open(&in, data3, kv), CEB_OK);
  struct stat sb;
  CHECK(stat(old, &sb) != 0 && stat(moved, &sb) == 0);
  j = get_json(in.url, &status);
  evs = json_object_get(j, "events");
  CHECK_INT(json_array_size(evs), 2);
  CHECK_STR(ev_id(evs, 0), "old2");
  CHECK_STR(ev_id(evs, 1), "old3");
  CHECK_STR(json_string_value(json_object_get(j, "cursor")), "2");
  json_decref(j);
  CHECK_INT(deliver(&in, "new1", NULL), CEB_ACK);
  inst_close(&in);
  CHECK_INT(inst_open(&in, data3, kv), CEB_OK);
  snprintf(url, sizeof url, "%s?cursor=2", in.url);
  j = get_json(url, &status);
  evs = json_object_get(j, "events");
  CHECK_INT(json_array_size(evs), 1);
  CHECK_STR(ev_id(evs, 0), "new1");
  json_decref(j);
  inst_close(&in);

  /* A host without queue services (an ABI 1.1 table: it ends before
   * queue_append, whatever lies behind it) is refused at init. */
  {
    inst old11;
    memset(&old11, 0, sizeof old11);
    old11.fake = ceb_fake_host_new("outbox", CEB_ROLE_SINK);
    char st11[600];
    snprintf(st11, sizeof st11, "%s/store.db", data3);
    CHECK_INT(ceb_fake_host_queue(old11.fake, st11), CEB_OK);
    CHECK(CEB_HOST_HAS(&old11.fake->host, queue_append));
    old11.fake->host.struct_size = (uint32_t)offsetof(ceb_host, submit_mapped);
    CHECK(!CEB_HOST_HAS(&old11.fake->host, queue_append));
    old11.cfg = make_cfg(kv);
    ceb_instance_info info = {sizeof info, "outbox", CEB_ROLE_SINK, data3};
    CHECK_INT(g_desc->init(&old11.fake->host, &old11.fake->inst, &info,
                           old11.cfg, &old11.state),
              CEB_EUNSUPPORTED);
    CHECK(old11.state == NULL);
    inst_close(&old11);
  }

  /* auth = none off loopback is refused at init. */
  const char *kv_open[] = {"listen", "0.0.0.0:0", "auth", "none", NULL};
  inst bad;
  CHECK_INT(inst_open(&bad, data2, kv_open), CEB_ECONFIG);
  inst_close(&bad);

  /* oauth2: no or a malformed bearer token is 401. */
  char jwks[512];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", g_tmp);
  FILE *f = fopen(jwks, "w");
  fputs("{\"keys\":[]}", f);
  fclose(f);
  const char *kv_auth[] = {"listen", "127.0.0.1:0", "auth", "oauth2",
                           "oauth2.jwks_file", jwks, "port_file", pf, NULL};
  CHECK_INT(inst_open(&in, data2, kv_auth), CEB_OK);
  CHECK_INT(ceb_test_http("GET", in.url, NULL, NULL, 0, NULL), 401);
  const char *hdr[] = {"Authorization: Bearer not.a.token", NULL};
  CHECK_INT(ceb_test_http("GET", in.url, hdr, NULL, 0, NULL), 401);
  inst_close(&in);

  ceb_loaded_free(lp);
  ceb_test_rmtree(g_tmp);
  free(g_tmp);
  return ceb_test_done("plugin_pull");
}
