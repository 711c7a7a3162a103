/* jsonl: a complete, small cebridge sink plugin, written as a template.
 *
 * It appends every delivered CloudEvent as one JSON line to a file and
 * settles the delivery only once the line is on disk (fsync), from its own
 * writer thread — the pattern every real sink follows: deliver() never
 * blocks, settle() comes later, exactly once.
 *
 *   [sink archive]
 *   plugin = jsonl
 *   path = /var/lib/cebridge/archive.jsonl
 *   fsync = true
 */
#define _POSIX_C_SOURCE 200809L /* fileno, fsync under -std=c11 */
#include <ceb/ceb.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The typed config spec: the host checks types, ranges, required keys and
 * unknown keys before init runs, and generates the reference from it. */
static const ceb_config_spec jsonl_spec[] = {
    {"path", CEB_CFG_PATH, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "File the events are appended to, one JSON object per line."},
    {"fsync", CEB_CFG_BOOL, 0, "true", 0, 0, NULL,
     "Settle a delivery only after the line is fsync()ed."},
    CEB_CONFIG_SPEC_END};

/* The checked values, typed: ceb_config_bind writes each key into its field
 * (ABI 1.1), so init reads no key by name. */
typedef struct jsonl_conf {
  const char *path; /* PATH: const char *, absolute */
  int fsync;        /* BOOL: int */
} jsonl_conf;

static const ceb_config_binding jsonl_bind[] = {
    CEB_BIND("path", jsonl_conf, path), CEB_BIND("fsync", jsonl_conf, fsync),
    CEB_CONFIG_BINDING_END};

typedef struct job {
  struct job *next;
  ceb_delivery *d; /* borrowed from the host until we settle it */
} job;

/* One instance per [sink NAME] section: no globals. */
typedef struct jsonl {
  const ceb_host *host;
  ceb_instance *inst;
  FILE *out;
  int fsync;
  pthread_t writer;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  job *head, *tail;
  int stopping;
  int running;
} jsonl;

static void settle(jsonl *s, ceb_delivery *d, ceb_outcome outcome,
                   const char *reason, const char *detail) {
  /* Designated fields: the ABI appends to its structs (1.2 added body and
   * body_len here), and the fields a plugin does not name are zero. */
  ceb_settle_info info = {.struct_size = sizeof info,
                          .outcome = outcome,
                          .retry_after_ms = -1,
                          .reason = reason,
                          .detail = detail};
  s->host->settle(s->inst, d, &info);
}

/* Writes a batch of jobs, syncs once, then settles each. */
static void write_batch(jsonl *s, job *jobs) {
  int io_error = 0;
  for (job *j = jobs; j; j = j->next) {
    char *line = NULL;
    size_t len = 0;
    if (ceb_json_encode(j->d->event, &line, &len) != CEB_OK) {
      settle(s, j->d, CEB_REJECT, "jsonl.encode", "cannot encode the event");
      j->d = NULL;
      continue;
    }
    if (fwrite(line, 1, len, s->out) != len || fputc('\n', s->out) == EOF)
      io_error = errno ? errno : EIO;
    ceb_free(line);
  }
  if (fflush(s->out) != 0 || (s->fsync && fsync(fileno(s->out)) != 0))
    io_error = errno ? errno : EIO;
  for (job *j = jobs, *n; j; j = n) {
    n = j->next;
    if (j->d) {
      if (io_error)
        /* A full disk is transient: the host retries per the route. */
        settle(s, j->d, CEB_RETRY, "jsonl.io", strerror(io_error));
      else
        settle(s, j->d, CEB_ACK, NULL, NULL);
    }
    free(j);
  }
  if (io_error)
    s->host->log(s->inst, CEB_LOG_WARN, "write failed: %s", strerror(io_error));
}

static void *writer_main(void *arg) {
  jsonl *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stopping)
      pthread_cond_wait(&s->cond, &s->lock);
    if (!s->head) break;
    job *batch = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    write_batch(s, batch);
    pthread_mutex_lock(&s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static void jsonl_destroy(void *state);

/* Control thread. On failure, free everything: the host calls nothing else. */
static int jsonl_init(const ceb_host *host, ceb_instance *inst,
                      const ceb_instance_info *info, const ceb_config *cfg,
                      void **state) {
  (void)info;
  jsonl *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->host = host;
  s->inst = inst;
  jsonl_conf conf;
  char why[256];
  if (ceb_config_bind(cfg, jsonl_bind, &conf, why, sizeof why) != CEB_OK) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "%s", why);
    free(s);
    return CEB_ECONFIG;
  }
  s->fsync = conf.fsync;
  const char *path = conf.path;
  s->out = fopen(path, "a");
  if (!s->out) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "cannot open %s: %s", path,
            strerror(errno));
    free(s);
    return CEB_EIO;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  *state = s;
  return CEB_OK;
}

static int jsonl_start(void *state) {
  jsonl *s = state;
  if (pthread_create(&s->writer, NULL, writer_main, s) != 0)
    return CEB_EINTERNAL;
  s->running = 1;
  return CEB_OK;
}

/* Worker thread: must not block. Queue the job; the writer settles it. */
static int jsonl_deliver(void *state, ceb_delivery *d) {
  jsonl *s = state;
  job *j = calloc(1, sizeof *j);
  if (!j) return CEB_ENOMEM; /* not settled: the host retries */
  j->d = d;
  pthread_mutex_lock(&s->lock);
  int stopping = s->stopping;
  if (!stopping) {
    if (s->tail)
      s->tail->next = j;
    else
      s->head = j;
    s->tail = j;
    pthread_cond_signal(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
  if (stopping) {
    free(j);
    return CEB_ESHUTDOWN;
  }
  return CEB_OK;
}

/* Control thread: finish what is queued (it is quick), then stop. */
static int jsonl_drain(void *state, int64_t deadline_ms) {
  (void)deadline_ms;
  jsonl *s = state;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->lock);
  if (s->running) {
    pthread_join(s->writer, NULL);
    s->running = 0;
  }
  return CEB_OK;
}

static void jsonl_destroy(void *state) {
  jsonl *s = state;
  if (!s) return;
  jsonl_drain(s, 0);
  fclose(s->out);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static const ceb_plugin jsonl_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "jsonl",
    .version = "1.0.0",
    .description = "Appends events as JSON lines to a file (template plugin).",
    .roles = CEB_ROLE_SINK,
    .config_sink = jsonl_spec,
    .init = jsonl_init,
    .start = jsonl_start,
    .drain = jsonl_drain,
    .destroy = jsonl_destroy,
    .deliver = jsonl_deliver,
};

CEB_PLUGIN_DEFINE(jsonl_plugin)
