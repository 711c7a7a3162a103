/* cebridge run: start the bridge and serve signals.
 *   SIGTERM / SIGINT: stop accepting, drain in-flight work up to
 *                     [bridge] drain_timeout, exit 0.
 *   SIGHUP:           load and check the config again; a broken config is
 *                     refused with its errors and the running one stays; a
 *                     good one replaces it (drain, then start: queued events
 *                     live in the store and are kept). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bridge/ceb_bridge.h"
#include "cli/ceb_cli.h"
#include "log/ceb_log.h"

static const char k_run_usage[] =
    "usage: cebridge run [-c DIR] [--plugin-dir DIR]\n"
    "Runs the bridge on a config directory (default bridge.d).\n"
    "SIGTERM/SIGINT drain and exit 0; SIGHUP reloads the config.\n";

static void setup_logging(const ceb_bridge *b) {
  const ceb_config *cfg = ceb_conf_bridge(ceb_bridge_conf(b));
  int level = ceb_log_level_parse(ceb_config_str(cfg, "log.level"));
  int format = ceb_log_format_parse(ceb_config_str(cfg, "log.format"));
  ceb_log_configure(level < 0 ? CEB_LOG_INFO : (ceb_log_level)level,
                    format < 0 ? CEB_LOGFMT_JSON : (ceb_log_format)format,
                    NULL);
}

static int load(const ceb_cli_common *c, ceb_bridge **out) {
  ceb_bridge_opts o = {.config_dir = c->config_dir,
                       .plugin_dir = c->plugin_dir};
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  int st = ceb_bridge_load(&o, out, &errs);
  if (st == CEB_OK)
    return CEB_OK;
  size_t n = errs.count < CEB_CONF_MAX_ERRORS ? errs.count : CEB_CONF_MAX_ERRORS;
  for (size_t i = 0; i < n; i++) {
    const ceb_conf_error *e = &errs.items[i];
    ceb_log_error("config: %s:%d: %s%s%s%s", e->file, e->line, e->message,
                  e->hint[0] ? " (" : "", e->hint, e->hint[0] ? ")" : "");
  }
  if (!errs.count)
    ceb_log_error("config %s: %s", c->config_dir, ceb_strerror(st));
  return st;
}

static int start(ceb_bridge *b) {
  char err[512] = "";
  int st = ceb_bridge_start(b, err, sizeof err);
  if (st != CEB_OK)
    ceb_log_error("cannot start: %s", err[0] ? err : ceb_strerror(st));
  return st;
}

static int stop(ceb_bridge *b) {
  const ceb_config *cfg = ceb_conf_bridge(ceb_bridge_conf(b));
  int64_t timeout = ceb_config_duration_ms(cfg, "drain_timeout", 30000);
  int st = ceb_bridge_drain(b, ceb_bridge_now_ms(b) + timeout);
  ceb_bridge_free(b);
  return st;
}

int ceb_cmd_run(int argc, char **argv) {
  ceb_cli_common c = {"bridge.d", NULL};
  int i = ceb_cli_parse_common(argc, argv, &c, k_run_usage);
  if (i < 0)
    return i == -2 ? 0 : 2;
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
  if (load(&c, &b) != CEB_OK)
    return 1;
  setup_logging(b);
  if (start(b) != CEB_OK) {
    ceb_bridge_free(b);
    return 1;
  }
  ceb_sd_notify("READY=1\nSTATUS=running");
  long long wd = ceb_sd_watchdog_usec();
  for (;;) {
    struct timespec ts = {1, 0};
    if (wd > 0) {
      ts.tv_sec = (time_t)(wd / 2 / 1000000);
      ts.tv_nsec = (long)(wd / 2 % 1000000) * 1000;
    }
    int sig = sigtimedwait(&set, NULL, &ts);
    if (sig < 0) {
      if (wd > 0)
        ceb_sd_notify("WATCHDOG=1");
      continue;
    }
    if (sig == SIGHUP) {
      ceb_log_info("SIGHUP: reloading %s", c.config_dir);
      ceb_bridge *next;
      if (load(&c, &next) != CEB_OK) {
        ceb_log_error("reload refused: the running configuration stays");
        continue;
      }
      ceb_sd_notify("RELOADING=1");
      stop(b);
      b = next;
      setup_logging(b);
      if (start(b) != CEB_OK) {
        ceb_log_error("reload: the new configuration failed to start; "
                      "exiting so that the supervisor restarts us");
        ceb_bridge_free(b);
        return 1;
      }
      ceb_sd_notify("READY=1\nSTATUS=running");
      ceb_log_info("reload done");
      continue;
    }
    ceb_log_info("%s: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    ceb_sd_notify("STOPPING=1");
    int st = stop(b);
    if (st != CEB_OK)
      ceb_log_warn("drain deadline passed: unsettled work stays pending in "
                   "the store and resumes at the next start");
    ceb_log_info("stopped");
    return 0;
  }
}
