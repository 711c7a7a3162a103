/* ceb_floor_mhd: ceb_floor_raw's durable 202 through libmicrohttpd, set up
 * as the bridge's intermediary sets it up (plugins/http/http_in.c:
 * MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, each request
 * suspended until its group is durable, MHD_resume_connection from the
 * syncer): the floor of the library the stack mandates. One daemon (the
 * bridge runs two on SO_REUSEPORT sockets by default; `threads = 1` is one).
 *
 *   ceb_floor_mhd [--sync none|resume|thread] [--port N] [--port-file P]
 *                 [--file PATH] [--prealloc MIB]
 *
 * --sync none    each body written (one pwrite) and answered in the access
 *                handler: the HTTP floor of the library (it has no "loop
 *                pass" to group the writes by)
 * --sync resume  suspend; the syncer writes the waiting bodies with one
 *                pwritev and resumes them, without fdatasync: the cost of
 *                the suspend/resume hand-off alone
 * --sync thread  the same with an fdatasync before the resumes: the
 *                bridge's shape (listener, committer/syncer, resume)
 * There is no "inline": an fdatasync in the handler would sync one request
 * at a time on the only listener thread.
 *
 * A bench tool: any POST body up to 1 MiB is taken; anything else gets a
 * 400. The file is handled as ceb_floor_raw's (--prealloc). SIGUSR1 prints
 * the counters to stderr; SIGTERM or SIGINT prints them and exits 0.
 * Threads: main (signals), libmicrohttpd's daemon thread (the handler) and
 * the syncer; the waiting list is shared under one mutex. */
#include "floor_common.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define BODY_MAX (1 << 20)

enum { SYNC_NONE, SYNC_RESUME, SYNC_THREAD };
enum { ST_RECV, ST_WAIT, ST_DONE, ST_BAD };

typedef struct req {
  struct req *next;
  struct MHD_Connection *conn;
  int state;
  char *body;
  size_t len, cap;
} req;

typedef struct floor_mhd {
  int mode;
  floor_file file;
  floor_counters n;
  struct MHD_Response *ok, *bad, *busy; /* made once, queued many times */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  req *head, **tail; /* suspended, waiting for the syncer */
  int stop;
  pthread_t syncer;
} floor_mhd;

static enum MHD_Result answer(floor_mhd *f, struct MHD_Connection *conn,
                              unsigned status, struct MHD_Response *resp) {
  if (status == MHD_HTTP_ACCEPTED) f->n.answers++;
  return MHD_queue_response(conn, status, resp);
}

static int body_add(req *r, const char *p, size_t n) {
  if (r->len + n > BODY_MAX) return -1;
  if (r->len + n > r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 2048;
    while (cap < r->len + n)
      cap *= 2;
    char *b = realloc(r->body, cap);
    if (!b) return -1;
    r->body = b;
    r->cap = cap;
  }
  memcpy(r->body + r->len, p, n);
  r->len += n;
  return 0;
}

/* libmicrohttpd's daemon thread. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *data,
                              size_t *data_size, void **ctx) {
  (void)url;
  (void)version;
  floor_mhd *f = cls;
  req *r = *ctx;
  if (!r) {
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
      return answer(f, conn, MHD_HTTP_BAD_REQUEST, f->bad);
    if (!(r = calloc(1, sizeof *r))) return MHD_NO;
    r->conn = conn;
    *ctx = r;
    return MHD_YES;
  }
  if (r->state == ST_RECV && *data_size) {
    if (body_add(r, data, *data_size) != 0) r->state = ST_BAD;
    *data_size = 0;
    return MHD_YES;
  }
  if (*data_size) { /* a refused body: drop it, answer at its end */
    *data_size = 0;
    return MHD_YES;
  }
  if (r->state == ST_BAD) return answer(f, conn, MHD_HTTP_BAD_REQUEST, f->bad);
  if (r->state == ST_DONE) return answer(f, conn, MHD_HTTP_ACCEPTED, f->ok);
  if (r->state != ST_RECV) return MHD_NO;
  f->n.events++;
  if (f->mode == SYNC_NONE) {
    floor_file_write(&f->file, r->body, r->len, &f->n);
    return answer(f, conn, MHD_HTTP_ACCEPTED, f->ok);
  }
  pthread_mutex_lock(&f->mu);
  if (f->stop) {
    pthread_mutex_unlock(&f->mu);
    return answer(f, conn, MHD_HTTP_SERVICE_UNAVAILABLE, f->busy);
  }
  r->state = ST_WAIT;
  MHD_suspend_connection(conn);
  *f->tail = r;
  f->tail = &r->next;
  pthread_cond_signal(&f->cv);
  pthread_mutex_unlock(&f->mu);
  return MHD_YES;
}

static void completed(void *cls, struct MHD_Connection *conn, void **ctx,
                      enum MHD_RequestTerminationCode code) {
  (void)cls;
  (void)conn;
  (void)code;
  req *r = *ctx;
  if (!r) return;
  free(r->body);
  free(r);
  *ctx = NULL;
}

/* Writes every waiting body with pwritev (IOV_MAX at a time), syncs them
 * (--sync thread) and resumes their connections. */
static void *syncer_main(void *arg) {
  floor_mhd *f = arg;
  struct iovec iov[1024];
  pthread_mutex_lock(&f->mu);
  for (;;) {
    while (!f->head && !f->stop)
      pthread_cond_wait(&f->cv, &f->mu);
    if (!f->head) break; /* stopping, nothing left */
    req *list = f->head;
    f->head = NULL;
    f->tail = &f->head;
    pthread_mutex_unlock(&f->mu);
    req *r = list;
    while (r) {
      int cnt = 0;
      size_t n = 0;
      for (; r && cnt < 1024; r = r->next) {
        iov[cnt++] = (struct iovec){r->body, r->len};
        n += r->len;
      }
      floor_file_writev(&f->file, iov, cnt, n, &f->n);
    }
    if (f->mode == SYNC_THREAD) floor_file_sync(&f->file, &f->n);
    for (r = list; r;) {
      req *next = r->next; /* r is the daemon's once resumed */
      r->state = ST_DONE;
      MHD_resume_connection(r->conn);
      r = next;
    }
    pthread_mutex_lock(&f->mu);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: ceb_floor_mhd [--sync none|resume|thread] "
                  "[--port N] [--port-file P] [--file PATH] "
                  "[--prealloc MIB]\n");
  exit(2);
}

static struct MHD_Response *text(const char *s) {
  return MHD_create_response_from_buffer(strlen(s), (void *)s,
                                         MHD_RESPMEM_PERSISTENT);
}

int main(int argc, char **argv) {
  static floor_mhd f;
  floor_opts o;
  if (floor_opts_parse(&o, argc, argv) != 0) usage();
  if (strcmp(o.sync, "none") == 0)
    f.mode = SYNC_NONE;
  else if (strcmp(o.sync, "resume") == 0)
    f.mode = SYNC_RESUME;
  else if (strcmp(o.sync, "thread") == 0)
    f.mode = SYNC_THREAD;
  else
    usage();
  sigset_t sigs;
  floor_block_signals(&sigs); /* before any thread: they inherit the mask */
  if (floor_file_open(&f.file, o.file, o.prealloc_mib) != 0) return 1;
  f.ok = text("{\"accepted\":1}\n");
  f.bad = text("");
  f.busy = text("");
  MHD_add_response_header(f.ok, "Content-Type", "application/json");
  f.tail = &f.head;
  pthread_mutex_init(&f.mu, NULL);
  pthread_cond_init(&f.cv, NULL);
  int port = 0, lfd = floor_listen(o.port, &port);
  if (lfd < 0) {
    perror("ceb_floor_mhd: listen");
    return 1;
  }
  if (f.mode != SYNC_NONE &&
      pthread_create(&f.syncer, NULL, syncer_main, &f) != 0)
    return 1;
  /* the bridge's flags and limits (http_in.c; connection_memory 32 KiB,
   * max_connections well above wrk's 256) */
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
          MHD_USE_ERROR_LOG,
      0, NULL, NULL, handle, &f, MHD_OPTION_LISTEN_SOCKET, lfd,
      MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
      MHD_OPTION_NOTIFY_COMPLETED, completed, &f, MHD_OPTION_END);
  if (!d || floor_announce(port, o.port_file) != 0) {
    fprintf(stderr, "ceb_floor_mhd: cannot start\n");
    return 1;
  }
  for (;;) {
    int sig = 0;
    if (sigwait(&sigs, &sig) != 0) continue;
    floor_counters_print("ceb_floor_mhd", &f.n);
    if (sig != SIGUSR1) break;
  }
  pthread_mutex_lock(&f.mu);
  f.stop = 1;
  pthread_cond_signal(&f.cv);
  pthread_mutex_unlock(&f.mu);
  if (f.mode != SYNC_NONE) pthread_join(f.syncer, NULL);
  MHD_stop_daemon(d);
  MHD_destroy_response(f.ok);
  MHD_destroy_response(f.bad);
  MHD_destroy_response(f.busy);
  floor_file_close(&f.file);
  return 0;
}
