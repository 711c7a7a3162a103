/* The pool of mapping workers: see ceb_mapping.h. A call takes one free
 * worker for its whole batch (callers wait on a condition variable when
 * all are busy), sends the batch in one sendmsg sequence (no copy of the
 * inputs), and reads the answers one by one, each with the item's own
 * deadline. A late answer or a dead worker fails that item only: the
 * worker is killed, a new one is spawned (it compiles every program
 * again, a few ms) and gets the rest of the batch. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ceb/status.h>

#include "mapping/ceb_mapping.h"
#include "mapping/mapper_io.h"
#include "mapping/mapper_proto.h"
#include "mapping/mapper_spawn.h"

#ifndef CEB_MAPPER_INSTALL_PATH
#define CEB_MAPPER_INSTALL_PATH "/usr/lib/cebridge/cebridge-mapper"
#endif

/* Bounds a worker that never reads its programs, or never answers a
 * check. */
#define SPAWN_WAIT_MS 10000

/* Bytes of answers one read may take (a batch's answers come in bursts). */
#define READ_BUF 65536

typedef struct slot {
  cebm_proc proc;
  cebm_rbuf rb; /* the worker's answers read ahead; reset with a new one */
  int busy;     /* under the pool lock */
  unsigned char *compiled; /* per program: this worker compiled it (the
                              first item's deadline allows the compile) */
} slot;

/* The longest a worker may take to compile a program at its first use
 * (jq 1.6: ~25 ms idle, far more on a loaded machine); the worker says
 * CEBM_ST_COMPILED when done and the item's own time limit starts then: a
 * replaced worker does not fail a good item for its compile. */
#define COMPILE_ALLOW_MS 5000

/* One caller's batch waiting in the pool's queue (on the caller's stack).
 * Under the pool lock. */
typedef struct pending {
  ceb_map_req *reqs;
  size_t n;
  int done;
  pthread_cond_t cond;
  struct pending *next;
} pending;

/* Most items a leader sends in one combined batch (a caller's own batch
 * may be larger: it goes alone). */
#define COMBINE_MAX 256

struct ceb_mapper {
  char *path;
  ceb_mapper_opts opts;
  char **programs;
  uint32_t *lens;
  size_t nprog;
  pthread_mutex_t lock;
  pending *head, *tail; /* callers waiting, FIFO */
  slot *slots;
  int nslots;
  atomic_uint_fast64_t items, failed, timeouts, memory, crashes, spawns;
};

const char *ceb_mapper_default_path(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      /* A path too long for buf is not the installed worker: skip it (and
       * using the length keeps -O2's format-truncation check satisfied). */
      int w = snprintf(buf, cap, "%s/../lib/cebridge/cebridge-mapper", exe);
      if (w > 0 && (size_t)w < cap && access(buf, X_OK) == 0) return buf;
    }
  }
  snprintf(buf, cap, "%s", CEB_MAPPER_INSTALL_PATH);
  return buf;
}

static const char *path_of(const ceb_mapper_opts *o, char *buf, size_t cap) {
  if (o && o->worker_path) return o->worker_path;
  return ceb_mapper_default_path(buf, cap);
}

static uint32_t *lengths(const char *const *programs, size_t n) {
  uint32_t *lens = calloc(n ? n : 1, sizeof *lens);
  for (size_t i = 0; lens && i < n; i++) {
    size_t l = strlen(programs[i]);
    if (l > CEBM_MAX_TEXT) {
      free(lens);
      return NULL;
    }
    lens[i] = (uint32_t)l;
  }
  return lens;
}

int ceb_mapper_check(const ceb_mapper_opts *opts, const char *const *programs,
                     size_t n, char **reasons, char *err, size_t errlen) {
  char buf[PATH_MAX];
  const char *path = path_of(opts, buf, sizeof buf);
  for (size_t i = 0; i < n; i++)
    reasons[i] = NULL;
  uint32_t *lens = lengths(programs, n);
  if (!lens) {
    snprintf(err, errlen, "a mapping program is too large");
    return CEB_EINVAL;
  }
  cebm_proc p;
  int rc = cebm_spawn(path, opts ? opts->memory_max : 0,
                      opts ? opts->timeout_ms : 1000, programs, lens, n,
                      cebm_now_ms() + SPAWN_WAIT_MS, &p, reasons, err, errlen);
  free(lens);
  return rc == CEB_ECONFIG ? CEB_OK : rc;
}

static void count(ceb_mapper *m, const char *name, const char *reason,
                  double n) {
  if (!m->opts.metrics) return;
  char labels[64] = "";
  if (reason) snprintf(labels, sizeof labels, "reason=\"%s\"", reason);
  ceb_metrics_add(m->opts.metrics, name, labels, n);
}

static int spawn(ceb_mapper *m, slot *s, char *err, size_t errlen) {
  atomic_fetch_add(&m->spawns, 1);
  count(m, "cebridge_mapping_worker_starts_total", NULL, 1);
  memset(s->compiled, 0, m->nprog ? m->nprog : 1);
  s->rb.off = s->rb.len = 0; /* nothing read ahead from the old one */
  int rc =
      cebm_spawn(m->path, m->opts.memory_max, m->opts.timeout_ms,
                 (const char *const *)m->programs, m->lens, m->nprog,
                 cebm_now_ms() + SPAWN_WAIT_MS, &s->proc, NULL, err, errlen);
  return rc;
}

void ceb_mapper_free(ceb_mapper *m) {
  if (!m) return;
  for (int i = 0; i < m->nslots; i++)
    cebm_proc_kill(&m->slots[i].proc, NULL);
  for (size_t i = 0; i < m->nprog; i++)
    free(m->programs[i]);
  free(m->programs);
  free(m->lens);
  for (int i = 0; m->slots && i < m->nslots; i++) {
    free(m->slots[i].compiled);
    free(m->slots[i].rb.p);
  }
  free(m->slots);
  free(m->path);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

ceb_mapper *ceb_mapper_new(const ceb_mapper_opts *opts,
                           const char *const *programs, size_t n, char *err,
                           size_t errlen) {
  if (!opts || opts->workers < 1 || opts->timeout_ms <= 0) {
    snprintf(err, errlen, "mapping: invalid pool options");
    return NULL;
  }
  ceb_mapper *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  char buf[PATH_MAX];
  m->opts = *opts;
  m->path = strdup(path_of(opts, buf, sizeof buf));
  m->opts.worker_path = m->path;
  m->programs = calloc(n ? n : 1, sizeof *m->programs);
  m->lens = lengths(programs, n);
  m->slots = calloc((size_t)opts->workers, sizeof *m->slots);
  pthread_mutex_init(&m->lock, NULL);
  if (!m->path || !m->programs || !m->lens || !m->slots) {
    snprintf(err, errlen, "mapping: out of memory");
    ceb_mapper_free(m);
    return NULL;
  }
  m->nprog = n;
  for (size_t i = 0; i < n; i++)
    if (!(m->programs[i] = strdup(programs[i]))) {
      snprintf(err, errlen, "mapping: out of memory");
      ceb_mapper_free(m);
      return NULL;
    }
  m->nslots = opts->workers;
  for (int i = 0; i < m->nslots; i++)
    m->slots[i].proc = (cebm_proc){0, -1}; /* before any free */
  for (int i = 0; i < m->nslots; i++) {
    m->slots[i].compiled = calloc(n ? n : 1, 1);
    m->slots[i].rb = (cebm_rbuf){.p = malloc(READ_BUF), .cap = READ_BUF};
    if (!m->slots[i].compiled || !m->slots[i].rb.p) {
      snprintf(err, errlen, "mapping: out of memory");
      ceb_mapper_free(m);
      return NULL;
    }
  }
  /* every worker now: a worker that cannot start shows at start, not at
   * the first event (programs were compiled by ceb_mapper_check) */
  for (int i = 0; i < m->nslots; i++)
    if (spawn(m, &m->slots[i], err, errlen) != CEB_OK) {
      ceb_mapper_free(m);
      return NULL;
    }
  return m;
}

static slot *free_slot(ceb_mapper *m) {
  for (int i = 0; i < m->nslots; i++)
    if (!m->slots[i].busy) return &m->slots[i];
  return NULL;
}

/* reason: the failure's label (error, timeout, memory, crash, no_worker) */
static void fail(ceb_mapper *m, ceb_map_req *r, int status, const char *reason,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void fail(ceb_mapper *m, ceb_map_req *r, int status, const char *reason,
                 const char *fmt, ...) {
  atomic_fetch_add(&m->failed, 1);
  count(m, "cebridge_mapping_failures_total", reason, 1);
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
}

/* Sends reqs[0..n) as one batch. */
static int send_batch(slot *s, ceb_map_req **reqs, size_t n, int64_t deadline) {
  size_t niov = 1 + 2 * n;
  struct iovec *iov = malloc(niov * sizeof *iov);
  uint32_t *heads = malloc((n ? n : 1) * 3 * sizeof *heads);
  if (!iov || !heads) {
    free(iov);
    free(heads);
    return CEB_ENOMEM;
  }
  uint32_t count = (uint32_t)n;
  iov[0] = (struct iovec){&count, sizeof count};
  for (size_t i = 0; i < n; i++) {
    heads[3 * i] = reqs[i]->program;
    heads[3 * i + 1] = reqs[i]->flags;
    heads[3 * i + 2] = (uint32_t)reqs[i]->input_len;
    iov[1 + 2 * i] = (struct iovec){&heads[3 * i], 3 * sizeof *heads};
    iov[2 + 2 * i] = (struct iovec){(void *)reqs[i]->input, reqs[i]->input_len};
  }
  int rc = cebm_send(s->proc.fd, iov, niov, deadline);
  free(iov);
  free(heads);
  return rc;
}

/* Reads one answer into r. CEB_OK (r filled, whatever the item's status),
 * CEB_ETIMEOUT or CEB_EIO (the worker is to be killed). *memory is set on
 * the worker's out-of-memory frame (the worker exits after it). */
static int read_answer(ceb_mapper *m, slot *s, ceb_map_req *r, int64_t deadline,
                       int *memory) {
  uint32_t h[3];
  int rc = cebm_recv_buffered(s->proc.fd, &s->rb, h, sizeof h, deadline);
  if (rc == CEB_OK && h[0] == CEBM_ST_COMPILED) {
    /* compiled for this item: its time limit starts now */
    rc = cebm_recv_buffered(s->proc.fd, &s->rb, h, sizeof h,
                            cebm_now_ms() + m->opts.timeout_ms);
  }
  if (rc != CEB_OK) return rc;
  if (h[0] == CEBM_ST_MEMORY) {
    *memory = 1;
    return CEB_EIO;
  }
  if (h[2] > CEBM_MAX_TEXT || (h[0] == CEBM_ST_ERROR && h[2] > CEBM_MAX_REASON))
    return CEB_EIO;
  char *buf = malloc((size_t)h[2] + 1);
  if (!buf) return CEB_ENOMEM;
  rc = cebm_recv_buffered(s->proc.fd, &s->rb, buf, h[2], deadline);
  if (rc != CEB_OK) {
    free(buf);
    return rc;
  }
  buf[h[2]] = '\0';
  if (h[0] == CEBM_ST_OK) {
    r->status = CEB_OK;
    r->out = buf;
    r->out_len = h[2];
    r->nout = h[1];
  } else {
    for (char *p = buf; *p; p++) /* one line, whatever the worker said */
      if ((unsigned char)*p < 0x20) *p = ' ';
    fail(m, r, CEB_EMAPPING, "error", "%s", buf);
    free(buf);
  }
  return CEB_OK;
}

/* Runs items[0..n) on slot s's worker, in order (see the file comment). */
static void run_on_slot(ceb_mapper *m, slot *s, ceb_map_req **items, size_t n) {
  size_t i = 0;
  int resent = 0;
  while (i < n) {
    char err[256];
    if (s->proc.pid == 0 && spawn(m, s, err, sizeof err) != CEB_OK) {
      for (; i < n; i++)
        fail(m, items[i], CEB_EIO, "no_worker", "%s", err);
      break;
    }
    /* a worker that died while idle (killed from outside, the OOM
     * killer): replaced before it is handed a batch, no item fails */
    int st;
    if (!resent && waitpid(s->proc.pid, &st, WNOHANG) == s->proc.pid) {
      s->proc.pid = 0; /* reaped: only the socket is left to close */
      cebm_proc_kill(&s->proc, NULL);
      resent = 1;
      continue;
    }
    /* the worker reads the whole batch before running any of it */
    int64_t t = m->opts.timeout_ms;
    int rc =
        send_batch(s, items + i, n - i, cebm_now_ms() + (t > 1000 ? t : 1000));
    if (rc == CEB_ENOMEM) {
      for (; i < n; i++)
        fail(m, items[i], CEB_EIO, "no_worker", "mapping: out of memory");
      break;
    }
    if (rc != CEB_OK && !resent) {
      /* the worker was gone before this batch (killed from outside):
       * not the items' fault, once */
      cebm_proc_kill(&s->proc, NULL);
      resent = 1;
      continue;
    }
    resent = 1;
    int memory = 0;
    while (rc == CEB_OK && i < n) {
      unsigned char *done = &s->compiled[items[i]->program];
      int64_t allow = *done ? 0 : COMPILE_ALLOW_MS;
      rc = read_answer(m, s, items[i], cebm_now_ms() + t + allow, &memory);
      *done = 1; /* compiled now (a worker killed here starts from zero) */
      if (rc == CEB_OK) i++;
    }
    if (rc == CEB_OK) break;
    cebm_proc_kill(&s->proc, &st);
    if (rc == CEB_ETIMEOUT) {
      atomic_fetch_add(&m->timeouts, 1);
      fail(m, items[i], CEB_EMAPPING, "timeout",
           "mapping timed out after %lld ms", (long long)t);
    } else if (memory) {
      atomic_fetch_add(&m->memory, 1);
      fail(m, items[i], CEB_EMAPPING, "memory",
           "mapping exceeded its memory limit (mapping.memory_max, %llu MiB)",
           (unsigned long long)(m->opts.memory_max / (1024 * 1024)));
    } else if (rc == CEB_ENOMEM) {
      fail(m, items[i], CEB_EIO, "no_worker", "mapping: out of memory");
    } else {
      atomic_fetch_add(&m->crashes, 1);
      if (st != -1 && WIFSIGNALED(st))
        fail(m, items[i], CEB_EMAPPING, "crash",
             "the mapping worker died running this item (signal %d, %s)",
             WTERMSIG(st), strsignal(WTERMSIG(st)));
      else
        fail(m, items[i], CEB_EMAPPING, "crash",
             "the mapping worker died running this item (exit status %d)",
             st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    i++; /* that item failed; the rest go to a new worker */
  }
}

/* Leads: runs the queue's head batches (up to COMBINE_MAX items, at least
 * the head's) on slot s as one batch. Called with the lock held, the head
 * being the caller's; drops it while the worker runs. */
static void lead(ceb_mapper *m, slot *s) {
  pending *first = m->head, *last = first;
  size_t total = first->n;
  while (last->next && total + last->next->n <= COMBINE_MAX) {
    last = last->next;
    total += last->n;
  }
  m->head = last->next;
  if (!m->head) m->tail = NULL;
  last->next = NULL;
  s->busy = 1;
  /* another free worker: the new head leads there at once */
  if (m->head && free_slot(m)) pthread_cond_signal(&m->head->cond);
  pthread_mutex_unlock(&m->lock);
  ceb_map_req *small[COMBINE_MAX];
  ceb_map_req **items =
      total <= COMBINE_MAX ? small : malloc(total * sizeof *items);
  size_t k = 0;
  for (pending *q = first; q && items; q = q->next)
    for (size_t j = 0; j < q->n; j++)
      items[k++] = &q->reqs[j];
  if (items) {
    run_on_slot(m, s, items, total);
  } else {
    for (pending *q = first; q; q = q->next)
      for (size_t j = 0; j < q->n; j++)
        fail(m, &q->reqs[j], CEB_EIO, "no_worker", "mapping: out of memory");
  }
  if (items != small) free(items);
  pthread_mutex_lock(&m->lock);
  s->busy = 0;
  for (pending *q = first, *next; q; q = next) {
    next = q->next; /* q may return (and vanish) once the lock is free */
    q->done = 1;
    pthread_cond_signal(&q->cond);
  }
  if (m->head) pthread_cond_signal(&m->head->cond); /* a worker is free */
}

/* Calls queue in FIFO order; the caller at the head takes a free worker
 * and sends every queued batch behind it along with its own (up to
 * COMBINE_MAX items), so that concurrent callers of one item each (HTTP
 * requests, Kafka records) share one round trip to a worker instead of
 * taking turns. Each item keeps its own deadline. */
int ceb_mapper_run(ceb_mapper *m, ceb_map_req *reqs, size_t n) {
  if (!m || (!reqs && n)) return CEB_EINVAL;
  for (size_t i = 0; i < n; i++) {
    reqs[i].status = CEB_EINTERNAL;
    reqs[i].reason[0] = '\0';
    reqs[i].out = NULL;
    reqs[i].out_len = reqs[i].nout = 0;
    if (reqs[i].program >= m->nprog || reqs[i].input_len > CEBM_MAX_TEXT ||
        (!reqs[i].input && reqs[i].input_len))
      return CEB_EINVAL;
  }
  if (!n) return CEB_OK;
  atomic_fetch_add(&m->items, n);
  count(m, "cebridge_mapping_runs_total", NULL, (double)n);
  pending p = {.reqs = reqs, .n = n};
  pthread_cond_init(&p.cond, NULL);
  pthread_mutex_lock(&m->lock);
  if (m->tail)
    m->tail->next = &p;
  else
    m->head = &p;
  m->tail = &p;
  while (!p.done) {
    slot *s = m->head == &p ? free_slot(m) : NULL;
    if (s)
      lead(m, s);
    else
      pthread_cond_wait(&p.cond, &m->lock);
  }
  pthread_mutex_unlock(&m->lock);
  pthread_cond_destroy(&p.cond);
  return CEB_OK;
}

const char *ceb_map_output(const ceb_map_req *r, const char *prev) {
  if (!r || r->status != CEB_OK || !r->out || !r->nout) return NULL;
  const char *next = prev ? prev + strlen(prev) + 1 : r->out;
  return next < r->out + r->out_len ? next : NULL;
}

void ceb_map_req_clear(ceb_map_req *r) {
  if (!r) return;
  free(r->out);
  r->out = NULL;
  r->out_len = r->nout = 0;
}

void ceb_mapper_stats_get(ceb_mapper *m, ceb_mapper_stats *out) {
  *out = (ceb_mapper_stats){atomic_load(&m->items),    atomic_load(&m->failed),
                            atomic_load(&m->timeouts), atomic_load(&m->memory),
                            atomic_load(&m->crashes),  atomic_load(&m->spawns)};
}
