/* Mappings: jq programs (libjq 1.6) run in supervised worker processes.
 *
 * The host compiles every program of a configuration once at load
 * (ceb_mapper_check: a throwaway worker, so that `cebridge check` and
 * `run` refuse the same programs) and runs them through a pool
 * (ceb_mapper_new): `workers` processes of the executable cebridge-mapper
 * (core/mapping/mapper_worker.c), each of which compiles a program once,
 * at its first use in that worker, and then serves batches over a socket.
 *
 * Bounds: an item (one program on one input document) that runs longer
 * than timeout_ms gets its worker killed and replaced, and fails with
 * "mapping timed out after N ms"; one that allocates past memory_max
 * (RLIMIT_AS of the worker) fails with "mapping exceeded its memory
 * limit"; one whose worker dies otherwise fails with the signal. Other
 * items of the batch are run by the replacement, unaffected. At run time
 * a program reads no file and no environment (see mapper_worker.c).
 *
 * Thread-safety: ceb_mapper_run may be called from any number of threads
 * at once. Calls queue in order; the one at the head takes a free worker
 * and sends its batch together with the batches queued behind it (up to
 * 256 items), so concurrent single-item callers share a round trip; each
 * item keeps its own deadline. new / free: one thread, no run in progress
 * at free. */
#ifndef CEB_MAPPING_H
#define CEB_MAPPING_H

#include <stddef.h>
#include <stdint.h>

#include "metrics/ceb_metrics.h"

typedef struct ceb_mapper ceb_mapper;

typedef struct ceb_mapper_opts {
  /* The worker executable; NULL: ceb_mapper_default_path(). */
  const char *worker_path;
  int workers;         /* processes, >= 1 */
  int64_t timeout_ms;  /* per item, > 0 */
  uint64_t memory_max; /* bytes of address space per worker; 0: no limit */
  /* Borrowed, may be NULL: cebridge_mapping_runs_total,
   * cebridge_mapping_failures_total{reason}, cebridge_mapping_worker_
   * starts_total (HELP in core/metrics/ceb_metrics_help.c). */
  ceb_metrics *metrics;
} ceb_mapper_opts;

/* Request flags. */
enum {
  CEB_MAP_EXPAND = 1u, /* an output that is an array counts as its elements
                          (ingress: an array is a batch of events) */
  CEB_MAP_TRUTH = 2u   /* one output, "true" or "false": whether the first
                          output is neither false nor null (route filters;
                          no output is false) */
};

/* One item: a program (its index in the programs given to new) on one
 * input document. The caller fills the inputs; ceb_mapper_run the rest. */
typedef struct ceb_map_req {
  uint32_t program;
  uint32_t flags;    /* CEB_MAP_* */
  const char *input; /* a JSON text, borrowed for the call */
  size_t input_len;
  /* out */
  int status;       /* CEB_OK; CEB_EMAPPING (the program failed: reason);
                       CEB_EIO (no worker could be started: reason) */
  char reason[512]; /* one line, when status != CEB_OK */
  char *out;        /* CEB_OK: the outputs as JSON texts, back to back,
                       each NUL-terminated (ceb_map_output); free with
                       ceb_map_req_clear */
  size_t out_len;
  size_t nout; /* how many outputs */
} ceb_map_req;

/* The default worker executable: <dir of this executable>/../lib/cebridge/
 * cebridge-mapper when it exists (the build tree mirrors an install), else
 * the install location. Writes it to buf; returns buf. */
const char *ceb_mapper_default_path(char *buf, size_t cap);

/* Compiles programs[0..n) in one throwaway worker. reasons[i] gets NULL
 * (compiled) or a malloc'd one-line reason from jq (with jq's own "line N"
 * when it gave one; cebm_error_line reads it). Returns CEB_OK when the
 * worker answered for every program (each may still be refused), or
 * CEB_EIO with err filled (the worker could not run). */
int ceb_mapper_check(const ceb_mapper_opts *opts, const char *const *programs,
                     size_t n, char **reasons, char *err, size_t errlen);

/* Starts the pool: workers processes. Check the programs first with
 * ceb_mapper_check: an item of a program that does not compile fails with
 * jq's reason. NULL with err filled on failure. programs are copied. */
ceb_mapper *ceb_mapper_new(const ceb_mapper_opts *opts,
                           const char *const *programs, size_t n, char *err,
                           size_t errlen);

/* Kills the workers and frees the pool. NULL is a no-op. */
void ceb_mapper_free(ceb_mapper *m);

/* Runs n items as one batch on one worker, in order; fills each item's
 * outputs. Returns CEB_OK (look at each item's status) or CEB_EINVAL. */
int ceb_mapper_run(ceb_mapper *m, ceb_map_req *reqs, size_t n);

/* The output after prev (NULL: the first), or NULL after the last. */
const char *ceb_map_output(const ceb_map_req *r, const char *prev);

/* Frees an item's outputs; the item may be reused. */
void ceb_map_req_clear(ceb_map_req *r);

/* Counters since new, for metrics and tests (any thread). */
typedef struct ceb_mapper_stats {
  uint64_t items, failed, timeouts, memory, crashes, spawns;
} ceb_mapper_stats;
void ceb_mapper_stats_get(ceb_mapper *m, ceb_mapper_stats *out);

#endif
