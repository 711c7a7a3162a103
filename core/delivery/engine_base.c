/* The engine's leaf helpers: clock, wake-ups, contexts, idempotency keys,
 * metrics. Calls no other engine_*.c file (engine_internal.h: the
 * layers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include <ceb/ceb.h>

#include "delivery/engine_internal.h"

int64_t cebe_now(ceb_engine *e) {
  if (e->clock) return e->clock(e->clock_arg);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cebe_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cebe_kick_locked(ceb_engine *e) {
  e->gen++;
  pthread_cond_broadcast(&e->cond);
}

void ceb_engine_kick(ceb_engine *e) {
  pthread_mutex_lock(&e->lock);
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
}

void cebe_dctx_free(dctx *c) {
  if (!c) return;
  ceb_event_unref(c->ev);
  free(c->json);
  free(c->order_key);
  cebe_mapped_free(c->mapped);
  free(c);
}

/* Stable across retries and restarts: receivers dedupe on it. Shaped as a
 * UUID version 4 (the Edukoppeling profile asks for one in Idempotency-Key):
 * 122 bits of sha256(source, id, route[, replays]) with the version and
 * variant bits set, so the same (event, route) always gets the same key
 * until a DLQ replay: each replay is a new operation for the receiver (the
 * annex's "new key once the old one's life is over"; the old key's stored
 * 4xx would otherwise answer it), so it gets a key of its own. replays 0
 * hashes exactly as before replays were counted. A copy made by a replay
 * by time range (copy_seq: its journal seq, unique and never reused) is
 * a new operation too, each copy its own: the seq is hashed after the
 * generation; copy_seq 0 (an event as received) hashes as before. */
void cebe_idem_key(const ceb_event *ev, const char *route, uint32_t replays,
                   int64_t copy_seq, char out[65]) {
  const char *src = ceb_event_get(ev, "source"), *id = ceb_event_get(ev, "id");
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  char gen[16], copy[32];
  snprintf(gen, sizeof gen, "%u", (unsigned)replays);
  snprintf(copy, sizeof copy, "copy %lld", (long long)copy_seq);
  unsigned char h[EVP_MAX_MD_SIZE];
  unsigned int hl = 0;
  out[0] = '\0';
  if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
      EVP_DigestUpdate(md, src ? src : "", strlen(src ? src : "") + 1) &&
      EVP_DigestUpdate(md, id ? id : "", strlen(id ? id : "") + 1) &&
      EVP_DigestUpdate(md, route, strlen(route)) &&
      (replays == 0 || (EVP_DigestUpdate(md, "", 1) &&
                        EVP_DigestUpdate(md, gen, strlen(gen)))) &&
      (copy_seq == 0 || (EVP_DigestUpdate(md, "", 1) &&
                         EVP_DigestUpdate(md, copy, strlen(copy)))) &&
      EVP_DigestFinal_ex(md, h, &hl)) {
    h[6] = (unsigned char)((h[6] & 0x0f) | 0x40); /* version 4 */
    h[8] = (unsigned char)((h[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    size_t o = 0;
    for (unsigned i = 0; i < 16 && i < hl; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
      snprintf(out + o, 3, "%02x", h[i]);
      o += 2;
    }
  }
  EVP_MD_CTX_free(md);
}

void cebe_metric_add(ceb_engine *e, const char *name, const char *labels,
                     double v) {
  if (e->metrics) ceb_metrics_add(e->metrics, name, labels, v);
}

void cebe_update_gauges_locked(ceb_engine *e, int force) {
  if (!e->metrics) return;
  int64_t now = cebe_now(e);
  if (!force && now - e->last_gauges < 1000 && now >= e->last_gauges) return;
  e->last_gauges = now;
  for (size_t i = 0; i < e->nroutes; i++) {
    ceb_metrics_set(e->metrics, "cebridge_queue_depth", e->routes[i].labels,
                    (double)e->routes[i].open);
    ceb_metrics_set(e->metrics, "cebridge_deliveries_inflight",
                    e->routes[i].labels, (double)e->routes[i].inflight);
  }
  for (size_t i = 0; i < e->nsinks; i++) {
    if (e->sinks[i].cfg.inst && e->sinks[i].cfg.inst->role != CEB_ROLE_SINK)
      continue;
    char labels[160];
    snprintf(labels, sizeof labels, "sink=\"%s\"", e->sinks[i].cfg.name);
    ceb_metrics_set(e->metrics, "cebridge_circuit_state", labels,
                    (double)e->sinks[i].circuit.state);
  }
}
