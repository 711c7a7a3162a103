#include "ceb_test_pg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ceb_test.h"

#define PG_READY_MS 120000
#define PG_STOP_MS 60000

static int is_exec(const char *dir, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, X_OK) == 0;
}

static int has_server(const char *dir) {
  return dir && *dir && is_exec(dir, "initdb") && is_exec(dir, "postgres");
}

/* The newest /usr/lib/postgresql/<N>/bin with a server in it. */
static int find_debian_bindir(char *out, size_t n) {
  DIR *d = opendir("/usr/lib/postgresql");
  if (!d) return 0;
  int best = -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    int v = atoi(e->d_name);
    char p[512];
    snprintf(p, sizeof p, "/usr/lib/postgresql/%d/bin", v);
    if (v > best && has_server(p)) best = v;
  }
  closedir(d);
  if (best < 0) return 0;
  snprintf(out, n, "/usr/lib/postgresql/%d/bin", best);
  return 1;
}

static int find_pg_config_bindir(char *out, size_t n) {
  FILE *f = popen("pg_config --bindir 2>/dev/null", "r");
  if (!f) return 0;
  char line[512] = "";
  char *got = fgets(line, sizeof line, f);
  pclose(f);
  if (!got) return 0;
  line[strcspn(line, "\r\n")] = '\0';
  if (!has_server(line)) return 0;
  snprintf(out, n, "%s", line);
  return 1;
}

static int find_bindir(char *out, size_t n) {
  const char *env = getenv("CEB_TEST_PG_BINDIR");
  if (has_server(env)) {
    snprintf(out, n, "%s", env);
    return 1;
  }
  return find_debian_bindir(out, n) || find_pg_config_bindir(out, n);
}

void ceb_test_pg_require(void) {
  char b[512];
  if (find_bindir(b, sizeof b)) return;
  printf("skipped: no PostgreSQL server binaries (initdb, postgres) in "
         "$CEB_TEST_PG_BINDIR, /usr/lib/postgresql/*/bin or pg_config "
         "--bindir; apt-get install postgresql-15\n");
  fflush(stdout);
  exit(77);
}

static void log_tail(const ceb_test_pg *pg) {
  ceb_test_print_tail(pg->log, 2000);
}

/* Forks argv with output appended to pg->log, in its own process group
 * (so a kill -9 reaches every backend), as pg->uid when the test runs as
 * root, with SIGQUIT when the calling thread ends. */
static pid_t spawn(const ceb_test_pg *pg, char *const argv[]) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(pg->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (geteuid() == 0 && pg->uid != 0) {
    if (setgroups(0, NULL) != 0 || setgid(pg->gid) != 0 ||
        setuid(pg->uid) != 0) {
      fprintf(stderr, "ceb_test_pg: dropping to uid %d: %s\n", (int)pg->uid,
              strerror(errno));
      _exit(126);
    }
  }
  /* After the uid change, which clears it. */
  prctl(PR_SET_PDEATHSIG, SIGQUIT);
  setenv("LC_ALL", "C", 1);
  unsetenv("PGDATA");
  unsetenv("PGPORT");
  unsetenv("PGHOST");
  execv(argv[0], argv);
  fprintf(stderr, "ceb_test_pg: exec %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* Waits for pid with a deadline; its exit status, or -1 (then killed). */
static int wait_exit(pid_t pid, int64_t timeout_ms) {
  int64_t end = ceb_test_now_ms() + timeout_ms;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (ceb_test_now_ms() >= end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* Reads /proc/<pid>/stat: 1 with the process's state, parent and
 * process group, 0 when it is gone. */
static int proc_stat(const char *pid, char *state, int *ppid, int *pgrp) {
  char p[300], buf[512];
  snprintf(p, sizeof p, "/proc/%s/stat", pid);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* pid (comm) state ppid pgrp: comm may hold spaces, so from the last ')' */
  char *rp = strrchr(buf, ')');
  return rp && sscanf(rp + 1, " %c %d %d", state, ppid, pgrp) == 3;
}

static int live_state(char state) {
  return state != 'Z' && state != 'X';
}

/* 1 while a live (not zombie) process is in process group pgid. Orphaned
 * backends are reparented to PID 1, which may not reap them here, so
 * kill(-pgid, 0) would count zombies; /proc/<pid>/stat says the state. */
static int group_alive(pid_t pgid) {
  DIR *d = opendir("/proc");
  if (!d) return kill(-pgid, 0) == 0;
  int alive = 0;
  struct dirent *e;
  while (!alive && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char state;
    int ppid, pgrp;
    if (proc_stat(e->d_name, &state, &ppid, &pgrp) && pgrp == pgid &&
        live_state(state))
      alive = 1;
  }
  closedir(d);
  return alive;
}

static int group_gone(void *arg) {
  pid_t pgid = *(pid_t *)arg;
  /* Reap the orphaned backends handed to us as subreaper. */
  while (waitpid(-pgid, NULL, WNOHANG) > 0)
    ;
  return !group_alive(pgid);
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return -1;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

static void fill_conninfo(ceb_test_pg *pg) {
  snprintf(pg->conninfo, sizeof pg->conninfo,
           "host=127.0.0.1 port=%d dbname=ceb user=ceb password=%s "
           "connect_timeout=10",
           pg->port, pg->password);
  snprintf(pg->uri, sizeof pg->uri,
           "postgresql://ceb:%s@127.0.0.1:%d/ceb?connect_timeout=10",
           pg->password, pg->port);
}

typedef struct ready_wait {
  ceb_test_pg *pg;
  char conninfo[1024];
  int exited;
} ready_wait;

static int ready(void *arg) {
  ready_wait *w = arg;
  int status;
  if (waitpid(w->pg->pid, &status, WNOHANG) == w->pg->pid) {
    w->pg->pid = 0;
    w->exited = 1;
    return 1;
  }
  return PQping(w->conninfo) == PQPING_OK;
}

/* Starts the postmaster on pg->port and waits until it answers. */
static int server_up(ceb_test_pg *pg) {
  char port[16];
  snprintf(port, sizeof port, "%d", pg->port);
  char postgres[600];
  snprintf(postgres, sizeof postgres, "%s/postgres", pg->bindir);
  char *argv[] = {postgres,
                  "-D",
                  pg->data,
                  "-p",
                  port,
                  "-k",
                  pg->sock,
                  "-h",
                  "127.0.0.1",
                  "-c",
                  "fsync=on",
                  "-c",
                  "logging_collector=off",
                  "-c",
                  "log_min_messages=warning",
                  NULL};
  pg->pid = spawn(pg, argv);
  if (pg->pid < 0) {
    pg->pid = 0;
    fprintf(stderr, "ceb_test_pg: fork: %s\n", strerror(errno));
    return -1;
  }
  ready_wait w = {.pg = pg};
  /* The database "postgres" always exists; "ceb" may not yet. */
  snprintf(w.conninfo, sizeof w.conninfo,
           "host=127.0.0.1 port=%d dbname=postgres user=ceb password=%s "
           "connect_timeout=5",
           pg->port, pg->password);
  if (!ceb_test_wait(ready, &w, PG_READY_MS) || w.exited) {
    fprintf(stderr, "ceb_test_pg: the server on port %d %s\n", pg->port,
            w.exited ? "exited at start" : "was not ready within 120 s");
    if (!w.exited) ceb_test_pg_stop(pg, CEB_TEST_PG_IMMEDIATE);
    log_tail(pg);
    return -1;
  }
  return 0;
}

int ceb_test_pg_up(ceb_test_pg *pg) {
  if (pg->pid > 0) return 0;
  return server_up(pg);
}

static int run_initdb(ceb_test_pg *pg) {
  char pwfile[700];
  snprintf(pwfile, sizeof pwfile, "%s/pwfile", pg->dir);
  FILE *f = fopen(pwfile, "w");
  if (!f) return -1;
  fprintf(f, "%s\n", pg->password);
  fclose(f);
  /* The server user reads it; the test directory is removed afterwards. */
  chmod(pwfile, 0644);
  char initdb[600], pwarg[720], datarg[620];
  snprintf(initdb, sizeof initdb, "%s/initdb", pg->bindir);
  snprintf(pwarg, sizeof pwarg, "--pwfile=%s", pwfile);
  snprintf(datarg, sizeof datarg, "--pgdata=%s", pg->data);
  /* --no-sync: the server is a test's; the server itself runs fsync=on. */
  char *argv[] = {initdb,
                  datarg,
                  "--username=ceb",
                  pwarg,
                  "--auth-local=trust",
                  "--auth-host=scram-sha-256",
                  "--encoding=UTF8",
                  "--locale=C",
                  "--no-sync",
                  "--no-instructions",
                  NULL};
  pid_t pid = spawn(pg, argv);
  int rc = pid > 0 ? wait_exit(pid, PG_READY_MS) : -1;
  unlink(pwfile);
  if (rc != 0) {
    fprintf(stderr, "ceb_test_pg: initdb exited %d\n", rc);
    log_tail(pg);
    return -1;
  }
  return 0;
}

static int random_hex(char *out, size_t bytes) {
  unsigned char b[32];
  if (bytes > sizeof b) return -1;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(b, 1, bytes, f) != bytes) {
    if (f) fclose(f);
    return -1;
  }
  fclose(f);
  for (size_t i = 0; i < bytes; i++)
    sprintf(out + 2 * i, "%02x", b[i]);
  return 0;
}

static int make_owned_dir(const ceb_test_pg *pg, const char *path, int mode) {
  if (mkdir(path, (mode_t)mode) != 0) return -1;
  if (geteuid() == 0 && chown(path, pg->uid, pg->gid) != 0) return -1;
  return chmod(path, (mode_t)mode);
}

int ceb_test_pg_start(ceb_test_pg *pg, const char *tag) {
  memset(pg, 0, sizeof *pg);
  if (!find_bindir(pg->bindir, sizeof pg->bindir)) {
    fprintf(stderr, "ceb_test_pg: no PostgreSQL server binaries\n");
    return -1;
  }
  pg->uid = geteuid();
  pg->gid = getegid();
  if (pg->uid == 0) {
    struct passwd *pw = getpwnam("nobody");
    if (!pw) {
      fprintf(stderr, "ceb_test_pg: running as root and no user 'nobody' to "
                      "run PostgreSQL as\n");
      return -1;
    }
    pg->uid = pw->pw_uid;
    pg->gid = pw->pw_gid;
  }
  /* Backends orphaned by a kill -9 come to this process to be reaped
   * (group_gone) instead of staying zombies under a PID 1 that may not
   * reap them. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  char *dir = ceb_test_tmpdir(tag);
  if (!dir) return -1;
  snprintf(pg->dir, sizeof pg->dir, "%s", dir);
  free(dir);
  /* The server user must reach data/ and sock/ inside the test's 0700 dir. */
  chmod(pg->dir, 0711);
  snprintf(pg->data, sizeof pg->data, "%s/data", pg->dir);
  snprintf(pg->sock, sizeof pg->sock, "%s/sock", pg->dir);
  snprintf(pg->log, sizeof pg->log, "%s/postgres.log", pg->dir);
  if (make_owned_dir(pg, pg->data, 0700) != 0 ||
      make_owned_dir(pg, pg->sock, 0755) != 0 ||
      random_hex(pg->password, 16) != 0) {
    fprintf(stderr, "ceb_test_pg: preparing %s: %s\n", pg->dir,
            strerror(errno));
    return -1;
  }
  if (run_initdb(pg) != 0) return -1;
  /* An ephemeral port may be taken between the probe and the server's
   * bind (several tests start servers at once): a few fresh ports. */
  int rc = -1;
  for (int attempt = 0; attempt < 5 && rc != 0; attempt++) {
    pg->port = free_port();
    if (pg->port <= 0) break;
    fill_conninfo(pg);
    rc = server_up(pg);
  }
  if (rc != 0) return -1;
  return ceb_test_pg_createdb(pg, "ceb", NULL, 0);
}

int ceb_test_pg_createdb(ceb_test_pg *pg, const char *name, char *out,
                         size_t out_len) {
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return -1;
  char ci[1024];
  snprintf(ci, sizeof ci,
           "host=127.0.0.1 port=%d dbname=postgres user=ceb password=%s",
           pg->port, pg->password);
  PGconn *c = PQconnectdb(ci);
  int rc = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    char sql[256];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s OWNER ceb", name);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_COMMAND_OK)
      rc = 0;
    else
      fprintf(stderr, "ceb_test_pg: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
  } else {
    fprintf(stderr, "ceb_test_pg: connect: %s", PQerrorMessage(c));
  }
  PQfinish(c);
  if (rc == 0 && out)
    snprintf(out, out_len,
             "host=127.0.0.1 port=%d dbname=%s user=ceb password=%s "
             "connect_timeout=10",
             pg->port, name, pg->password);
  return rc;
}

int ceb_test_pg_stop(ceb_test_pg *pg, ceb_test_pg_mode mode) {
  if (pg->pid <= 0) return 0;
  int sig = mode == CEB_TEST_PG_SMART  ? SIGTERM
            : mode == CEB_TEST_PG_FAST ? SIGINT
                                       : SIGQUIT;
  pid_t pgid = pg->pid;
  kill(pg->pid, sig);
  int rc = wait_exit(pg->pid, PG_STOP_MS);
  pg->pid = 0;
  if (rc < 0) {
    kill(-pgid, SIGKILL);
    ceb_test_wait(group_gone, &pgid, PG_STOP_MS);
    fprintf(stderr, "ceb_test_pg: the server did not stop within 60 s\n");
    return -1;
  }
  /* The postmaster waits for its children; a backend left over would
   * keep the shared memory and stop the next start. */
  return ceb_test_wait(group_gone, &pgid, PG_STOP_MS) ? 0 : -1;
}

/* The live (not zombie) children of ppid, up to max, into out. */
static size_t children_of(pid_t ppid, pid_t *out, size_t max) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  size_t n = 0;
  struct dirent *e;
  while (n < max && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char state;
    int pp, pgrp;
    if (proc_stat(e->d_name, &state, &pp, &pgrp) && pp == ppid &&
        live_state(state))
      out[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  return n;
}

typedef struct pid_set {
  pid_t pgid; /* the postmaster's group */
  pid_t *pids;
  size_t n;
} pid_set;

/* 1 once the group and every pid of the set are gone (zombies reaped: we
 * are their subreaper once their parent died). */
static int set_gone(void *arg) {
  pid_set *s = arg;
  if (!group_gone(&s->pgid)) return 0;
  for (size_t i = 0; i < s->n; i++) {
    while (waitpid(s->pids[i], NULL, WNOHANG) > 0)
      ;
    char pid[24], state;
    int ppid, pgrp;
    snprintf(pid, sizeof pid, "%d", (int)s->pids[i]);
    if (proc_stat(pid, &state, &ppid, &pgrp) && live_state(state)) return 0;
  }
  return 1;
}

int ceb_test_pg_kill9(ceb_test_pg *pg) {
  if (pg->pid <= 0) return 0;
  pid_t pgid = pg->pid;
  /* PostgreSQL's children lead process groups of their own (setsid in
   * InitPostmasterChild): a kill of the postmaster's group reaches the
   * postmaster alone, and its backends exit by themselves once they see
   * it gone, after this returned, still holding the shared memory the
   * next start refuses ("pre-existing shared memory block is still in
   * use"). So the postmaster is stopped (it forks no more), its children
   * are listed, and all of them are killed at once, as a crash would. */
  kill(pgid, SIGSTOP);
  pid_t kids[512];
  pid_set set = {.pgid = pgid, .pids = kids};
  set.n = children_of(pgid, kids, sizeof kids / sizeof kids[0]);
  kill(-pgid, SIGKILL);
  for (size_t i = 0; i < set.n; i++)
    kill(kids[i], SIGKILL);
  wait_exit(pg->pid, PG_STOP_MS);
  pg->pid = 0;
  return ceb_test_wait(set_gone, &set, PG_STOP_MS) ? 0 : -1;
}

int ceb_test_pg_restart(ceb_test_pg *pg) {
  if (ceb_test_pg_stop(pg, CEB_TEST_PG_FAST) != 0) return -1;
  return server_up(pg);
}

PGconn *ceb_test_pg_connect(const ceb_test_pg *pg) {
  PGconn *c = PQconnectdb(pg->conninfo);
  if (PQstatus(c) != CONNECTION_OK) {
    fprintf(stderr, "ceb_test_pg: connect: %s", PQerrorMessage(c));
    PQfinish(c);
    return NULL;
  }
  return c;
}

int64_t ceb_test_pg_int(PGconn *c, const char *sql) {
  if (!c) return INT64_MIN;
  PGresult *r = PQexec(c, sql);
  int64_t v = INT64_MIN;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 &&
      !PQgetisnull(r, 0, 0))
    v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
  else
    fprintf(stderr, "ceb_test_pg: %s: %s", sql, PQerrorMessage(c));
  PQclear(r);
  return v;
}

void ceb_test_pg_cleanup(ceb_test_pg *pg) {
  if (ceb_test_pg_stop(pg, CEB_TEST_PG_FAST) != 0) ceb_test_pg_kill9(pg);
}
