/* A fake host for plugin tests: a complete ceb_host table whose behaviour
 * the test controls and whose calls the test inspects. It lets a plugin be
 * tested alone, with its real dependencies (sockets, brokers) but without
 * the runtime.
 *
 * Thread-safety: every ceb_host function of the fake is thread-safe (plugins
 * call them from their own threads); the fake_* inspection functions are too.
 * Ownership: the fake keeps a reference to every submitted event until
 * ceb_fake_host_free. */
#ifndef CEB_FAKE_HOST_H
#define CEB_FAKE_HOST_H

#include <pthread.h>

#include <ceb/ceb.h>

#include "instance/ceb_instance.h"
#include "metrics/ceb_metrics.h"

typedef enum ceb_fake_submit_mode {
  CEB_FAKE_COMMIT_NOW = 0, /* cb runs from a fake committer thread at once */
  CEB_FAKE_COMMIT_HOLD = 1,/* cb runs when the test calls ceb_fake_commit */
  CEB_FAKE_REFUSE = 2      /* submit returns `refuse_status` */
} ceb_fake_submit_mode;

typedef struct ceb_fake_settle {
  char event_id[128];
  char route[64];
  uint32_t attempt;
  ceb_settle_info info; /* reason/detail point into the strings below */
  char reason[64];
  char detail[256];
} ceb_fake_settle;

/* The fake's stand-in for a source's jq program (submit_mapped, ABI 1.2):
 * makes at most max events of the input document doc (into out[], *n of
 * them, references the fake takes) and returns CEB_OK, or refuses with a
 * status (CEB_EMAPPING: the program failed) and a one-line err. Called on
 * the plugin's thread. ceb_fake_map.h has one. */
typedef int (*ceb_fake_map_fn)(void *arg, const char *doc, size_t len,
                               ceb_event **out, size_t max, size_t *n,
                               char *err, size_t errlen);

typedef struct ceb_fake_host {
  ceb_host host;             /* hand &fake->host to the plugin's init */
  struct ceb_instance inst;  /* hand &fake->inst as the instance */
  ceb_metrics *metrics;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  ceb_fake_submit_mode mode;
  int refuse_status;
  int accepting;
  int64_t clock_ms;          /* 0: wall clock */
  /* submitted events in order (each holds a reference) */
  ceb_event **events;
  char **clients;            /* client per event (may be NULL) */
  char **traces;             /* traceparent per event (may be NULL) */
  size_t nevents, capevents;
  size_t nsubmits;           /* submit calls that returned CEB_OK */
  size_t ncommitted;         /* callbacks run */
  /* held submissions (CEB_FAKE_COMMIT_HOLD) */
  struct ceb_fake_pending *pending;
  /* settles */
  ceb_fake_settle *settles;
  size_t nsettles, capsettles;
  /* idempotency records and contracts kept in memory */
  struct ceb_fake_idem *idem;
  struct ceb_fake_contract *contracts;
  /* submit_mapped: the map function and every input document given */
  ceb_fake_map_fn map_fn;
  void *map_arg;
  char **docs;
  size_t ndocs, capdocs;
  size_t nmapped_batches; /* submit_mapped_batch calls (ABI 1.3) */
  size_t nmapped_async;   /* submit_mapped_async calls (ABI 1.4) */
  pthread_t committer;
  int stop;
  struct ceb_fake_pending *queue_head, *queue_tail;
  /* ceb_fake_host_queue: the host's queue services on a real store */
  struct ceb_store *store;
  uint64_t queue_gen; /* appends made durable (under lock) */
  int queue_stop;     /* queue_wake was called (under lock) */
} ceb_fake_host;

/* Creates a fake host for an instance named `name` with role `role`. */
ceb_fake_host *ceb_fake_host_new(const char *name, uint32_t role);
void ceb_fake_host_free(ceb_fake_host *f);

/* Gives the fake the host's queue services (ceb_host.queue_*, lead: ABI
 * 1.2) on a real store at store_path (created when missing; a second fake
 * on the same path sees the same queues, as a restarted bridge does). The
 * store is closed by ceb_fake_host_free. CEB_OK or < 0. Without it those
 * members are NULL, as in a 1.1 host. */
int ceb_fake_host_queue(ceb_fake_host *f, const char *store_path);

/* Runs every held submission's callback with `status` (CEB_OK = durable). */
void ceb_fake_commit(ceb_fake_host *f, int status);

/* Sets the map function submit_mapped runs (NULL: submit_mapped refuses
 * with CEB_EINVAL, as a host does for a section without `map`). */
void ceb_fake_set_map(ceb_fake_host *f, ceb_fake_map_fn fn, void *arg);
/* Gives the fake host->submit_mapped_batch (ABI 1.3; NULL otherwise, as in
 * a 1.2 host): documents mapped one by one with the map function, the
 * events of the ones it mapped submitted as one unit. Call before the
 * plugin's init. ceb_fake_mapped_batches counts its calls. */
void ceb_fake_host_batch_mapping(ceb_fake_host *f);
size_t ceb_fake_mapped_batches(ceb_fake_host *f);
/* Gives the fake host->submit_mapped_async (ABI 1.4; NULL otherwise, as in
 * a 1.3 host): each document mapped as submit_mapped maps it, a refusal
 * given to the callback (before the call returns) with its reason. May be
 * called while the plugin runs. ceb_fake_mapped_async counts its calls. */
void ceb_fake_host_async_mapping(ceb_fake_host *f);
size_t ceb_fake_mapped_async(ceb_fake_host *f);
/* Input documents handed to submit_mapped, and a malloc'd copy of the
 * i-th (NULL when absent). */
size_t ceb_fake_doc_count(ceb_fake_host *f);
char *ceb_fake_doc(ceb_fake_host *f, size_t i);

/* Snapshot counters (locked reads). */
size_t ceb_fake_event_count(ceb_fake_host *f);
size_t ceb_fake_committed_count(ceb_fake_host *f);
size_t ceb_fake_settle_count(ceb_fake_host *f);
/* A new reference to the i-th submitted event (unref it), or NULL. */
ceb_event *ceb_fake_event(ceb_fake_host *f, size_t i);
/* Client of the i-th submitted event (copy into buf), "" when none. */
void ceb_fake_event_client(ceb_fake_host *f, size_t i, char *buf, size_t n);
/* traceparent the i-th event was submitted with, "" when none. */
void ceb_fake_event_trace(ceb_fake_host *f, size_t i, char *buf, size_t n);
/* Copy of the i-th settle; 0 when absent. */
int ceb_fake_settle_get(ceb_fake_host *f, size_t i, ceb_fake_settle *out);

/* Waits until at least n events were submitted / n settles happened. */
int ceb_fake_wait_events(ceb_fake_host *f, size_t n, int64_t timeout_ms);
int ceb_fake_wait_settles(ceb_fake_host *f, size_t n, int64_t timeout_ms);

/* A ceb_delivery for event ev (borrowed ref taken) on route, to pass to a
 * sink's deliver; free with ceb_fake_delivery_free after it settled. */
ceb_delivery *ceb_fake_delivery_new(ceb_fake_host *f, ceb_event *ev,
                                    const char *route, const char *topic,
                                    uint32_t attempt);
void ceb_fake_delivery_free(ceb_delivery *d);

#endif
