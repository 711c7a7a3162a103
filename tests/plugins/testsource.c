#include "testsource.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ceb/ceb.h>

#include "ceb_test_latch.h"

struct testsource {
  const ceb_host *host;
  ceb_instance *inst;
  char name[128];
  int64_t count, keys;
  char type[128];
  char record[512];
  pthread_t thread;
  int running, stop;
  pthread_mutex_t lock;
};

static const ceb_config_spec k_spec[] = {
    {"count", CEB_CFG_INT, 0, "0", 0, 100000000, NULL,
     "Events to submit at start (0: none; the test drives it)."},
    {"keys", CEB_CFG_INT, 0, "4", 1, 1000000, NULL,
     "Distinct partitionkey values of generated events."},
    {"type", CEB_CFG_STRING, 0, "nl.cebridge.test", 0, 0, NULL,
     "Type of generated events."},
    {"record", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "File that gets each acknowledged id, fsync'd."},
    CEB_CONFIG_SPEC_END};

static void on_durable(void *arg, const ceb_submit_result *r) {
  ceb_test_latch_open(arg, CEB_OK, r, sizeof *r);
}

int testsource_submit(testsource *s, ceb_event *const *events, size_t n,
                      ceb_submit_opts *opts, ceb_submit_result *res) {
  ceb_test_latch l;
  ceb_test_latch_init(&l, res, res ? sizeof *res : 0);
  return ceb_test_latch_await(
      &l, s->host->submit(s->inst, events, n, opts, on_durable, &l), CEB_OK);
}

int testsource_submit_mapped(testsource *s, const char *doc,
                             ceb_submit_opts *opts, ceb_submit_result *res,
                             char *err, size_t errlen) {
  if (!CEB_HOST_HAS(s->host, submit_mapped)) return CEB_EUNSUPPORTED;
  ceb_test_latch l;
  ceb_test_latch_init(&l, res, res ? sizeof *res : 0);
  return ceb_test_latch_await(&l,
                              s->host->submit_mapped(s->inst, doc, strlen(doc),
                                                     opts, on_durable, &l, err,
                                                     errlen),
                              CEB_OK);
}

const ceb_host *testsource_host(testsource *s) {
  return s->host;
}
ceb_instance *testsource_instance(testsource *s) {
  return s->inst;
}

static int stopping(testsource *s) {
  pthread_mutex_lock(&s->lock);
  int st = s->stop;
  pthread_mutex_unlock(&s->lock);
  return st;
}

static void *generator(void *arg) {
  testsource *s = arg;
  FILE *rec = s->record[0] ? fopen(s->record, "a") : NULL;
  for (int64_t i = 0; i < s->count && !stopping(s); i++) {
    ceb_event *ev = ceb_event_new();
    char buf[160];
    ceb_event_set(ev, "specversion", "1.0");
    snprintf(buf, sizeof buf, "%s-%lld", s->name, (long long)i);
    ceb_event_set(ev, "id", buf);
    ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:test");
    ceb_event_set(ev, "type", s->type);
    ceb_event_set(ev, "time", "2026-11-22T12:00:00Z");
    snprintf(buf, sizeof buf, "k%lld", (long long)(i % s->keys));
    ceb_event_set(ev, "partitionkey", buf);
    ceb_submit_result res = {0};
    int rc;
    while ((rc = testsource_submit(s, &ev, 1, NULL, &res)) == CEB_EBUSY &&
           !stopping(s)) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (rc != CEB_OK) {
      ceb_event_unref(ev);
      break;
    }
    if (res.status == CEB_OK && rec) {
      snprintf(buf, sizeof buf, "%s-%lld", s->name, (long long)i);
      fprintf(rec, "%s\n", buf);
      fflush(rec);
      fsync(fileno(rec));
    }
  }
  if (rec) fclose(rec);
  return NULL;
}

static int src_init(const ceb_host *host, ceb_instance *inst,
                    const ceb_instance_info *info, const ceb_config *cfg,
                    void **state) {
  testsource *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->host = host;
  s->inst = inst;
  pthread_mutex_init(&s->lock, NULL);
  snprintf(s->name, sizeof s->name, "%s",
           info && info->name ? info->name : "src");
  s->count = cfg ? ceb_config_int(cfg, "count", 0) : 0;
  s->keys = cfg ? ceb_config_int(cfg, "keys", 4) : 4;
  if (s->keys < 1) s->keys = 1;
  const char *t = cfg ? ceb_config_str(cfg, "type") : NULL;
  snprintf(s->type, sizeof s->type, "%s", t ? t : "nl.cebridge.test");
  const char *r = cfg ? ceb_config_str(cfg, "record") : NULL;
  if (r) snprintf(s->record, sizeof s->record, "%s", r);
  *state = s;
  return CEB_OK;
}

static int src_start(void *state) {
  testsource *s = state;
  if (s->count > 0) {
    if (pthread_create(&s->thread, NULL, generator, s) != 0)
      return CEB_EINTERNAL;
    s->running = 1;
  }
  return CEB_OK;
}

static int src_drain(void *state, int64_t deadline_ms) {
  (void)deadline_ms;
  testsource *s = state;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_mutex_unlock(&s->lock);
  if (s->running) {
    pthread_join(s->thread, NULL);
    s->running = 0;
  }
  return CEB_OK;
}

static void src_destroy(void *state) {
  testsource *s = state;
  src_drain(s, 0);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

const ceb_plugin ceb_testsource_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "testsource",
    .version = "1.0",
    .description = "Scripted source for core tests",
    .roles = CEB_ROLE_SOURCE | CEB_ROLE_MAPPINGS, /* the test calls
                                                     submit_mapped */
    .config_source = k_spec,
    .init = src_init,
    .start = src_start,
    .drain = src_drain,
    .destroy = src_destroy,
};
