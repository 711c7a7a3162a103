/* ceb_host.submit_mapped_batch (ABI 1.3): a source's ingress mapping for
 * several messages at once. Why: submit_mapped per message costs a worker
 * round trip and a journal op per message, and a Kafka source loses its
 * batched submit (bench/kafka/README.md: -48 % with a mapping). Here the
 * documents go to the mapping pool as one batch (one round trip: the pool
 * runs them in order on one worker, each with its own time limit, and a
 * worker that dies mid-batch fails that document only), and the events of
 * every document that mapped cleanly go to cebr_submit as one unit, in
 * document order.
 *
 * Per-document outcomes: a document the program refuses is CEB_EMAPPING; a
 * document one of whose events submit refuses for its content
 * (CEB_EVALIDATION / CEB_ETOOLARGE, with failed_index) is taken out and
 * the rest submitted again (validation runs before anything is journaled,
 * so nothing is half-accepted). Any other refusal is the whole batch's. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"

/* Every document's status set to rc (a batch-wide refusal). */
static int refuse_all(ceb_mapped_doc *docs, size_t n, int rc, const char *why) {
  for (size_t i = 0; i < n; i++) {
    docs[i].status = rc;
    docs[i].nevents = 0;
    snprintf(docs[i].reason, sizeof docs[i].reason, "%s", why);
  }
  return rc;
}

/* The reason of a content refusal: the first error (the violations may
 * start with profile warnings), as the kafka source's dead letters say. */
static void refusal_reason(int rc, const ceb_violations *v, char *out,
                           size_t cap) {
  snprintf(out, cap, "refused: %s", ceb_strerror(rc));
  for (size_t i = 0; i < v->count && i < CEB_MAX_VIOLATIONS; i++)
    if (v->items[i].severity == CEB_SEV_ERROR) {
      snprintf(out, cap, "refused: %s: %s", v->items[i].code,
               v->items[i].message);
      break;
    }
}

/* Maps every document; per document its events into evs (owned), its
 * event count into docs[i].nevents, or its status CEB_EMAPPING. CEB_OK,
 * or CEB_EIO (no worker) / CEB_ENOMEM for the whole batch. */
static int map_all(ceb_runtime *rt, ceb_instance *inst, int prog,
                   ceb_mapped_doc *docs, size_t n, ceb_event ***evs) {
  ceb_map_req *reqs = calloc(n, sizeof *reqs);
  if (!reqs) return CEB_ENOMEM;
  for (size_t i = 0; i < n; i++)
    reqs[i] = (ceb_map_req){.program = (uint32_t)prog,
                            .flags = CEB_MAP_EXPAND,
                            .input = docs[i].doc,
                            .input_len = docs[i].len};
  int rc = ceb_mapper_run(rt->mapper, reqs, n);
  for (size_t i = 0; rc == CEB_OK && i < n; i++)
    if (reqs[i].status == CEB_EIO) {
      /* no worker: not the messages' fault, try again later */
      ceb_log_write(CEB_LOG_ERROR, inst->component, NULL, "mapping: %s",
                    reqs[i].reason);
      rc = CEB_EIO;
    }
  for (size_t i = 0; rc == CEB_OK && i < n; i++) {
    ceb_mapped_doc *d = &docs[i];
    d->status = CEB_OK;
    d->nevents = 0;
    d->reason[0] = '\0';
    if (reqs[i].status != CEB_OK) {
      d->status = cebr_mapping_error(rt, inst, d->reason, sizeof d->reason,
                                     "%s", reqs[i].reason);
      continue;
    }
    if (reqs[i].nout == 0) {
      d->status = cebr_mapping_error(rt, inst, d->reason, sizeof d->reason,
                                     "the program output no event (an empty "
                                     "array, or empty)");
      continue;
    }
    evs[i] = calloc(reqs[i].nout, sizeof *evs[i]);
    if (!evs[i]) {
      rc = CEB_ENOMEM;
      break;
    }
    if (cebr_map_decode(rt, inst, &reqs[i], evs[i], d->reason,
                        sizeof d->reason) != CEB_OK) {
      for (size_t k = 0; k < reqs[i].nout; k++)
        ceb_event_unref(evs[i][k]);
      free(evs[i]);
      evs[i] = NULL;
      d->status = CEB_EMAPPING;
      continue;
    }
    d->nevents = reqs[i].nout;
  }
  for (size_t i = 0; i < n; i++)
    ceb_map_req_clear(&reqs[i]);
  free(reqs);
  return rc;
}

/* Submits the events of the documents still CEB_OK as one unit, taking out
 * (and marking) a document at a time that submit refuses for its content.
 * Returns CEB_OK (cb is owed when a document is still CEB_OK), or a
 * batch-wide refusal. */
static int submit_ok(ceb_instance *inst, ceb_mapped_doc *docs, size_t n,
                     ceb_event ***evs, const ceb_submit_opts *opts,
                     ceb_submit_cb cb, void *cb_arg) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    if (docs[i].status == CEB_OK) total += docs[i].nevents;
  ceb_event **all = malloc((total ? total : 1) * sizeof *all);
  size_t *owner = malloc((total ? total : 1) * sizeof *owner);
  if (!all || !owner) {
    free(all);
    free(owner);
    return CEB_ENOMEM;
  }
  int rc = CEB_OK;
  unsigned flags = 0;
  for (;;) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      for (size_t e = 0; docs[i].status == CEB_OK && e < docs[i].nevents; e++) {
        all[k] = evs[i][e];
        owner[k++] = i;
      }
    if (k == 0) break; /* every document refused: nothing to take */
    ceb_violations v;
    size_t failed = SIZE_MAX;
    ceb_submit_opts o = *opts;
    o.violations = &v;
    o.failed_index = &failed;
    v.count = 0;
    rc = cebr_submit_ex(inst, all, k, &o, cb, cb_arg, flags);
    flags = CEBR_SUBMIT_AGAIN;
    if (rc == CEB_OK) {
      /* the host holds the references now */
      for (size_t j = 0; j < k; j++)
        all[j] = NULL;
      for (size_t i = 0; i < n; i++)
        if (docs[i].status == CEB_OK)
          memset(evs[i], 0, docs[i].nevents * sizeof *evs[i]);
      break;
    }
    if (rc != CEB_EVALIDATION && rc != CEB_ETOOLARGE) break;
    if (failed >= k) { /* no index to isolate it by: all of them */
      for (size_t i = 0; i < n; i++)
        if (docs[i].status == CEB_OK) {
          docs[i].status = rc;
          refusal_reason(rc, &v, docs[i].reason, sizeof docs[i].reason);
        }
      rc = CEB_OK;
      break;
    }
    ceb_mapped_doc *d = &docs[owner[failed]];
    d->status = rc;
    refusal_reason(rc, &v, d->reason, sizeof d->reason);
    rc = CEB_OK;
  }
  free(all);
  free(owner);
  return rc;
}

int cebr_submit_mapped_batch(ceb_instance *inst, ceb_mapped_doc *docs, size_t n,
                             const ceb_submit_opts *opts, ceb_submit_cb cb,
                             void *cb_arg) {
  ceb_runtime *rt = cebr_of(inst);
  if (!docs || n == 0) return CEB_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (docs[i].struct_size < sizeof(ceb_mapped_doc) ||
        (!docs[i].doc && docs[i].len))
      return CEB_EINVAL; /* not ours to write into */
  if (!rt || !cb || inst->role != CEB_ROLE_SOURCE)
    return refuse_all(docs, n, CEB_EINVAL,
                      "submit_mapped_batch: bad arguments");
  rt_inst *d = inst->runtime_data;
  if (!d || d->map_prog < 0 || !rt->mapper)
    return refuse_all(docs, n, CEB_EINVAL,
                      "submit_mapped_batch: the source has no map");
  /* the cheap refusals first: no program runs for messages that cannot be
   * taken anyway */
  if (!ceb_runtime_ready(rt)) {
    int rc = atomic_load(&rt->draining) || !rt->started ? CEB_ESHUTDOWN
             : !ceb_store_writable(rt->store, NULL, 0)  ? CEB_EIO
                                                        : CEB_EBUSY;
    return refuse_all(docs, n, rc, "not accepting now");
  }
  /* the caller's members as far as its struct_size reaches */
  ceb_submit_opts o = {.struct_size = sizeof o};
  if (opts && opts->struct_size >= offsetof(ceb_submit_opts, key_limited))
    memcpy(&o, opts,
           opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
  o.struct_size = sizeof o;
  ceb_event ***evs = calloc(n, sizeof *evs);
  if (!evs) return refuse_all(docs, n, CEB_ENOMEM, "out of memory");
  int rc = map_all(rt, inst, d->map_prog, docs, n, evs);
  if (rc == CEB_OK) rc = submit_ok(inst, docs, n, evs, &o, cb, cb_arg);
  for (size_t i = 0; i < n; i++) {
    for (size_t e = 0; evs[i] && e < docs[i].nevents; e++)
      ceb_event_unref(evs[i][e]); /* NULL once taken */
    free(evs[i]);
  }
  free(evs);
  if (rc != CEB_OK) return refuse_all(docs, n, rc, ceb_strerror(rc));
  for (size_t i = 0; i < n; i++)
    if (docs[i].status != CEB_OK) docs[i].nevents = 0;
  return CEB_OK;
}
