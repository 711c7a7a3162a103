#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "cli/cli.h"
#include "cli/cli_common.h"

static const char k_usage[] =
    "usage: cebridge dlq COMMAND [-c DIR | --store FILE] [--json]\n"
    "  list    [--route R] [--type T] [--source S] [--reason X] [--since T]\n"
    "  show    ID\n"
    "  replay  (ID... | --route R [filters]) [--dry-run]\n"
    "  purge   (ID... | --route R [filters]) (--yes | --dry-run)\n"
    "Filters: --type exact or prefix* ; --since an RFC 3339 time or a\n"
    "duration back from now (2h, 7d). Replay puts the event back into its\n"
    "route with the same id (receivers dedupe). Dead letters sent to a Kafka\n"
    "or MQTT topic are kept in the store too, so these commands cover them.\n"
    "Exit 0 done, 1 nothing matched / not found, 2 usage or store error.\n";

static int build_filter(const ceb_ops_args *a, ceb_dlq_filter *f) {
  memset(f, 0, sizeof *f);
  f->route = a->route;
  f->type = a->type;
  f->source = a->source;
  f->reason = a->reason;
  if (a->since) {
    int64_t ms;
    if (ceb_timestamp_parse(a->since, &f->since) != CEB_OK) {
      if (ceb_parse_duration_ms(a->since, &ms) != CEB_OK) {
        fprintf(stderr, "--since: '%s' is neither a time nor a duration\n",
                a->since);
        return -1;
      }
      f->since = ceb_ops_now_ms() - ms;
    }
  }
  return 0;
}

static int parse_id(const char *s, int64_t *id) {
  if (ceb_parse_int(s, id) != CEB_OK || *id <= 0) {
    fprintf(stderr, "'%s' is not a dead-letter id\n", s);
    return -1;
  }
  return 0;
}

static void print_rows(json_t *rows) {
  printf("%-6s %-20s %-18s %-24s %-5s %-24s %s\n", "ID", "ROUTE", "REASON",
         "CREATED", "TRIES", "EVENT", "TYPE");
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char t[32];
    printf(
        "%-6lld %-20s %-18s %-24s %-5lld %-24s %s%s\n",
        (long long)json_integer_value(json_object_get(r, "id")),
        ceb_ops_safe(json_string_value(json_object_get(r, "route"))),
        ceb_ops_safe(json_string_value(json_object_get(r, "reason"))),
        ceb_ops_time(json_integer_value(json_object_get(r, "created_at")), t),
        (long long)json_integer_value(json_object_get(r, "attempts")),
        ceb_ops_safe(json_string_value(json_object_get(r, "event_id"))),
        ceb_ops_safe(json_string_value(json_object_get(r, "type"))),
        json_integer_value(json_object_get(r, "replays")) ? "  (replayed)"
                                                          : "");
  }
}

/* Replay or purge, by ids or by filters. */
static int act(ceb_store *st, const ceb_ops_args *a, int replay) {
  size_t total = 0;
  int ids = a->npositional > 1;
  if (!ids && !a->route) {
    fprintf(stderr, "give dead-letter ids, or --route R with filters\n");
    return 2;
  }
  if (!replay && !a->yes && !a->dry_run) {
    fprintf(stderr, "purge deletes dead letters for good: add --yes (or "
                    "--dry-run to count)\n");
    return 2;
  }
  json_t *done = json_array();
  for (int k = ids ? 1 : 0; k < (ids ? a->npositional : 1); k++) {
    ceb_dlq_filter f;
    if (build_filter(a, &f) != 0 ||
        (ids && parse_id(a->positional[k], &f.id) != 0)) {
      json_decref(done);
      return 2;
    }
    size_t n = 0;
    int rc = replay ? ceb_store_dlq_replay(st, &f, ceb_ops_now_ms(), a->dry_run,
                                           &n, done)
                    : ceb_store_dlq_purge(st, &f, a->dry_run, &n);
    if (rc != CEB_OK) {
      fprintf(stderr, "%s failed: %s\n", replay ? "replay" : "purge",
              ceb_strerror(rc));
      json_decref(done);
      return 2;
    }
    total += n;
  }
  if (a->json) {
    json_t *o = json_pack("{s:b, s:I}", "dry_run", a->dry_run,
                          replay ? "replayed" : "purged", (json_int_t)total);
    json_object_set(o, "deliveries", done);
    ceb_ops_print_json(o);
  } else {
    printf("%s%zu dead letter%s %s\n", a->dry_run ? "dry run: " : "", total,
           total == 1 ? "" : "s",
           replay ? (a->dry_run ? "would be replayed" : "replayed")
                  : (a->dry_run ? "would be purged" : "purged"));
  }
  json_decref(done);
  return total ? 0 : 1;
}

int ceb_cmd_dlq(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc) return rc > 0 ? 0 : 2;
  if (a.npositional < 1) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  const char *sub = a.positional[0];
  if (strcmp(sub, "list") && strcmp(sub, "show") && strcmp(sub, "replay") &&
      strcmp(sub, "purge")) {
    fprintf(stderr, "unknown dlq command '%s'\n%s", sub, k_usage);
    return 2;
  }
  ceb_dlq_filter f;
  int64_t id = 0;
  if (strcmp(sub, "show") == 0 &&
      (a.npositional != 2 || parse_id(a.positional[1], &id) != 0)) {
    fprintf(stderr, "usage: cebridge dlq show ID\n");
    return 2;
  }
  if (build_filter(&a, &f) != 0) return 2;
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st) return 2;
  int out = 0;
  if (strcmp(sub, "list") == 0) {
    json_t *rows = ceb_store_dlq_list(st, &f);
    if (!rows) {
      fprintf(stderr, "DLQ query failed\n");
      out = 2;
    } else {
      out = json_array_size(rows) ? 0 : 1;
      if (a.json)
        ceb_ops_print_json(rows);
      else {
        print_rows(rows);
        json_decref(rows);
      }
    }
  } else if (strcmp(sub, "show") == 0) {
    json_t *row = ceb_store_dlq_show(st, id);
    if (!row) {
      fprintf(stderr, "no dead letter %lld\n", (long long)id);
      out = 1;
    } else {
      ceb_ops_print_json(row);
    }
  } else {
    out = act(st, &a, strcmp(sub, "replay") == 0);
  }
  ceb_store_close(st);
  return out;
}
