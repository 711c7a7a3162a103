/* A private PostgreSQL server for one test: initdb into a temporary
 * directory, a postmaster on 127.0.0.1 on an ephemeral port (its Unix
 * socket inside that directory, fsync=on), a database "ceb" owned by the
 * superuser "ceb" with a random password (scram-sha-256 over TCP), and the
 * ways a test shakes it: stop (smart, fast, immediate), kill -9 of the
 * whole server, start again on the same data and port.
 *
 * Run as root (CI), the server runs as the unprivileged user "nobody"
 * (initdb and postgres refuse root): the temporary directory is made
 * traversable and the data directory belongs to that user.
 *
 * Threading: one test thread drives a ceb_test_pg; call it from the
 * thread that lives as long as the server (the main thread): the postmaster
 * gets SIGQUIT (immediate shutdown) when that thread ends, so a crashed test
 * leaves no server behind. Ownership: the struct is the caller's; the
 * temporary directory is removed by ceb_test_done like any ceb_test_tmpdir. */
#ifndef CEB_TEST_PG_H
#define CEB_TEST_PG_H

#include <libpq-fe.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum ceb_test_pg_mode {
  CEB_TEST_PG_SMART,    /* SIGTERM: waits for the clients to leave */
  CEB_TEST_PG_FAST,     /* SIGINT: ends the sessions, clean checkpoint */
  CEB_TEST_PG_IMMEDIATE /* SIGQUIT: no checkpoint, crash recovery at start */
} ceb_test_pg_mode;

typedef struct ceb_test_pg {
  char bindir[512]; /* where initdb and postgres are */
  char dir[512];    /* the temporary directory */
  char data[600];   /* dir/data: PGDATA */
  char sock[600];   /* dir/sock: the Unix socket directory */
  char log[600];    /* dir/postgres.log: the server's output (appended) */
  int port;         /* 127.0.0.1 TCP port, the same across restarts */
  pid_t pid;        /* the postmaster while it runs, else 0 */
  uid_t uid;        /* who runs the server */
  gid_t gid;
  char password[40];   /* the superuser's, hex */
  char conninfo[1024]; /* keyword/value conninfo of the database "ceb" */
  char uri[1024];      /* the same as a postgresql:// URI (bridge config) */
} ceb_test_pg;

/* Exits the test with 77 (ctest SKIP_RETURN_CODE) and one line naming
 * what was looked for when no PostgreSQL server binaries exist at all
 * (CEB_TEST_PG_BINDIR, then /usr/lib/postgresql/<newest>/bin, then
 * `pg_config --bindir`). Returns when initdb and postgres were found. */
void ceb_test_pg_require(void);

/* initdb into a fresh ceb_test_tmpdir(tag), start the server, wait until it
 * accepts connections (deadline: 120 s, the machine may be loaded), create
 * the database "ceb". 0 on success; -1 with the reason (and the server
 * log's tail) on stderr. */
int ceb_test_pg_start(ceb_test_pg *pg, const char *tag);

/* Starts the server again on the existing data directory and port (after
 * a stop or a kill) and waits until it accepts connections (crash
 * recovery included). 0 on success, -1 with the reason on stderr. */
int ceb_test_pg_up(ceb_test_pg *pg);

/* Stops the server the given way and waits (up to 60 s) until the
 * postmaster and every backend are gone. 0 on success (also when it was not
 * running); -1 on timeout, after which the server was killed with SIGKILL. */
int ceb_test_pg_stop(ceb_test_pg *pg, ceb_test_pg_mode mode);

/* kill -9 of the postmaster and every backend at once (a machine crash as
 * the server sees it), then waits until they are gone. 0 on success. */
int ceb_test_pg_kill9(ceb_test_pg *pg);

/* A fast stop and ceb_test_pg_up. 0 on success. */
int ceb_test_pg_restart(ceb_test_pg *pg);

/* Creates another database (name: [a-z0-9_]) owned by "ceb" and writes its
 * keyword/value conninfo into out. 0 on success. */
int ceb_test_pg_createdb(ceb_test_pg *pg, const char *name, char *out,
                         size_t out_len);

/* A new connection to the database "ceb" (the caller PQfinish-es it), or
 * NULL with the reason on stderr. */
PGconn *ceb_test_pg_connect(const ceb_test_pg *pg);

/* Runs sql on c and returns the first column of the first row as an
 * integer; INT64_MIN with the error on stderr when the statement failed or
 * returned no row or NULL. */
int64_t ceb_test_pg_int(PGconn *c, const char *sql);

/* Stops the server (fast, immediate past the deadline). The directory
 * stays until ceb_test_done removes it (kept when the test failed). */
void ceb_test_pg_cleanup(ceb_test_pg *pg);

#endif
