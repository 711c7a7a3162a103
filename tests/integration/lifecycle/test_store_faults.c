/* Store faults with the real binary (issue 16, D2):
 *  - garbage written into pages 2000-7600 of a store holding pending
 *    events (filled past 7600 pages first): `run` refuses to start and
 *    names the file and the damage, instead of starting and failing a
 *    claim a second while ingress answers 202;
 *  - the same store truncated to 0 bytes: `run` refuses (the marker
 *    <store>.id says a store existed) instead of starting empty;
 *  - a full disk (a small tmpfs: the test runs as root in CI; without
 *    mount rights that part is skipped with a line saying so): ingress
 *    answers 503 application/problem+json with Retry-After and /readyz 503
 *    while writes fail, both recover when space is freed; a restart on the
 *    full disk gives up the reserve beside the store, starts and answers
 *    503 until space is back; without a reserve it waits, admin API up and
 *    /readyz 503, and starts once space is back. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ceb/status.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "store/ceb_store.h"

static const char *k_conf_fmt =
    "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
    "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/aport\n"
    "log.format = text\n\n"
    "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nport_file = %s/port\n"
    "auth = none\n\n"
    "[sink out]\nplugin = pull\nlisten = 127.0.0.1:0\nport_file = %s/pport\n"
    "auth = none\n\n"
    "[route r]\nfrom = in\nto = out\n";

static char g_bin[600];

/* ---- filling the store past page 7600 with pending events ---- */

typedef struct fill_job {
  ceb_ingest_batch batch;
  ceb_ingest_event ev[8];
  ceb_ingest_route route;
  char id[8][32];
} fill_job;

static char *g_json;

static void fill(const char *path) {
  ceb_store_opts o = {.spec = path, .synchronous_full = 0, .group_max = 64};
  ceb_store *st = NULL;
  char err[512] = "";
  CHECK_MSG(ceb_store_open(&o, &st, err, sizeof err) == CEB_OK, "open: %s",
            err);
  size_t len = 32 * 1024;
  g_json = malloc(len + 64);
  /* 1200 events of 32 KiB: about 40 MB, past page 7600 (31 MB) */
  for (int b = 0; b < 150; b++) {
    fill_job j = {.route = {"r", NULL, 0}};
    for (int i = 0; i < 8; i++) {
      snprintf(j.id[i], sizeof j.id[i], "f-%d-%d", b, i);
      int n = snprintf(g_json, 64, "{\"id\":\"%s\",\"data\":\"", j.id[i]);
      memset(g_json + n, 'a' + (b + i) % 26, len - (size_t)n - 2);
      memcpy(g_json + len - 2, "\"}", 3);
      j.ev[i] = (ceb_ingest_event){.client = "",
                                   .source = "urn:s",
                                   .id = j.id[i],
                                   .type = "t",
                                   .json = g_json,
                                   .json_len = len,
                                   .routes = &j.route,
                                   .nroutes = 1};
    }
    j.batch = (ceb_ingest_batch){j.ev, 8, ceb_test_now_ms()};
    CHECK_INT(ceb_store_ingest_wait(st, &j.batch), CEB_OK);
  }
  free(g_json);
  ceb_store_close(st); /* checkpoints into the main file */
}

/* Random bytes over pages 2000..7600 (4 KiB pages, page 1 at offset 0). */
static void damage(const char *path) {
  struct stat sb;
  CHECK_INT(stat(path, &sb), 0);
  CHECK_MSG(sb.st_size >= 7600LL * 4096, "store only %lld bytes",
            (long long)sb.st_size);
  int fd = open(path, O_WRONLY);
  CHECK(fd >= 0);
  unsigned char buf[4096];
  unsigned seed = 16;
  for (long page = 2000; page <= 7600; page++) {
    for (size_t i = 0; i < sizeof buf; i++)
      buf[i] = (unsigned char)(rand_r(&seed) >> 7);
    CHECK_INT(pwrite(fd, buf, sizeof buf, (page - 1) * 4096), 4096);
  }
  CHECK_INT(fsync(fd), 0);
  close(fd);
}

static int copy_file(const char *from, const char *to) {
  size_t len = 0;
  char *data = ceb_test_read_file(from, &len);
  if (!data) return -1;
  FILE *f = fopen(to, "wb");
  int ok = f && fwrite(data, 1, len, f) == len;
  if (f) fclose(f);
  free(data);
  return ok ? 0 : -1;
}

typedef struct refuse_arg {
  ceb_proc *p;
  const char *portf;
} refuse_arg;

static int exited_or_serving(void *arg) {
  refuse_arg *a = arg;
  return !ceb_proc_alive(a->p) || access(a->portf, R_OK) == 0;
}

/* Starts `run`, expects it to exit 1 without serving; returns its log. */
static char *run_refused(const char *conf, const char *log, const char *portf) {
  char *argv[] = {g_bin, "run", "-c", (char *)conf, NULL};
  ceb_proc p;
  remove(portf);
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  refuse_arg a = {&p, portf};
  CHECK(ceb_test_wait(exited_or_serving, &a, 60000));
  CHECK_MSG(access(portf, R_OK) != 0,
            "run started serving on a store it must refuse");
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 1);
  return ceb_test_read_file(log, NULL);
}

static void corruption_cases(const char *dir) {
  char conf[600], text[4096], store[600], bak[600], log[600], marker[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(store, sizeof store, "%s/store.db", dir);
  snprintf(bak, sizeof bak, "%s/store.bak", dir);
  snprintf(marker, sizeof marker, "%s/store.db.id", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  CHECK_INT(mkdir(conf, 0700), 0);
  snprintf(text, sizeof text, k_conf_fmt, dir, CEB_PLUGIN_DIR, dir, dir, dir);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);

  fill(store);
  CHECK_MSG(access(marker, R_OK) == 0, "no marker %s beside a new store",
            marker);
  CHECK_INT(copy_file(store, bak), 0);

  /* garbage in pages 2000-7600 */
  damage(store);
  char portf[600];
  snprintf(portf, sizeof portf, "%s/port", dir);
  char *l = run_refused(conf, log, portf);
  CHECK_MSG(l && strstr(l, store) && strstr(l, "damaged"),
            "refusal does not name the file and the damage: %s", l ? l : "");
  free(l);

  /* truncated to 0 bytes */
  CHECK_INT(copy_file(bak, store), 0);
  CHECK_INT(truncate(store, 0), 0);
  l = run_refused(conf, log, portf);
  CHECK_MSG(l && strstr(l, store) && strstr(l, "empty") &&
                strstr(l, "store.db.id") && strstr(l, "backup"),
            "refusal does not name the file, the marker and what to do: %s",
            l ? l : "");
  free(l);
  /* and it did not become an empty store behind our back */
  struct stat sb;
  CHECK_INT(stat(store, &sb), 0);
  CHECK_INT(sb.st_size, 0);

  /* the intact copy starts (and so the checks pass on a sound store) */
  CHECK_INT(copy_file(bak, store), 0);
  char *argv[] = {g_bin, "run", "-c", conf, NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK_MSG(ceb_test_wait_port_file(portf, 60000) > 0, "restored store did "
                                                       "not start");
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
}

/* ---- full disk ---- */

typedef struct resp {
  char headers[2048];
  size_t hlen;
} resp;

static size_t on_header(char *b, size_t size, size_t n, void *arg) {
  resp *r = arg;
  size_t len = size * n;
  if (r->hlen + len < sizeof r->headers) {
    memcpy(r->headers + r->hlen, b, len);
    r->hlen += len;
    r->headers[r->hlen] = '\0';
  }
  return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *arg) {
  (void)b;
  (void)arg;
  return size * n;
}

static int post(int port, const char *id, resp *r) {
  char url[128], body[600];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:nld:oin:"
           "00000001234567890000:systeem:t\",\"type\":\"nl.edu.t.created\","
           "\"time\":\"2026-01-01T00:00:00Z\",\"data\":\"%0400d\"}",
           id, 0);
  CURL *c = curl_easy_init();
  struct curl_slist *h =
      curl_slist_append(NULL, "Content-Type: application/cloudevents+json");
  memset(r, 0, sizeof *r);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  long status = -1;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return (int)status;
}

typedef struct ready_arg {
  int port;
  int want;
} ready_arg;

static int readyz_is(void *arg) {
  ready_arg *a = arg;
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", a->port);
  return ceb_test_http("GET", url, NULL, NULL, 0, NULL) == a->want;
}

/* Fills the file system holding dir until a write fails. */
static void fill_disk(const char *dir) {
  char path[700];
  snprintf(path, sizeof path, "%s/fill", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  static char buf[65536];
  size_t total = 0;
  for (;;) { /* bounded by the tmpfs size */
    ssize_t n = write(fd, buf, sizeof buf);
    if (n <= 0) break;
    total += (size_t)n;
  }
  /* the last pages a short write could still take */
  while (write(fd, buf, 512) > 0)
    ;
  close(fd);
  CHECK(total > 0);
}

static void unfill_disk(const char *dir) {
  char path[700];
  snprintf(path, sizeof path, "%s/fill", dir);
  CHECK_INT(unlink(path), 0);
}

static int accepts(void *arg) {
  int *port = arg;
  resp r;
  static int n;
  char id[32];
  snprintf(id, sizeof id, "ok-%d", n++);
  return post(*port, id, &r) == 202;
}

static void full_disk_cases(const char *dir) {
  char mnt[600], conf[600], text[4096], log[600], portf[600], aportf[600];
  char ports[500];
  snprintf(mnt, sizeof mnt, "%s/mnt", dir);
  snprintf(ports, sizeof ports, "%.400s/ports", dir);
  CHECK_INT(mkdir(ports, 0700), 0);
  snprintf(conf, sizeof conf, "%s/conf2", dir);
  snprintf(log, sizeof log, "%s/log2", dir);
  CHECK_INT(mkdir(mnt, 0700), 0);
  CHECK_INT(mkdir(conf, 0700), 0);
  if (mount("tmpfs", mnt, "tmpfs", 0, "size=8m") != 0) {
    printf("full-disk cases skipped: cannot mount a tmpfs on %s (%s); they "
           "need root (CAP_SYS_ADMIN)\n",
           mnt, strerror(errno));
    return;
  }
  /* the port files outside: they could not be written on a full disk */
  snprintf(portf, sizeof portf, "%s/port", ports);
  snprintf(aportf, sizeof aportf, "%s/aport", ports);
  snprintf(text, sizeof text, k_conf_fmt, mnt, CEB_PLUGIN_DIR, ports, ports,
           ports);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);
  char *argv[] = {g_bin, "run", "-c", conf, NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  int port = ceb_test_wait_port_file(portf, 30000);
  int aport = ceb_test_wait_port_file(aportf, 30000);
  CHECK(port > 0 && aport > 0);
  resp r;
  CHECK_INT(post(port, "d-0", &r), 202);

  /* writes fail: 503 problem+json with Retry-After, /readyz 503 */
  fill_disk(mnt);
  int refused = 0, acked_after = 0;
  for (int i = 1; i <= 40; i++) {
    char id[32];
    snprintf(id, sizeof id, "d-%d", i);
    int st = post(port, id, &r);
    if (st == 503) {
      refused++;
      CHECK_MSG(strcasestr(r.headers, "retry-after:") &&
                    strcasestr(r.headers, "application/problem+json"),
                "503 without Retry-After or problem+json: %s", r.headers);
    } else if (refused) {
      acked_after += st == 202;
    }
  }
  CHECK_MSG(refused > 0, "a full disk was never refused");
  ready_arg ra = {aport, 503};
  CHECK_MSG(ceb_test_wait(readyz_is, &ra, 10000), "/readyz not 503");
  CHECK_MSG(acked_after == 0,
            "%d events acknowledged on a full disk after "
            "a refusal",
            acked_after);

  /* space again: ready and accepting */
  unfill_disk(mnt);
  ra.want = 200;
  CHECK_MSG(ceb_test_wait(readyz_is, &ra, 15000), "/readyz did not recover");
  CHECK_MSG(ceb_test_wait(accepts, &port, 15000), "ingress did not recover");
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);

  /* a restart on a full disk: the reserve beside the store is given up to
   * open it; ingress answers 503 (nothing accepted), /readyz 503 */
  char reserve[700];
  snprintf(reserve, sizeof reserve, "%s/store.db.reserve", mnt);
  CHECK_MSG(access(reserve, F_OK) == 0, "no reserve beside the store");
  remove(portf);
  remove(aportf);
  fill_disk(mnt);
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  port = ceb_test_wait_port_file(portf, 30000);
  aport = ceb_test_wait_port_file(aportf, 30000);
  CHECK_MSG(port > 0 && aport > 0, "did not start on a full disk");
  CHECK_INT(post(port, "r-1", &r), 503);
  CHECK_MSG(strcasestr(r.headers, "retry-after:") &&
                strcasestr(r.headers, "application/problem+json"),
            "503 without Retry-After or problem+json: %s", r.headers);
  ra = (ready_arg){aport, 503};
  CHECK(readyz_is(&ra));
  /* the room the reserve made is for starting, not for accepting */
  CHECK_INT(post(port, "r-2", &r), 503);
  unfill_disk(mnt);
  ra.want = 200;
  CHECK_MSG(ceb_test_wait(readyz_is, &ra, 15000), "/readyz did not recover");
  CHECK_MSG(ceb_test_wait(accepts, &port, 15000), "no 202 once space was back");
  CHECK_MSG(access(reserve, F_OK) == 0, "reserve not taken back");
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  char *l = ceb_test_read_file(log, NULL);
  CHECK_MSG(l && strstr(l, "gave up its reserve"), "the release is not logged");
  free(l);

  /* without a reserve (lost, or never had room for one) the bridge still
   * does not exit: it waits with the admin API up, /readyz 503, and starts
   * once there is room */
  CHECK_INT(unlink(reserve), 0);
  remove(portf);
  remove(aportf);
  fill_disk(mnt);
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  aport = ceb_test_wait_port_file(aportf, 30000);
  CHECK_MSG(aport > 0, "no admin API while the disk is full");
  ra = (ready_arg){aport, 503};
  CHECK(readyz_is(&ra));
  CHECK(ceb_proc_alive(&p));
  unfill_disk(mnt);
  port = ceb_test_wait_port_file(portf, 30000);
  CHECK_MSG(port > 0, "the bridge did not start once space was back");
  CHECK_MSG(ceb_test_wait(accepts, &port, 15000), "no 202 after the retry");
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  l = ceb_test_read_file(log, NULL);
  CHECK_MSG(l && strstr(l, "retrying"), "the wait is not logged");
  free(l);
  CHECK_INT(umount(mnt), 0);
}

int main(void) {
  snprintf(g_bin, sizeof g_bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *dir = ceb_test_tmpdir("storefaults");
  corruption_cases(dir);
  full_disk_cases(dir);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("integration_store_faults");
}
