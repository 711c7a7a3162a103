/* Running half of the bridge: start, drain, free, in the order that keeps
 * the guarantees (sinks ready before sources accept; sources stop before the
 * runtime drains; nothing destroyed while a callback may still come). */
#include "bridge/ceb_bridge_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admin/ceb_admin.h"
#include "contracts/ceb_contracts.h"
#include "log/ceb_log.h"
#include "runtime/ceb_runtime.h"

static int mkdir_p(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0750) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0750) != 0 && errno != EEXIST ? -1 : 0;
}

/* <state_dir>/data/<kind>-<name>: a place each instance may keep
 * files in (e.g. a broker client's persistence). */
static void instance_data_dir(ceb_bridge *b, const ceb_instance *inst,
                              char *buf, size_t size) {
  char dir[PATH_MAX / 2];
  ceb_bridge_state_dir(ceb_conf_bridge_cfg(b->conf), dir, sizeof dir);
  const char *kind = inst->role == CEB_ROLE_SOURCE ? "source"
                     : inst->role == CEB_ROLE_SINK ? "sink"
                                                   : "contracts";
  if (snprintf(buf, size, "%s/data/%s-%s", dir, kind, inst->name) >= (int)size)
    buf[0] = '\0'; /* too long: mkdir_p("") fails with a clear error */
}

static int init_role(ceb_bridge *b, uint32_t role, char *err, size_t errlen) {
  for (size_t i = 0; i < b->ninstances; i++) {
    ceb_instance *inst = b->instances[i];
    if (inst->role != role) continue;
    char data_dir[PATH_MAX];
    instance_data_dir(b, inst, data_dir, sizeof data_dir);
    if (mkdir_p(data_dir) != 0) {
      snprintf(err, errlen, "[%s] cannot create data directory %s: %s",
               inst->component, data_dir, strerror(errno));
      return CEB_EIO;
    }
    cebb_init_error e;
    int st = cebb_init_instance(b, inst, data_dir, 0, &e);
    if (st != CEB_OK) {
      /* the same text `check` prints for this config */
      snprintf(err, errlen, "%s:%d: %s", e.file, e.line, e.message);
      return st;
    }
  }
  return CEB_OK;
}

static int start_role(ceb_bridge *b, uint32_t role, char *err, size_t errlen) {
  for (size_t i = 0; i < b->ninstances; i++) {
    ceb_instance *inst = b->instances[i];
    if (inst->role != role) continue;
    int st = inst->plugin->start(inst->state);
    if (st != CEB_OK) {
      snprintf(err, errlen, "[%s] start failed: %s (see the log above)",
               inst->component, ceb_strerror(st));
      return st;
    }
    inst->started = 1;
  }
  return CEB_OK;
}

static int drain_role(ceb_bridge *b, uint32_t role, int64_t deadline_ms) {
  int rc = CEB_OK;
  for (size_t i = 0; i < b->ninstances; i++) {
    ceb_instance *inst = b->instances[i];
    if (inst->role != role || !inst->started) continue;
    int st = inst->plugin->drain(inst->state, deadline_ms);
    if (st != CEB_OK) {
      ceb_log_write(CEB_LOG_WARN, inst->component, NULL,
                    "drain ended with %s: unsettled work stays pending",
                    ceb_strerror(st));
      rc = st;
    }
    inst->started = 0;
  }
  return rc;
}

static int64_t view_now_ms(void *b) {
  return ceb_bridge_now_ms(b);
}

/* The admin API's narrow view of b: valid while the admin API runs (it
 * starts after, and stops before, what it points to). */
static int start_admin(ceb_bridge *b, char *err, size_t errlen) {
  ceb_admin_view v = {.conf = b->conf,
                      .metrics = b->metrics,
                      .rt = b->rt,
                      .now_ms = view_now_ms,
                      .clock_arg = b};
  return ceb_admin_start(&v, &b->admin, err, errlen);
}

int ceb_bridge_start(ceb_bridge *b, char *err, size_t errlen) {
  ceb_bridge_stop(b); /* what a failed start or a waiting one left */
  b->metrics = ceb_metrics_new();
  if (!b->metrics) {
    snprintf(err, errlen, "out of memory");
    return CEB_ENOMEM;
  }
  ceb_runtime_opts ro = {
      .conf = b->conf,
      .instances = b->instances,
      .ninstances = b->ninstances,
      .metrics = b->metrics,
      .clock = b->clock,
      .clock_arg = b->clock_arg,
      .dry_run = b->dry_run,
  };
  int st = ceb_runtime_open(&ro, &b->rt, err, errlen);
  b->store_unavailable = st == CEB_EIO; /* runtime open: only the store */
  if (st != CEB_OK) return st;
  /* Pins resolve once, against the register as it is now: a version
   * synced later is not applied until the operator changes the pin. */
  st = ceb_contracts_open(b->conf, ceb_runtime_store(b->rt), &b->contracts, err,
                          errlen);
  if (st != CEB_OK) return st;
  ceb_runtime_set_contract_check(b->rt, ceb_contracts_check, b->contracts);
  /* Sinks first so that deliveries resumed from the store find them ready;
   * sources last so nothing is accepted before the bridge can route it. */
  static const uint32_t order[] = {CEB_ROLE_SINK, CEB_ROLE_CONTRACTS,
                                   CEB_ROLE_SOURCE};
  for (size_t r = 0; r < 3; r++)
    if ((st = init_role(b, order[r], err, errlen)) != CEB_OK) return st;
  /* Sinks (and contract fetchers) start before the runtime: its engine
   * resumes the stored deliveries at once, and no delivery may reach a sink
   * before its start (the ABI's order). Started after, on a loaded machine
   * the engine handed resumed deliveries to an MQTT sink that had no
   * publisher yet: each failed, the circuit opened, and they waited.
   * Sources start last. */
  for (size_t r = 0; r < 2; r++)
    if ((st = start_role(b, order[r], err, errlen)) != CEB_OK) return st;
  if ((st = ceb_runtime_start(b->rt)) != CEB_OK) {
    /* its first writes (recovery of a crashed run) on a full disk */
    b->store_unavailable = st == CEB_EIO;
    snprintf(err, errlen, "runtime start failed: %s", ceb_strerror(st));
    return st;
  }
  if ((st = start_role(b, order[2], err, errlen)) != CEB_OK) return st;
  if ((st = start_admin(b, err, errlen)) != CEB_OK) return st;
  b->started = 1;
  ceb_log_info("bridge started: %zu instances, plugins from %s", b->ninstances,
               b->plugin_dir);
  return CEB_OK;
}

int ceb_bridge_drain(ceb_bridge *b, int64_t deadline_ms) {
  int rc = CEB_OK, st;
  if (b->admin) ceb_admin_set_ready(b->admin, 0);
  /* Sources first: they answer 503 / pause from now on, and settle what
   * they submitted (the runtime still commits). */
  if ((st = drain_role(b, CEB_ROLE_SOURCE, deadline_ms)) != CEB_OK) rc = st;
  if (b->rt && (st = ceb_runtime_drain(b->rt, deadline_ms)) != CEB_OK) rc = st;
  if ((st = drain_role(b, CEB_ROLE_CONTRACTS, deadline_ms)) != CEB_OK) rc = st;
  if ((st = drain_role(b, CEB_ROLE_SINK, deadline_ms)) != CEB_OK) rc = st;
  return rc;
}

int ceb_bridge_start_waiting(ceb_bridge *b, char *err, size_t errlen) {
  ceb_bridge_stop(b);
  b->metrics = ceb_metrics_new();
  if (!b->metrics) {
    snprintf(err, errlen, "out of memory");
    return CEB_ENOMEM;
  }
  /* no runtime: /readyz answers 503, /v1 "the store is not open" */
  return start_admin(b, err, errlen);
}

int ceb_bridge_store_unavailable(const ceb_bridge *b) {
  return b->store_unavailable;
}

void ceb_bridge_stop(ceb_bridge *b) {
  if (!b) return;
  ceb_admin_stop(b->admin);
  b->admin = NULL;
  /* No delivery after this: a failed start comes here undrained, with
   * the engine running, and a sink must not be destroyed under it. */
  ceb_runtime_halt(b->rt);
  /* Sources, then contracts, then sinks: a source's last callbacks may
   * still reach the runtime (which only commits them now). */
  static const uint32_t order[] = {CEB_ROLE_SOURCE, CEB_ROLE_CONTRACTS,
                                   CEB_ROLE_SINK};
  for (size_t r = 0; r < 3; r++)
    for (size_t i = 0; i < b->ninstances; i++) {
      ceb_instance *inst = b->instances[i];
      if (inst->role == order[r] && inst->initialised) {
        inst->plugin->destroy(inst->state);
        inst->initialised = 0;
        inst->state = NULL;
      }
    }
  if (b->rt) ceb_runtime_close(b->rt);
  b->rt = NULL;
  ceb_contracts_free(b->contracts); /* the hook's last caller is gone */
  b->contracts = NULL;
  for (size_t i = 0; i < b->ninstances; i++)
    b->instances[i]->started = 0;
  ceb_metrics_free(b->metrics);
  b->metrics = NULL;
  b->started = 0;
}

void ceb_bridge_free(ceb_bridge *b) {
  if (!b) return;
  ceb_bridge_stop(b);
  for (size_t i = 0; i < b->ninstances; i++) {
    free(b->instances[i]->name);
    pthread_mutex_destroy(&b->instances[i]->capture_lock);
    free(b->instances[i]);
  }
  free(b->instances);
  ceb_loader_free(b->loader);
  ceb_conf_free(b->conf);
  free(b);
}
