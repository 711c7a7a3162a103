/* cebridge cluster: the bridges sharing a store, as the store records them
 * (ceb_store_cluster): each instance with its heartbeat, the tasks it
 * leads and the deliveries it holds under a lease, per route; and the
 * leases whose holder is gone (expired: any bridge takes them over). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_common.h"

static const char k_usage[] =
    "usage: cebridge cluster [-c DIR | --store SPEC] [--json]\n"
    "Lists the bridges sharing the store: id, host, pid, version, start and\n"
    "last heartbeat, the tasks each leads (sweeper, dlq-forward, a contracts\n"
    "sync) and its claimed deliveries per route; then claims whose lease\n"
    "expired (their bridge is gone; another takes them over).\n"
    "Exit 0, 2 usage or store error.\n";

static void print_counts(const char *title, json_t *counts) {
  const char *route;
  json_t *n;
  int any = 0;
  printf("%s", title);
  json_object_foreach(counts, route, n) {
    printf("%s%s %lld", any ? ", " : " ", route,
           (long long)json_integer_value(n));
    any = 1;
  }
  printf("%s\n", any ? "" : " none");
}

int ceb_cmd_cluster(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc) return rc > 0 ? 0 : 2;
  if (a.npositional != 0) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st) return 2;
  int64_t now = ceb_ops_now_ms();
  json_t *view = ceb_store_cluster(st, now);
  ceb_store_close(st);
  if (!view) {
    fprintf(stderr, "cluster query failed\n");
    return 2;
  }
  if (a.json) {
    ceb_ops_print_json(view);
    return 0;
  }
  size_t i;
  json_t *in;
  json_array_foreach(json_object_get(view, "instances"), i, in) {
    char t1[32], t2[32];
    int64_t hb = json_integer_value(json_object_get(in, "heartbeat_at"));
    printf("instance %s  host %s  pid %lld  version %s\n",
           ceb_ops_safe(json_string_value(json_object_get(in, "id"))),
           ceb_ops_safe(json_string_value(json_object_get(in, "hostname"))),
           (long long)json_integer_value(json_object_get(in, "pid")),
           json_string_value(json_object_get(in, "version")));
    printf(
        "  started %s  heartbeat %s (%llds ago)%s\n",
        ceb_ops_time(json_integer_value(json_object_get(in, "started_at")), t1),
        ceb_ops_time(hb, t2), (long long)((now - hb) / 1000),
        json_is_true(json_object_get(in, "stale"))
            ? "  STALE: no heartbeat for a while"
            : "");
    size_t k;
    json_t *t;
    printf("  leads:");
    json_array_foreach(json_object_get(in, "leads"), k, t)
        printf("%s%s", k ? ", " : " ", json_string_value(t));
    printf("%s\n", json_array_size(json_object_get(in, "leads")) ? "" : " -");
    print_counts("  claims per route:", json_object_get(in, "leases"));
  }
  if (json_array_size(json_object_get(view, "instances")) == 0)
    printf("no bridge has registered with this store\n");
  print_counts("expired claims per route:",
               json_object_get(view, "leases_expired"));
  json_decref(view);
  return 0;
}
