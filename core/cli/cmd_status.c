#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_common.h"

static const char k_usage[] =
    "usage: cebridge status EVENT-ID [--source S] [-c DIR | --store FILE] "
    "[--json]\n"
    "Shows where an event is: per route pending, in-progress, retrying (next\n"
    "attempt at), done or dead-lettered (reason), with attempts.\n"
    "Exit 0 found, 1 unknown event, 2 usage or store error.\n";

int ceb_cmd_status(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc) return rc > 0 ? 0 : 2;
  if (a.npositional != 1) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st) return 2;
  json_t *events = ceb_store_event_status(st, a.positional[0], a.source);
  ceb_store_close(st);
  if (!events) {
    fprintf(stderr, "status query failed\n");
    return 2;
  }
  size_t n = json_array_size(events);
  if (n == 0) {
    fprintf(stderr, "no event with id %s\n", ceb_ops_safe(a.positional[0]));
    json_decref(events);
    return 1;
  }
  if (a.json) {
    ceb_ops_print_json(events);
    return 0;
  }
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    char t[32];
    printf(
        "event %s  source %s  type %s  client %s  received %s%s\n",
        ceb_ops_safe(json_string_value(json_object_get(e, "id"))),
        ceb_ops_safe(json_string_value(json_object_get(e, "source"))),
        ceb_ops_safe(json_string_value(json_object_get(e, "type"))),
        ceb_ops_safe(json_string_value(json_object_get(e, "client"))),
        ceb_ops_time(json_integer_value(json_object_get(e, "received_at")), t),
        json_is_true(json_object_get(e, "unrouted")) ? "  (matched no route)"
                                                     : "");
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(e, "routes"), k, r) {
      char t1[32], t2[32];
      const char *reason = json_string_value(json_object_get(r, "last_reason"));
      printf("  route %-20s %-12s attempts %-3lld last %s next %s%s%s\n",
             ceb_ops_safe(json_string_value(json_object_get(r, "route"))),
             json_string_value(json_object_get(r, "state")),
             (long long)json_integer_value(json_object_get(r, "attempts")),
             ceb_ops_time(
                 json_integer_value(json_object_get(r, "last_attempt_at")), t1),
             ceb_ops_time(
                 json_integer_value(json_object_get(r, "next_attempt_at")), t2),
             reason ? "  reason " : "", reason ? ceb_ops_safe(reason) : "");
    }
  }
  json_decref(events);
  return 0;
}
