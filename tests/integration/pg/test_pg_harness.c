/* The test PostgreSQL harness (tests/common/ceb_test_pg.h) does what the
 * store tests rely on: a server that accepts the conninfo and the URI it
 * hands out (and refuses a wrong password), runs as a non-root user, keeps
 * a committed row across a fast restart, a kill -9 of every process and an
 * immediate stop, answers nothing while stopped, and creates databases. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_pg.h"

static int64_t count_rows(const ceb_test_pg *pg) {
  PGconn *c = ceb_test_pg_connect(pg);
  int64_t n = ceb_test_pg_int(c, "SELECT count(*) FROM t");
  PQfinish(c);
  return n;
}

/* The Uid: line of /proc/<pid>/status: the real uid the server runs as. */
static long proc_uid(pid_t pid) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
  char *t = ceb_test_read_file(p, NULL);
  if (!t) return -1;
  char *u = strstr(t, "\nUid:");
  long uid = u ? strtol(u + 5, NULL, 10) : -1;
  free(t);
  return uid;
}

static void test_connect(ceb_test_pg *pg) {
  PGconn *c = ceb_test_pg_connect(pg);
  CHECK(c != NULL);
  CHECK_INT(ceb_test_pg_int(c, "SELECT 1"), 1);
  /* fsync as the issue asks: a crash test proves nothing without it. */
  PGresult *r = PQexec(c, "SHOW fsync");
  CHECK_STR(PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "",
            "on");
  PQclear(r);
  r = PQexec(c, "CREATE TABLE t (v int); INSERT INTO t VALUES (1), (2)");
  CHECK_INT(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  PQfinish(c);

  PGconn *u = PQconnectdb(pg->uri);
  CHECK_MSG(PQstatus(u) == CONNECTION_OK, "uri: %s", PQerrorMessage(u));
  PQfinish(u);

  char bad[1100];
  snprintf(bad, sizeof bad, "%s password=wrong", pg->conninfo);
  PGconn *b = PQconnectdb(bad);
  CHECK(PQstatus(b) != CONNECTION_OK);
  CHECK(strstr(PQerrorMessage(b), "password authentication failed") != NULL);
  PQfinish(b);

  CHECK(pg->uid != 0);
  CHECK_INT(proc_uid(pg->pid), pg->uid);
}

static void test_restarts(ceb_test_pg *pg) {
  int port = pg->port;
  CHECK_INT(ceb_test_pg_restart(pg), 0);
  CHECK_INT(pg->port, port);
  CHECK_INT(count_rows(pg), 2);

  /* Open a session, so a backend is killed too, then kill everything. */
  PGconn *held = ceb_test_pg_connect(pg);
  CHECK(held != NULL);
  PGresult *r = PQexec(held, "INSERT INTO t VALUES (3)");
  CHECK_INT(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  CHECK_INT(ceb_test_pg_kill9(pg), 0);
  CHECK_INT(pg->pid, 0);
  CHECK_INT(PQping(pg->conninfo), PQPING_NO_RESPONSE);
  CHECK_INT(ceb_test_pg_int(held, "SELECT 1"), INT64_MIN);
  PQfinish(held);
  CHECK_INT(ceb_test_pg_up(pg), 0);
  CHECK_INT(count_rows(pg), 3); /* committed before the kill: recovered */

  CHECK_INT(ceb_test_pg_stop(pg, CEB_TEST_PG_IMMEDIATE), 0);
  CHECK_INT(PQping(pg->conninfo), PQPING_NO_RESPONSE);
  CHECK_INT(ceb_test_pg_up(pg), 0);
  CHECK_INT(count_rows(pg), 3);
}

static void test_createdb(ceb_test_pg *pg) {
  char ci[1024];
  CHECK_INT(ceb_test_pg_createdb(pg, "second_db", ci, sizeof ci), 0);
  PGconn *c = PQconnectdb(ci);
  CHECK_MSG(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
  CHECK_INT(ceb_test_pg_int(c, "SELECT count(*) FROM pg_tables WHERE "
                               "tablename = 't'"),
            0);
  PQfinish(c);
  CHECK(ceb_test_pg_createdb(pg, "bad;name", ci, sizeof ci) != 0);
}

int main(void) {
  ceb_test_pg_require();
  ceb_test_pg pg;
  int started = ceb_test_pg_start(&pg, "pg-harness") == 0;
  CHECK(started);
  if (started) {
    test_connect(&pg);
    test_restarts(&pg);
    test_createdb(&pg);
    CHECK_INT(ceb_test_pg_stop(&pg, CEB_TEST_PG_FAST), 0);
    CHECK_INT(PQping(pg.conninfo), PQPING_NO_RESPONSE);
  }
  ceb_test_pg_cleanup(&pg);
  return ceb_test_done("integration_pg_harness");
}
