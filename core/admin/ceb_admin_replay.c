/* POST /v1/routes/{route}/replay?since=T&until=T[&type=X][&dry_run=true]:
 * replay by time range from the archive (ceb_runtime_replay_range), the
 * admin API's form of `cebridge replay`. Times: RFC 3339, or a duration
 * back from now ("2h" or "-2h"). */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include <ceb/ceb.h>

#include "admin/ceb_admin_internal.h"
#include "runtime/ceb_runtime.h"
#include "store/ceb_store.h"

/* 0 and *ms set, or -1 when v is neither a time nor a duration. */
static int when(const char *v, int64_t now, int64_t *ms) {
  int64_t d;
  if (ceb_timestamp_parse(v, ms) == CEB_OK) return 0;
  if (ceb_parse_duration_ms(v[0] == '-' ? v + 1 : v, &d) != CEB_OK) return -1;
  *ms = now - d;
  return 0;
}

static int truthy(const char *v) {
  int b = 0;
  return v && ceb_parse_bool(v, &b) == CEB_OK && b;
}

int ceb_admin_replay(const ceb_admin_view *view, struct MHD_Connection *c,
                     const char *route) {
  int64_t now = view->now_ms(view->clock_arg);
  const char *since = ceb_admin_arg(c, "since");
  const char *until = ceb_admin_arg(c, "until");
  ceb_replay_filter f = {.route = route, .type = ceb_admin_arg(c, "type")};
  if (!since)
    return ceb_admin_problem(c, 400, "missing_parameter",
                             "since=T is required (RFC 3339 or -2h)");
  if (when(since, now, &f.since) != 0)
    return ceb_admin_problem(c, 400, "bad_parameter",
                             "bad value for 'since': neither an RFC 3339 "
                             "time nor a duration");
  f.until = now;
  if (until && when(until, now, &f.until) != 0)
    return ceb_admin_problem(c, 400, "bad_parameter",
                             "bad value for 'until': neither an RFC 3339 "
                             "time nor a duration");
  if (f.since >= f.until)
    return ceb_admin_problem(c, 400, "bad_parameter",
                             "since must be before until");
  int dry = truthy(ceb_admin_arg(c, "dry_run"));
  size_t count = 0;
  int rc = ceb_runtime_replay_range(view->rt, &f, dry, &count);
  if (rc == CEB_ENOTFOUND)
    return ceb_admin_problem(c, 404, "unknown_route",
                             "no such route in the running configuration");
  if (rc != CEB_OK)
    return ceb_admin_store_problem(c, ceb_runtime_store(view->rt),
                                   ceb_strerror(rc));
  return ceb_admin_reply_json(
      c, 200,
      json_pack("{s:s, s:b, s:I, s:I, s:I}", "route", route, "dry_run", dry,
                "replayed", (json_int_t)count, "since", (json_int_t)f.since,
                "until", (json_int_t)f.until));
}
