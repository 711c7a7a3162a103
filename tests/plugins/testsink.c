#include "testsink.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

typedef struct held {
  struct held *next;
  ceb_delivery *d;
} held;

struct testsink {
  const ceb_host *host;
  ceb_instance *inst;
  pthread_mutex_t lock;
  ceb_outcome mode;
  char record[512];
  testsink_script_fn script;
  void *script_arg;
  int hold;
  int busy; /* deliver calls left that return CEB_EBUSY */
  size_t busy_seen;
  held *head, *tail;
  size_t nheld;
  testsink_seen *seen;
  size_t nseen, cap;
  /* The ABI's order: no deliver before start returned. start lingers
   * start_linger_ms, watching for a delivery that comes too early. */
  atomic_int started;
  int64_t linger_ms;
  pthread_cond_t early_cond;
  size_t early; /* deliver calls before start returned (under lock) */
};

static const ceb_config_spec k_spec[] = {
    {"mode", CEB_CFG_ENUM, 0, "ack", 0, 0, "ack|retry|reject",
     "Outcome of every delivery."},
    {"record", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "File that gets one line per delivery: route id attempt topic, and "
     "the word before-start when it came before start returned."},
    {"start_linger_ms", CEB_CFG_INT, 0, "0", 0, 60000, NULL,
     "How long start waits, watching for a delivery that arrives before "
     "it returned (a host that breaks the start order)."},
    CEB_CONFIG_SPEC_END};

static int sink_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state) {
  (void)info;
  testsink *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->host = host;
  s->inst = inst;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->early_cond, NULL);
  s->linger_ms = cfg ? ceb_config_int(cfg, "start_linger_ms", 0) : 0;
  if (!cfg) atomic_store(&s->started, 1); /* linked into a test: no start */
  const char *m = cfg ? ceb_config_str(cfg, "mode") : NULL;
  s->mode = m && strcmp(m, "retry") == 0    ? CEB_RETRY
            : m && strcmp(m, "reject") == 0 ? CEB_REJECT
                                            : CEB_ACK;
  const char *r = cfg ? ceb_config_str(cfg, "record") : NULL;
  if (r) snprintf(s->record, sizeof s->record, "%s", r);
  *state = s;
  return CEB_OK;
}

/* Lingers up to linger_ms or until a delivery arrives before it returned:
 * a host that starts the engine before its sinks is caught (the delivery
 * is recorded as before-start). */
static int sink_start(void *state) {
  testsink *s = state;
  if (s->linger_ms > 0) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(s->linger_ms / 1000);
    until.tv_nsec += (long)(s->linger_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->lock);
    while (s->early == 0 &&
           pthread_cond_timedwait(&s->early_cond, &s->lock, &until) == 0)
      ;
    pthread_mutex_unlock(&s->lock);
  }
  atomic_store(&s->started, 1);
  return CEB_OK;
}

static int sink_drain(void *state, int64_t deadline_ms) {
  (void)deadline_ms;
  testsink *s = state;
  /* held deliveries are given back as retries */
  while (testsink_settle_held(s, CEB_RETRY, "drain"))
    ;
  return CEB_OK;
}

static void sink_destroy(void *state) {
  testsink *s = state;
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->early_cond);
  for (held *h = s->head, *n; h; h = n) {
    n = h->next;
    free(h);
  }
  free(s->seen);
  free(s);
}

static int sink_deliver(void *state, ceb_delivery *d) {
  testsink *s = state;
  int early = !atomic_load(&s->started);
  testsink_seen seen = {.attempt = d->attempt};
  snprintf(seen.route, sizeof seen.route, "%s", d->route ? d->route : "");
  const char *id = ceb_event_get(d->event, "id");
  snprintf(seen.id, sizeof seen.id, "%s", id ? id : "");
  snprintf(seen.topic, sizeof seen.topic, "%s", d->topic ? d->topic : "");
  snprintf(seen.idem_key, sizeof seen.idem_key, "%s",
           d->idempotency_key ? d->idempotency_key : "");
  const char *dr = ceb_event_get(d->event, "deadreason");
  snprintf(seen.deadreason, sizeof seen.deadreason, "%s", dr ? dr : "");
  const ceb_mapped_out *m = ceb_delivery_mapped(d);
  if (m) {
    seen.mapped = 1;
    snprintf(seen.body, sizeof seen.body, "%.*s", (int)m->body_len, m->body);
    snprintf(seen.content_type, sizeof seen.content_type, "%s",
             m->content_type);
    size_t used = 0;
    for (size_t i = 0; i < m->nheaders && used < sizeof seen.headers; i++)
      used +=
          (size_t)snprintf(seen.headers + used, sizeof seen.headers - used,
                           "%s: %s\n", m->headers[i].name, m->headers[i].value);
    snprintf(seen.key, sizeof seen.key, "%s", m->key ? m->key : "");
    snprintf(seen.map_topic, sizeof seen.map_topic, "%s",
             m->topic ? m->topic : "");
  }
  pthread_mutex_lock(&s->lock);
  if (early) {
    s->early++;
    pthread_cond_broadcast(&s->early_cond);
  }
  if (s->busy > 0) { /* backpressure: not taken, not seen */
    s->busy--;
    s->busy_seen++;
    pthread_mutex_unlock(&s->lock);
    return CEB_EBUSY;
  }
  if (s->nseen == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 64;
    testsink_seen *n = realloc(s->seen, nc * sizeof *n);
    if (!n) {
      pthread_mutex_unlock(&s->lock);
      return CEB_ENOMEM;
    }
    s->seen = n;
    s->cap = nc;
  }
  s->seen[s->nseen++] = seen;
  if (s->record[0]) {
    FILE *f = fopen(s->record, "a");
    if (f) {
      fprintf(f, "%s %s %u %s%s\n", seen.route, seen.id, seen.attempt,
              seen.topic[0] ? seen.topic : "-", early ? " before-start" : "");
      fclose(f);
    }
  }
  if (s->hold) {
    held *h = calloc(1, sizeof *h);
    if (!h) {
      pthread_mutex_unlock(&s->lock);
      return CEB_ENOMEM;
    }
    h->d = d;
    if (s->tail)
      s->tail->next = h;
    else
      s->head = h;
    s->tail = h;
    s->nheld++;
    pthread_mutex_unlock(&s->lock);
    return CEB_OK;
  }
  testsink_script_fn fn = s->script;
  void *arg = s->script_arg;
  ceb_outcome mode = s->mode;
  pthread_mutex_unlock(&s->lock);
  ceb_settle_info info = {.struct_size = sizeof info,
                          .outcome = mode,
                          .retry_after_ms = -1,
                          .reason = mode == CEB_ACK ? "ok" : "scripted"};
  if (fn) info.outcome = fn(arg, d, &info);
  s->host->settle(s->inst, d, &info); /* settle from the deliver thread */
  return CEB_OK;
}

const ceb_plugin ceb_testsink_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "testsink",
    .version = "1.0",
    .description = "Scripted sink for core tests",
    .roles = CEB_ROLE_SINK | CEB_ROLE_TOPICS | CEB_ROLE_MAPPINGS,
    .config_sink = k_spec,
    .init = sink_init,
    .start = sink_start,
    .drain = sink_drain,
    .destroy = sink_destroy,
    .deliver = sink_deliver,
};

void testsink_script(testsink *s, testsink_script_fn fn, void *arg) {
  pthread_mutex_lock(&s->lock);
  s->script = fn;
  s->script_arg = arg;
  pthread_mutex_unlock(&s->lock);
}

void testsink_busy(testsink *s, int n) {
  pthread_mutex_lock(&s->lock);
  s->busy = n;
  pthread_mutex_unlock(&s->lock);
}

size_t testsink_busy_count(testsink *s) {
  pthread_mutex_lock(&s->lock);
  size_t n = s->busy_seen;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void testsink_hold(testsink *s, int hold) {
  pthread_mutex_lock(&s->lock);
  s->hold = hold;
  pthread_mutex_unlock(&s->lock);
}

static ceb_delivery *take_held(testsink *s) {
  pthread_mutex_lock(&s->lock);
  held *h = s->head;
  if (h) {
    s->head = h->next;
    if (!s->head) s->tail = NULL;
    s->nheld--;
  }
  pthread_mutex_unlock(&s->lock);
  ceb_delivery *d = h ? h->d : NULL;
  free(h);
  return d;
}

int testsink_settle_held(testsink *s, ceb_outcome outcome, const char *reason) {
  ceb_delivery *d = take_held(s);
  if (!d) return 0;
  ceb_settle_info info = {.struct_size = sizeof info,
                          .outcome = outcome,
                          .retry_after_ms = -1,
                          .reason = reason};
  s->host->settle(s->inst, d, &info);
  return 1;
}

int testsink_settle_held_twice(testsink *s) {
  ceb_delivery *d = take_held(s);
  if (!d) return 0;
  ceb_settle_info info = {.struct_size = sizeof info,
                          .outcome = CEB_ACK,
                          .retry_after_ms = -1,
                          .reason = "ok"};
  s->host->settle(s->inst, d, &info);
  s->host->settle(s->inst, d, &info); /* the bug under test */
  return 1;
}

size_t testsink_held(testsink *s) {
  pthread_mutex_lock(&s->lock);
  size_t n = s->nheld;
  pthread_mutex_unlock(&s->lock);
  return n;
}

size_t testsink_count(testsink *s) {
  pthread_mutex_lock(&s->lock);
  size_t n = s->nseen;
  pthread_mutex_unlock(&s->lock);
  return n;
}

int testsink_get(testsink *s, size_t i, testsink_seen *out) {
  pthread_mutex_lock(&s->lock);
  int ok = i < s->nseen;
  if (ok) *out = s->seen[i];
  pthread_mutex_unlock(&s->lock);
  return ok;
}

size_t testsink_count_id(testsink *s, const char *id) {
  pthread_mutex_lock(&s->lock);
  size_t n = 0;
  for (size_t i = 0; i < s->nseen; i++)
    n += strcmp(s->seen[i].id, id) == 0;
  pthread_mutex_unlock(&s->lock);
  return n;
}
