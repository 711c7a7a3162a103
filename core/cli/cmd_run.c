/* cebridge run: start the bridge and serve signals.
 *   SIGTERM / SIGINT: stop accepting, drain in-flight work up to
 *                     [bridge] drain_timeout, exit 0.
 *   SIGHUP:           load and check the config again; a broken config is
 *                     refused with its errors and the running one stays; a
 *                     good one replaces it (drain, then start: queued events
 *                     live in the store and are kept); one that cannot
 *                     start (a port in use) is rolled back: the previous
 *                     configuration starts again.
 * A store that cannot be opened for an I/O reason (a full disk) does not
 * end the process: the bridge waits with the admin API up (/readyz 503)
 * and tries again every 2 s. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bridge/ceb_bridge.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/sd_notify.h"
#include "log/ceb_log.h"

static const char k_run_usage[] =
    "usage: cebridge run [-c DIR] [--plugin-dir DIR] [--dry-run]\n"
    "Runs the bridge on a config directory (default bridge.d).\n"
    "SIGTERM/SIGINT drain and exit 0; SIGHUP reloads the config.\n"
    "--dry-run: every route as with dry_run = true: sources accept, events\n"
    "are validated, filtered, checked and mapped, and each delivery settles\n"
    "done with reason dry-run and what would have been sent (status, log);\n"
    "no sink sends anything.\n";

/* `--dry-run`, taken out of argv before the common options are parsed. */
static int g_dry_run;

static void setup_logging(const ceb_bridge *b) {
  const ceb_bridge_cfg *cfg = ceb_conf_bridge_cfg(ceb_bridge_conf(b));
  int level = ceb_log_level_parse(cfg->log.level);
  int format = ceb_log_format_parse(cfg->log.format);
  ceb_log_configure(level < 0 ? CEB_LOG_INFO : (ceb_log_level)level,
                    format < 0 ? CEB_LOGFMT_JSON : (ceb_log_format)format,
                    NULL);
}

static int load(const ceb_cli_common *c, ceb_bridge **out) {
  ceb_bridge_opts o = {.config_dir = c->config_dir,
                       .plugin_dir = c->plugin_dir,
                       .dry_run = g_dry_run};
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  int st = ceb_bridge_load(&o, out, &errs);
  if (st == CEB_OK) return CEB_OK;
  size_t n =
      errs.count < CEB_CONF_MAX_ERRORS ? errs.count : CEB_CONF_MAX_ERRORS;
  for (size_t i = 0; i < n; i++) {
    const ceb_conf_error *e = &errs.items[i];
    ceb_log_error("config: %s:%d: %s%s%s%s", e->file, e->line, e->message,
                  e->hint[0] ? " (" : "", e->hint, e->hint[0] ? ")" : "");
  }
  if (!errs.count)
    ceb_log_error("config %s: %s", c->config_dir, ceb_strerror(st));
  return st;
}

/* The last start failure logged, so that a bridge waiting for its store
 * logs its reason when it changes, not at every retry. */
static char g_last_err[512];

static int start(ceb_bridge *b) {
  char err[512] = "";
  int st = ceb_bridge_start(b, err, sizeof err);
  if (st == CEB_OK) {
    g_last_err[0] = '\0';
    return st;
  }
  if (!err[0]) snprintf(err, sizeof err, "%s", ceb_strerror(st));
  if (strcmp(err, g_last_err) != 0) ceb_log_error("cannot start: %s", err);
  snprintf(g_last_err, sizeof g_last_err, "%s", err);
  return st;
}

/* Stops accepting and drains up to [bridge] drain_timeout; the bridge can
 * start again (a rollback) or be freed. */
static int drain_stop(ceb_bridge *b) {
  int64_t timeout = ceb_conf_bridge_cfg(ceb_bridge_conf(b))->drain_timeout_ms;
  int st = ceb_bridge_drain(b, ceb_bridge_now_ms(b) + timeout);
  ceb_bridge_stop(b);
  return st;
}

/* How often a bridge waiting for its store tries to start again. */
#define RETRY_MS 2000

/* The bridge running (RUN_UP), or waiting for its store (RUN_WAITING:
 * admin API only, /readyz 503), or neither (start failed for good). */
enum { RUN_DOWN = 0, RUN_UP = 1, RUN_WAITING = 2 };

/* Starts b. A store that cannot be opened for an I/O reason (a full disk)
 * is not a reason to exit: a supervisor's restart would meet the same
 * disk, and an exiting bridge answers nothing. The bridge waits instead,
 * answering 503 on /readyz, and start_or_wait is called again. */
static int start_or_wait(ceb_bridge *b, int quiet_wait) {
  if (start(b) == CEB_OK) return RUN_UP;
  if (!ceb_bridge_store_unavailable(b)) return RUN_DOWN;
  char err[512] = "";
  if (ceb_bridge_start_waiting(b, err, sizeof err) != CEB_OK) {
    ceb_log_error("cannot start the admin API while waiting: %s", err);
    return RUN_DOWN;
  }
  if (!quiet_wait)
    ceb_log_error("ALERT the store cannot be opened (see above): not "
                  "accepting; /readyz answers 503; retrying every %d s",
                  RETRY_MS / 1000);
  return RUN_WAITING;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGHUP. A config that does not load is refused; one that loads but
 * cannot start (a port in use, a plugin's init refusing) is rolled back:
 * the running configuration starts again, and the log says why. */
static int reload(const ceb_cli_common *c, ceb_bridge **bp, int state) {
  ceb_log_info("SIGHUP: reloading %s", c->config_dir);
  g_last_err[0] = '\0'; /* whatever fails now is news */
  ceb_bridge *next;
  if (load(c, &next) != CEB_OK) {
    ceb_log_error("reload refused: the running configuration stays");
    return state;
  }
  ceb_sd_notify("RELOADING=1");
  ceb_bridge *old = *bp;
  if (state == RUN_UP)
    drain_stop(old);
  else
    ceb_bridge_stop(old);
  setup_logging(next);
  int now = start_or_wait(next, 0);
  if (now == RUN_UP) {
    ceb_bridge_free(old);
    *bp = next;
    ceb_sd_notify("READY=1\nSTATUS=running");
    ceb_log_info("reload done");
    return now;
  }
  /* A new config waiting for its store would wait on the old one too:
   * keep the old, proven configuration either way. */
  ceb_bridge_free(next);
  setup_logging(old);
  ceb_log_error("reload failed: the new configuration cannot start (see "
                "above); rolling back to the running configuration");
  now = start_or_wait(old, 0);
  if (now == RUN_UP) {
    ceb_sd_notify("READY=1\nSTATUS=running");
    ceb_log_info("reload rolled back: serving on the previous configuration");
  }
  return now;
}

int ceb_cmd_run(int argc, char **argv) {
  ceb_cli_common c = {"bridge.d", NULL};
  int kept = 0;
  for (int k = 0; k < argc; k++) {
    if (k > 0 && strcmp(argv[k], "--dry-run") == 0)
      g_dry_run = 1;
    else
      argv[kept++] = argv[k];
  }
  argc = kept;
  int i = ceb_cli_parse_common(argc, argv, &c, k_run_usage);
  if (i < 0) return i == -2 ? 0 : 2;
  if (i < argc) {
    fprintf(stderr, "cebridge run: unexpected argument '%s'\n%s", argv[i],
            k_run_usage);
    return 2;
  }
  /* Block the signals we serve before any thread exists, so that only this
   * thread receives them (library threads inherit the mask). */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);

  ceb_bridge *b;
  if (load(&c, &b) != CEB_OK) return 1;
  setup_logging(b);
  if (g_dry_run)
    ceb_log_warn("dry run: deliveries are evaluated and recorded (reason "
                 "dry-run), nothing is sent to any sink");
  int state = start_or_wait(b, 0);
  if (state == RUN_DOWN) {
    ceb_bridge_free(b);
    return 1;
  }
  if (state == RUN_UP)
    ceb_sd_notify("READY=1\nSTATUS=running");
  else /* alive and answering; not ready */
    ceb_sd_notify("READY=1\nSTATUS=waiting for the store");
  long long wd = ceb_sd_watchdog_usec();
  int64_t next_try = mono_ms() + RETRY_MS;
  for (;;) {
    struct timespec ts = {1, 0};
    if (wd > 0) {
      ts.tv_sec = (time_t)(wd / 2 / 1000000);
      ts.tv_nsec = (long)(wd / 2 % 1000000) * 1000;
    }
    int sig = sigtimedwait(&set, NULL, &ts);
    if (state == RUN_WAITING && mono_ms() >= next_try) {
      state = start_or_wait(b, 1);
      next_try = mono_ms() + RETRY_MS;
      if (state == RUN_UP) {
        ceb_sd_notify("READY=1\nSTATUS=running");
        ceb_log_info("the store opened: bridge started");
      }
    }
    if (state == RUN_DOWN) {
      ceb_log_error("cannot start the bridge: exiting so that the "
                    "supervisor restarts us");
      ceb_bridge_free(b);
      return 1;
    }
    if (sig < 0) {
      if (wd > 0) ceb_sd_notify("WATCHDOG=1");
      continue;
    }
    if (sig == SIGHUP) {
      state = reload(&c, &b, state);
      next_try = mono_ms() + RETRY_MS;
      if (state == RUN_DOWN) {
        ceb_log_error("reload: neither configuration starts; exiting so "
                      "that the supervisor restarts us");
        ceb_bridge_free(b);
        return 1;
      }
      continue;
    }
    ceb_log_info("%s: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    ceb_sd_notify("STOPPING=1");
    int st = state == RUN_UP ? drain_stop(b) : CEB_OK;
    ceb_bridge_free(b);
    if (st != CEB_OK)
      ceb_log_warn("drain deadline passed: unsettled work stays pending in "
                   "the store and resumes at the next start");
    ceb_log_info("stopped");
    return 0;
  }
}
