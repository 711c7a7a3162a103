/* cebridge replay: offers a route's archived events of a time range again
 * (ceb_store_replay_range): settled events stay in the store for [bridge]
 * retention, and each matching one becomes a new delivery with a new
 * Idempotency-Key, queued behind the open deliveries of its order key.
 * Works on the store directly like dlq: a running bridge picks the new
 * deliveries up within store.poll_interval (the admin API's POST
 * /v1/routes/{route}/replay does the same at once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "cli/cli.h"
#include "cli/cli_common.h"
#include "config/ceb_conf.h"

static const char k_usage[] =
    "usage: cebridge replay [-c DIR | --store FILE] --route R --since T\n"
    "                       [--until T] [--type X] [--dry-run] [--json]\n"
    "Offers again every event of route R received in [since, until) whose\n"
    "delivery is settled (delivered or dead-lettered): a new delivery each,\n"
    "with a new Idempotency-Key, in order per key behind the key's open\n"
    "deliveries. T: an RFC 3339 time, or a duration back from now (-2h, 2h,\n"
    "7d); --until defaults to now. --type exact or prefix*. Events are kept\n"
    "for [bridge] retention after they settle (the archive). --dry-run\n"
    "prints only the count.\n"
    "Exit 0 replayed, 1 nothing matched, 2 usage, unknown route or store "
    "error.\n";

/* 0 and *ms set, or -1 after saying why. */
static int when(const char *flag, const char *v, int64_t now, int64_t *ms) {
  int64_t d;
  if (ceb_timestamp_parse(v, ms) == CEB_OK) return 0;
  if (ceb_parse_duration_ms(v[0] == '-' ? v + 1 : v, &d) != CEB_OK) {
    fprintf(stderr, "%s: '%s' is neither an RFC 3339 time nor a duration\n",
            flag, v);
    return -1;
  }
  *ms = now - d;
  return 0;
}

/* With -c DIR the route must be configured there; with --store only the
 * store can say (a route it never held is unknown). 0 known, -1 not. */
static int route_configured(const ceb_ops_args *a) {
  if (a->store_path) return 0;
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  if (ceb_conf_load(a->config_dir, &conf, &errs) != CEB_OK) {
    ceb_conf_errors_print(&errs, stderr);
    return -1;
  }
  int found = ceb_conf_find(conf, "route", a->route) != NULL;
  ceb_conf_free(conf);
  if (!found)
    fprintf(stderr, "replay: no route '%s' in %s\n", a->route, a->config_dir);
  return found ? 0 : -1;
}

int ceb_cmd_replay(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc) return rc > 0 ? 0 : 2;
  if (a.npositional || !a.route || !a.since) {
    fprintf(stderr, "replay needs --route R and --since T\n%s", k_usage);
    return 2;
  }
  int64_t now = ceb_ops_now_ms();
  ceb_replay_filter f = {.route = a.route, .type = a.type, .until = now};
  if (when("--since", a.since, now, &f.since) != 0 ||
      (a.until && when("--until", a.until, now, &f.until) != 0))
    return 2;
  if (f.since >= f.until) {
    fprintf(stderr, "replay: --since must be before --until\n");
    return 2;
  }
  if (route_configured(&a) != 0) return 2;
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st) return 2;
  size_t n = 0;
  int exists = 0;
  rc = ceb_store_replay_range(st, &f, now, a.dry_run, &n, &exists);
  ceb_store_close(st);
  if (rc != CEB_OK) {
    fprintf(stderr, "replay failed: %s\n", ceb_strerror(rc));
    return 2;
  }
  if (!exists && a.store_path) {
    fprintf(stderr, "replay: the store holds no route '%s'\n", a.route);
    return 2;
  }
  if (a.json) {
    ceb_ops_print_json(json_pack("{s:s, s:b, s:I, s:I, s:I}", "route", a.route,
                                 "dry_run", a.dry_run, "replayed",
                                 (json_int_t)n, "since", (json_int_t)f.since,
                                 "until", (json_int_t)f.until));
  } else {
    printf("%s%zu event%s %s\n", a.dry_run ? "dry run: " : "", n,
           n == 1 ? "" : "s", a.dry_run ? "would be replayed" : "replayed");
  }
  return n ? 0 : 1;
}
