/* bench_floor: ceb_floor_raw and ceb_floor_mhd, in every --sync mode, answer
 * POSTs with 202 and, once answered, their data file holds exactly the
 * answered bodies (then the pre-allocated zeros); four requests in flight at
 * once on four connections (one group) are all answered and all stored; a
 * request the tools do not take gets a 400; SIGTERM ends them with status 0.
 * Single test thread. */
#include "ceb_test.h"
#include "ceb_test_proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSEQ 3
#define NPAR 4
#define PAR_LEN 700
#define TOTAL_MAX (1 << 16)

/* Sends raw on fd and reads until the answer's body ends; the status. */
static int raw_status(int fd, const char *raw) {
  char buf[2048];
  size_t got = 0;
  if (raw && ceb_test_send_all(fd, raw, strlen(raw)) != 0) return -1;
  while (got < sizeof buf - 1) {
    ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
    if (r <= 0) break; /* the socket's read timeout bounds this */
    got += (size_t)r;
    buf[got] = '\0';
    if (strstr(buf, "\r\n\r\n") &&
        (strstr(buf, "}\n") || strstr(buf, "Content-Length: 0")))
      break;
  }
  buf[got] = '\0';
  int st = -1;
  return sscanf(buf, "HTTP/1.1 %d", &st) == 1 ? st : -1;
}

static void post_raw(char *out, size_t cap, const char *body) {
  snprintf(out, cap,
           "POST /events HTTP/1.1\r\nHost: x\r\n"
           "Content-Type: application/cloudevents+json\r\n"
           "Content-Length: %zu\r\n\r\n%s",
           strlen(body), body);
}

static void check_tool(const char *prog, const char *mode) {
  char *dir = ceb_test_tmpdir("floor");
  char bin[512], portf[512], data[512], logf[512], url[128];
  snprintf(bin, sizeof bin, "%s/%s", CEB_FLOOR_BIN_DIR, prog);
  snprintf(portf, sizeof portf, "%s/port", dir);
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(logf, sizeof logf, "%s/log", dir);
  char *argv[] = {bin,      "--sync", (char *)mode, "--port-file", portf,
                  "--file", data,     "--prealloc", "1",           NULL};
  ceb_proc p;
  CHECK(ceb_proc_start(&p, argv, logf) == 0);
  int port = ceb_test_wait_port_file(portf, 10000);
  CHECK_MSG(port > 0, "%s --sync %s did not start", prog, mode);
  if (port <= 0) {
    ceb_proc_stop(&p, SIGKILL, 5000);
    free(dir);
    return;
  }
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  static char want[TOTAL_MAX];
  size_t want_len = 0;
  /* sequential requests of different sizes (one takes several reads) */
  const char *hdrs[] = {"Content-Type: application/cloudevents+json",
                        "Expect:", NULL};
  for (int i = 0; i < NSEQ; i++) {
    char body[8192];
    size_t len = (size_t)(i == 1 ? 5000 : 40 + i);
    int n = snprintf(body, sizeof body, "{\"id\":\"%s-%s-%d\",\"pad\":\"", prog,
                     mode, i);
    memset(body + n, 'a' + i, len - (size_t)n - 2);
    memcpy(body + len - 2, "\"}", 2);
    body[len] = '\0';
    char *resp = NULL;
    int st = ceb_test_http("POST", url, hdrs, body, len, &resp);
    CHECK_MSG(st == 202, "%s %s: request %d answered %d", prog, mode, i, st);
    CHECK(resp && strstr(resp, "\"accepted\":1"));
    free(resp);
    memcpy(want + want_len, body, len);
    want_len += len;
  }
  /* four in flight at once: sent before any answer is read */
  int fds[NPAR];
  char bodies[NPAR][PAR_LEN + 1], req[PAR_LEN + 256];
  for (int i = 0; i < NPAR; i++) {
    fds[i] = ceb_test_tcp_connect(port, 10);
    CHECK(fds[i] >= 0);
    memset(bodies[i], 'A' + i, PAR_LEN);
    bodies[i][PAR_LEN] = '\0';
    post_raw(req, sizeof req, bodies[i]);
    CHECK(fds[i] >= 0 && ceb_test_send_all(fds[i], req, strlen(req)) == 0);
  }
  for (int i = 0; i < NPAR; i++) {
    CHECK_INT(raw_status(fds[i], NULL), 202);
    close(fds[i]);
  }
  /* the answered bodies are in the file: the sequential ones in order, the
   * parallel ones each once in some order, then only zeros */
  size_t flen = 0;
  char *got = ceb_test_read_file(data, &flen);
  CHECK_INT(flen, 1 << 20);
  if (got && flen >= want_len + NPAR * PAR_LEN) {
    CHECK(memcmp(got, want, want_len) == 0);
    int seen[NPAR] = {0};
    for (int i = 0; i < NPAR; i++) {
      const char *chunk = got + want_len + (size_t)i * PAR_LEN;
      int k = chunk[0] - 'A';
      CHECK_MSG(k >= 0 && k < NPAR && !seen[k] &&
                    memcmp(chunk, bodies[k], PAR_LEN) == 0,
                "%s %s: parallel body %d not as sent", prog, mode, i);
      if (k >= 0 && k < NPAR) seen[k] = 1;
    }
    size_t rest = want_len + NPAR * PAR_LEN, nz = 0;
    for (size_t i = rest; i < flen; i++)
      nz += got[i] != 0;
    CHECK_INT(nz, 0);
  }
  free(got);
  /* what the tools do not take */
  int fd = ceb_test_tcp_connect(port, 10);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK_INT(raw_status(fd, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
    close(fd);
  }
  CHECK_MSG(ceb_proc_stop(&p, SIGTERM, 10000) == 0, "%s %s: exit", prog, mode);
  free(dir); /* ceb_test_tmpdir's; the directory stays for a failure's read */
}

int main(void) {
  const char *raw_modes[] = {"none", "inline", "thread"};
  const char *mhd_modes[] = {"none", "resume", "thread"};
  for (int i = 0; i < 3; i++) {
    check_tool("ceb_floor_raw", raw_modes[i]);
    check_tool("ceb_floor_mhd", mhd_modes[i]);
  }
  return ceb_test_done("bench_floor");
}
