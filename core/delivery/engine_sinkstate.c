/* The sinks' life cycle (the meemoo webhook guide: an endpoint that answers
 * 410 Gone, or that fails for 72 hours without a single success, is
 * disabled until its owner fixes it). A disabled sink is sent nothing: its
 * deliveries stay in the store, in order, and are not dead-lettered for it;
 * an operator enables it (`cebridge sink enable`, POST
 * /v1/sinks/{name}/enable) and they flow again. The state lives in the
 * store (ceb_store_sink_state_*), so it survives restarts and every bridge
 * on a shared store follows it: worker 0 writes what changed here and
 * rereads the store every poll_ms. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

static void gauge_locked(ceb_engine *e, eng_sink *s) {
  if (!e->metrics) return;
  char labels[160];
  snprintf(labels, sizeof labels, "sink=\"%s\"", s->cfg.name);
  ceb_metrics_set(e->metrics, "cebridge_sink_disabled", labels,
                  s->st.disabled ? 1 : 0);
}

void cebe_sink_load(ceb_engine *e) {
  for (size_t i = 0; i < e->nsinks; i++) {
    eng_sink *s = &e->sinks[i];
    ceb_sink_state st;
    int rc = ceb_store_sink_state_get(e->store, s->cfg.name, &st);
    pthread_mutex_lock(&e->lock);
    if (rc == CEB_OK) s->st = st;
    gauge_locked(e, s);
    pthread_mutex_unlock(&e->lock);
    if (rc == CEB_OK && st.disabled)
      ceb_log_error("ALERT engine: sink %s is disabled (%s); its deliveries "
                    "wait: `cebridge sink enable %s` once it is fixed",
                    s->cfg.name, st.reason, s->cfg.name);
  }
}

static void iso(int64_t ms, char out[32]) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void disable_locked(ceb_engine *e, eng_sink *s, int64_t now,
                           const char *kind, const char *reason) {
  s->st.disabled = 1;
  s->st.disabled_at = now;
  snprintf(s->st.reason, sizeof s->st.reason, "%s", reason);
  s->st_gen++;
  gauge_locked(e, s);
  char labels[200];
  snprintf(labels, sizeof labels, "sink=\"%s\",reason=\"%s\"", s->cfg.name,
           kind);
  cebe_metric_add(e, "cebridge_sink_disablements_total", labels, 1);
  ceb_log_error("ALERT engine: sink %s disabled: %s; nothing more is sent to "
                "it and its deliveries wait (not dead-lettered): `cebridge "
                "sink enable %s` once it is fixed",
                s->cfg.name, reason, s->cfg.name);
}

int cebe_sink_result_locked(ceb_engine *e, eng_sink *s, int kind,
                            const char *why, int64_t now) {
  if (kind == CEBE_SINK_OK) {
    if (s->st.failing_since) {
      s->st.failing_since = 0;
      s->st_gen++;
    }
    return s->st.disabled;
  }
  if (!s->st.failing_since) {
    s->st.failing_since = now;
    s->st_gen++;
  }
  if (s->st.disabled) return 1;
  char reason[CEB_SINK_REASON_MAX];
  if (kind == CEBE_SINK_GONE) {
    snprintf(reason, sizeof reason, "the endpoint is gone (%s)",
             why && *why ? why : "410");
    disable_locked(e, s, now, "gone", reason);
    return 1;
  }
  if (s->cfg.disable_after_ms > 0 &&
      now - s->st.failing_since >= s->cfg.disable_after_ms) {
    char since[32];
    iso(s->st.failing_since, since);
    snprintf(reason, sizeof reason,
             "failing since %s without a single success (disable_after "
             "%lld s; last: %s)",
             since, (long long)(s->cfg.disable_after_ms / 1000),
             why && *why ? why : "failure");
    disable_locked(e, s, now, "failing", reason);
    return 1;
  }
  return 0;
}

int cebe_sink_dirty_locked(ceb_engine *e) {
  for (size_t i = 0; i < e->nsinks; i++)
    if (e->sinks[i].st_gen != e->sinks[i].st_written) return 1;
  return 0;
}

void cebe_sink_sync(ceb_engine *e) {
  int enabled = 0;
  for (size_t i = 0; i < e->nsinks; i++) {
    eng_sink *s = &e->sinks[i];
    pthread_mutex_lock(&e->lock);
    uint64_t gen = s->st_gen;
    int dirty = gen != s->st_written;
    ceb_sink_state st = s->st;
    pthread_mutex_unlock(&e->lock);
    if (dirty) {
      int rc = ceb_store_sink_state_put(e->store, s->cfg.name, &st);
      if (rc == CEB_EUNSUPPORTED) {
        /* a store engine without the op: the state lives in memory only
         * (lost at a restart); said once per change, not retried */
        ceb_log_warn("engine: the store keeps no sink state; sink %s's "
                     "life cycle is not kept across restarts",
                     s->cfg.name);
        rc = CEB_OK;
      }
      if (rc != CEB_OK) {
        ceb_log_error("engine: storing sink %s's state failed (%s); retried",
                      s->cfg.name, ceb_strerror(rc));
        continue;
      }
      pthread_mutex_lock(&e->lock);
      if (s->st_written < gen) s->st_written = gen;
      pthread_mutex_unlock(&e->lock);
      continue;
    }
    /* nothing of ours to write: take the store's (an operator enabled it,
     * another bridge disabled it), unless it changed here meanwhile */
    ceb_sink_state stored;
    int rc = ceb_store_sink_state_get(e->store, s->cfg.name, &stored);
    if (rc == CEB_ENOTFOUND)
      memset(&stored, 0, sizeof stored);
    else if (rc != CEB_OK)
      continue;
    pthread_mutex_lock(&e->lock);
    if (s->st_gen == gen && s->st_written == gen &&
        (stored.disabled != s->st.disabled ||
         stored.failing_since != s->st.failing_since)) {
      int was = s->st.disabled;
      s->st = stored;
      gauge_locked(e, s);
      if (was && !stored.disabled) {
        enabled = 1;
        /* the failures that disabled it must not hold the first attempts */
        ceb_circuit_success(&s->circuit);
        ceb_log_info("engine: sink %s enabled again; its waiting deliveries "
                     "flow in order",
                     s->cfg.name);
      } else if (!was && stored.disabled) {
        ceb_log_error("ALERT engine: sink %s disabled elsewhere (%s); its "
                      "deliveries wait",
                      s->cfg.name, stored.reason);
      }
    }
    pthread_mutex_unlock(&e->lock);
  }
  if (enabled) ceb_engine_kick(e);
}

int ceb_engine_sink_enable(ceb_engine *e, const char *name) {
  if (!e || !name) return CEB_EINVAL;
  for (size_t i = 0; i < e->nsinks; i++) {
    eng_sink *s = &e->sinks[i];
    if (strcmp(s->cfg.name, name) != 0) continue;
    ceb_sink_state st = {0};
    int rc = ceb_store_sink_state_put(e->store, name, &st);
    if (rc != CEB_OK) return rc;
    pthread_mutex_lock(&e->lock);
    int was = s->st.disabled;
    s->st = st;
    s->st_gen++;
    s->st_written = s->st_gen;
    gauge_locked(e, s);
    /* a half-open circuit from before must not hold the first attempts */
    ceb_circuit_success(&s->circuit);
    cebe_kick_locked(e);
    pthread_mutex_unlock(&e->lock);
    ceb_log_info("engine: sink %s %s by an operator; its waiting deliveries "
                 "flow in order",
                 name, was ? "enabled" : "(not disabled) confirmed enabled");
    return CEB_OK;
  }
  return CEB_ENOTFOUND;
}

json_t *ceb_engine_sinks_json(ceb_engine *e) {
  json_t *arr = json_array();
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < e->nsinks; i++) {
    eng_sink *s = &e->sinks[i];
    json_array_append_new(
        arr, json_pack("{ss sb ss sI sI sI}", "sink", s->cfg.name, "disabled",
                       s->st.disabled, "reason", s->st.reason, "disabled_at",
                       (json_int_t)s->st.disabled_at, "failing_since",
                       (json_int_t)s->st.failing_since, "disable_after_ms",
                       (json_int_t)s->cfg.disable_after_ms));
  }
  pthread_mutex_unlock(&e->lock);
  return arr;
}
