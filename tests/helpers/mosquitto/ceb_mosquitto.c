#include "ceb_mosquitto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
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

#define MOSQUITTO_BIN "/usr/sbin/mosquitto"
#define MOSQUITTO_PASSWD_BIN "/usr/bin/mosquitto_passwd"

extern char **environ;

/* A port the kernel considered free a moment ago. The broker may still lose
 * the race for it; the caller retries. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static int port_open(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

static int run_wait(char *const argv[]) {
  pid_t pid;
  if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
  int st;
  if (waitpid(pid, &st, 0) < 0) return -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int rc = fputs(text, f) < 0 ? -1 : 0;
  if (fclose(f) != 0) rc = -1;
  return rc;
}

static int write_config(ceb_mosq *m, const ceb_mosq_opts *o) {
  char path[512], buf[4096];
  int n = snprintf(buf, sizeof buf,
                   "listener %d 127.0.0.1\n"
                   "log_dest file %s/mosquitto.log\n"
                   "%s"
                   "max_queued_messages 100000\n",
                   m->port, m->dir,
                   o && o->quiet_log
                       ? "log_type error\nlog_type warning\nlog_type notice\n"
                       : "log_type all\n");
  if (getuid() == 0) /* mosquitto drops root to "mosquitto" otherwise */
    n += snprintf(buf + n, sizeof buf - (size_t)n, "user root\n");
  if (o && o->persistence)
    n += snprintf(buf + n, sizeof buf - (size_t)n,
                  "persistence true\npersistence_location %s/\n", m->dir);
  if (o && o->username) {
    n += snprintf(buf + n, sizeof buf - (size_t)n,
                  "allow_anonymous false\npassword_file %s/passwd\n", m->dir);
  } else {
    n += snprintf(buf + n, sizeof buf - (size_t)n, "allow_anonymous true\n");
  }
  if (o && o->acl)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "acl_file %s/acl\n", m->dir);
  if (o && o->extra)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\n", o->extra);
  if (n >= (int)sizeof buf) return -1;
  snprintf(path, sizeof path, "%s/mosquitto.conf", m->dir);
  return write_file(path, buf);
}

static int write_aux(ceb_mosq *m, const ceb_mosq_opts *o) {
  char path[512];
  if (o && o->acl) {
    snprintf(path, sizeof path, "%s/acl", m->dir);
    if (write_file(path, o->acl) != 0) return -1;
    chmod(path, 0600);
  }
  if (o && o->username) {
    snprintf(path, sizeof path, "%s/passwd", m->dir);
    if (write_file(path, "") != 0) return -1;
    chmod(path, 0600);
    char *argv[] = {MOSQUITTO_PASSWD_BIN,
                    "-b",
                    path,
                    (char *)o->username,
                    (char *)(o->password ? o->password : ""),
                    NULL};
    if (run_wait(argv) != 0) {
      fprintf(stderr, "mosquitto helper: mosquitto_passwd failed\n");
      return -1;
    }
  }
  return 0;
}

/* Spawns the broker on m->port and waits up to 10 s for it to listen.
 * 1: listening; 0: it exited (port collision?); -1: error. */
static int spawn_and_wait(ceb_mosq *m) {
  char conf[512];
  snprintf(conf, sizeof conf, "%s/mosquitto.conf", m->dir);
  char *argv[] = {MOSQUITTO_BIN, "-c", conf, NULL};
  char out[512];
  snprintf(out, sizeof out, "%s/stderr.log", m->dir);
  /* Own output file: a broker outliving a crashed test must not hold the
   * test runner's pipes open. */
  pid_t parent = getpid();
  m->pid = fork();
  if (m->pid == 0) {
    /* Die with the test, even when it crashes or ctest kills it on a
     * timeout: an orphaned broker would keep its port and files. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    int in = open("/dev/null", O_RDONLY);
    int o = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in < 0 || o < 0) _exit(126);
    dup2(in, STDIN_FILENO);
    dup2(o, STDOUT_FILENO);
    dup2(o, STDERR_FILENO);
    execv(MOSQUITTO_BIN, argv);
    _exit(127);
  }
  if (m->pid < 0) {
    fprintf(stderr, "mosquitto helper: cannot fork: %s\n", strerror(errno));
    m->pid = 0;
    return -1;
  }
  int64_t deadline = ceb_test_now_ms() + 10000;
  while (ceb_test_now_ms() < deadline) {
    int st;
    if (waitpid(m->pid, &st, WNOHANG) == m->pid) {
      m->pid = 0;
      return 0;
    }
    if (port_open(m->port)) return 1;
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "mosquitto helper: broker did not listen within 10 s\n");
  kill(m->pid, SIGKILL);
  waitpid(m->pid, NULL, 0);
  m->pid = 0;
  return -1;
}

static void set_port(ceb_mosq *m, int port) {
  m->port = port;
  snprintf(m->url, sizeof m->url, "tcp://127.0.0.1:%d", port);
  snprintf(m->addr, sizeof m->addr, "127.0.0.1:%d", port);
}

ceb_mosq *ceb_mosq_start(const ceb_mosq_opts *opts) {
  ceb_mosq *m = calloc(1, sizeof *m);
  if (!m || !(m->dir = ceb_test_tmpdir("mosquitto")) ||
      write_aux(m, opts) != 0) {
    ceb_mosq_free(m);
    return NULL;
  }
  for (int attempt = 0; attempt < 8; attempt++) {
    int port = free_port();
    if (port <= 0) break;
    set_port(m, port);
    if (write_config(m, opts) != 0) break;
    int rc = spawn_and_wait(m);
    if (rc == 1) return m;
    if (rc < 0) break;
  }
  fprintf(stderr, "mosquitto helper: could not start a broker (log in %s)\n",
          m->dir);
  ceb_mosq_free(m);
  return NULL;
}

static int stop_with(ceb_mosq *m, int sig) {
  if (!m || !m->pid) return -1;
  kill(m->pid, sig);
  int st;
  pid_t r;
  while ((r = waitpid(m->pid, &st, 0)) < 0 && errno == EINTR)
    ;
  m->pid = 0;
  return r < 0 ? -1 : 0;
}

int ceb_mosq_stop(ceb_mosq *m) {
  return stop_with(m, SIGTERM);
}

int ceb_mosq_kill(ceb_mosq *m) {
  return stop_with(m, SIGKILL);
}

int ceb_mosq_restart(ceb_mosq *m) {
  if (!m || m->pid) return -1;
  /* Same port: clients reconnect to where the broker was. The port was
   * released a moment ago, so losing it is unlikely; retry briefly. */
  for (int attempt = 0; attempt < 20; attempt++) {
    int rc = spawn_and_wait(m);
    if (rc == 1) return 0;
    if (rc < 0) return -1;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static void remove_tree(const char *dir) {
  char *argv[] = {"/bin/rm", "-rf", (char *)dir, NULL};
  run_wait(argv);
}

void ceb_mosq_free(ceb_mosq *m) {
  if (!m) return;
  if (m->pid) ceb_mosq_stop(m);
  if (m->dir) {
    if (!getenv("CEB_KEEP_TMP")) remove_tree(m->dir);
    free(m->dir);
  }
  free(m);
}
