/* cebridge sink list|enable: the sinks' life cycle in the store (a sink
 * disabled after 410 Gone or disable_after of failures, engine_sinkstate.c).
 * Works on the store directly like dlq: a running bridge rereads the state
 * every store.poll_interval, and its waiting deliveries flow again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "cli/cli.h"
#include "cli/cli_common.h"

static const char k_usage[] =
    "usage: cebridge sink COMMAND [-c DIR | --store FILE] [--json]\n"
    "  list          sinks with a stored state: disabled or failing\n"
    "  enable NAME   enable a disabled sink: its waiting events are sent\n"
    "                again, in order (a running bridge notices within\n"
    "                store.poll_interval; the admin API's POST\n"
    "                /v1/sinks/NAME/enable does the same at once)\n"
    "Exit 0 done, 1 nothing to list / not disabled, 2 usage or store "
    "error.\n";

static void print_rows(json_t *rows) {
  printf("%-24s %-9s %-24s %-24s %s\n", "SINK", "STATE", "DISABLED AT",
         "FAILING SINCE", "REASON");
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char t1[32], t2[32];
    printf(
        "%-24s %-9s %-24s %-24s %s\n",
        ceb_ops_safe(json_string_value(json_object_get(r, "sink"))),
        json_is_true(json_object_get(r, "disabled")) ? "disabled" : "enabled",
        ceb_ops_time(json_integer_value(json_object_get(r, "disabled_at")), t1),
        ceb_ops_time(json_integer_value(json_object_get(r, "failing_since")),
                     t2),
        ceb_ops_safe(json_string_value(json_object_get(r, "reason"))));
  }
}

int ceb_cmd_sink(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc) return rc > 0 ? 0 : 2;
  const char *sub = a.npositional ? a.positional[0] : "";
  int list = strcmp(sub, "list") == 0, enable = strcmp(sub, "enable") == 0;
  if ((!list && !enable) || (list && a.npositional != 1) ||
      (enable && a.npositional != 2)) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st) return 2;
  int out = 0;
  if (list) {
    json_t *rows = ceb_store_sink_states(st);
    if (!rows) {
      fprintf(stderr, "sink state query failed\n");
      out = 2;
    } else {
      out = json_array_size(rows) ? 0 : 1;
      if (a.json) {
        ceb_ops_print_json(rows);
      } else {
        print_rows(rows);
        json_decref(rows);
      }
    }
  } else {
    const char *name = a.positional[1];
    ceb_sink_state was;
    int got = ceb_store_sink_state_get(st, name, &was);
    if (got != CEB_OK && got != CEB_ENOTFOUND) {
      fprintf(stderr, "reading sink %s failed: %s\n", name, ceb_strerror(got));
      out = 2;
    } else if (got == CEB_ENOTFOUND || !was.disabled) {
      printf("sink %s is not disabled\n", name);
      out = 1;
    } else {
      ceb_sink_state st_new = {0};
      rc = ceb_store_sink_state_put(st, name, &st_new);
      if (rc != CEB_OK) {
        fprintf(stderr, "enabling sink %s failed: %s\n", name,
                ceb_strerror(rc));
        out = 2;
      } else {
        printf("sink %s enabled (was disabled: %s); its waiting events are "
               "sent again\n",
               name, ceb_ops_safe(was.reason));
      }
    }
  }
  ceb_store_close(st);
  return out;
}
