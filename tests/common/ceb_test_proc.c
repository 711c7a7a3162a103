#include "ceb_test_proc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ceb_test.h"

int ceb_proc_start(ceb_proc *p, char *const argv[], const char *log_path) {
  memset(p, 0, sizeof *p);
  snprintf(p->log_path, sizeof p->log_path, "%s", log_path);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    /* Children must not inherit the test's blocked signals. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  p->pid = pid;
  return 0;
}

int ceb_proc_alive(ceb_proc *p) {
  if (p->pid <= 0) return 0;
  int status;
  pid_t r = waitpid(p->pid, &status, WNOHANG);
  if (r == p->pid) {
    p->pid = -status - 1; /* remember it ended */
    return 0;
  }
  return r == 0;
}

int ceb_proc_stop(ceb_proc *p, int sig, int64_t timeout_ms) {
  if (p->pid < 0)
    return -p->pid - 1 >= 0 && WIFEXITED(-p->pid - 1) ? WEXITSTATUS(-p->pid - 1)
                                                      : 128;
  if (p->pid == 0) return -1;
  kill(p->pid, sig);
  int64_t end = ceb_test_now_ms() + timeout_ms;
  for (;;) {
    int status;
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    if (r == p->pid) {
      p->pid = 0;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (ceb_test_now_ms() >= end) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &status, 0);
      p->pid = 0;
      return -1;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

pid_t ceb_test_bridge_start(const char *confdir, const char *log_path) {
  char bin[1024];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  unlink(log_path);
  char *argv[] = {bin, "run", "-c", (char *)confdir, NULL};
  ceb_proc p;
  return ceb_proc_start(&p, argv, log_path) == 0 ? p.pid : -1;
}

int ceb_test_pid_stop(pid_t pid, int sig, int64_t timeout_ms) {
  if (pid <= 0) return -1;
  if (sig) kill(pid, sig);
  int64_t end = ceb_test_now_ms() + timeout_ms;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (ceb_test_now_ms() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int ceb_test_write_file(const char *dir, const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

typedef struct port_wait {
  const char *path;
  int port;
} port_wait;

static int port_ready(void *arg) {
  port_wait *w = arg;
  char *t = ceb_test_read_file(w->path, NULL);
  if (!t) return 0;
  w->port = atoi(t);
  free(t);
  return w->port > 0;
}

int ceb_test_wait_port_file(const char *path, int64_t timeout_ms) {
  port_wait w = {path, -1};
  return ceb_test_wait(port_ready, &w, timeout_ms) ? w.port : -1;
}

typedef struct membuf {
  char *p;
  size_t len;
} membuf;

static size_t on_data(char *ptr, size_t size, size_t n, void *arg) {
  membuf *b = arg;
  size_t add = size * n;
  char *np = realloc(b->p, b->len + add + 1);
  if (!np) return 0;
  memcpy(np + b->len, ptr, add);
  b->p = np;
  b->len += add;
  b->p[b->len] = '\0';
  return add;
}

int ceb_test_http(const char *method, const char *url,
                  const char *const *headers, const char *body, size_t body_len,
                  char **body_out) {
  CURL *c = curl_easy_init();
  if (!c) return -1;
  membuf b = {NULL, 0};
  struct curl_slist *hl = NULL;
  for (size_t i = 0; headers && headers[i]; i++)
    hl = curl_slist_append(hl, headers[i]);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
  }
  int status = -1;
  if (curl_easy_perform(c) == CURLE_OK) {
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    status = (int)code;
  }
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  if (body_out)
    *body_out = b.p ? b.p : strdup("");
  else
    free(b.p);
  return status;
}

int ceb_test_tcp_connect(int port, int timeout_s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct timeval tv = {timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int ceb_test_send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}
