/* ceb_bench_load: the load generator on its own, against any intermediary
 * already listening on 127.0.0.1 (ceb_bench_load.h says what it measures).
 *
 *   ceb_bench_load -p PORT [-u PATH] [-c CONNS] [-n COUNT] [-d SECONDS]
 *                  [-s BYTES] [-k KEYS] [-b]
 *
 * Exit status 0 when every request got a 2xx, 1 otherwise, 2 on usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ceb_bench_load.h"

static void usage(void) {
  fprintf(stderr, "usage: ceb_bench_load -p PORT [-u PATH] [-c CONNS] "
                  "[-n COUNT] [-d SECONDS] [-s BYTES] [-k KEYS] [-b]\n");
}

int main(int argc, char **argv) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "l%dx%ld", (int)getpid(), (long)time(NULL));
  ceb_bench_load_opts o = {.path = "/events",
                           .connections = 64,
                           .event_size = 1024,
                           .keys = 1000,
                           .id_prefix = prefix,
                           .source =
                               "urn:nld:oin:00000001234567890000:systeem:bench",
                           .type = "nl.edu.bench.created"};
  int opt;
  while ((opt = getopt(argc, argv, "p:u:c:n:d:s:k:b")) != -1) {
    switch (opt) {
    case 'p':
      o.port = atoi(optarg);
      break;
    case 'u':
      o.path = optarg;
      break;
    case 'c':
      o.connections = atoi(optarg);
      break;
    case 'n':
      o.count = atol(optarg);
      break;
    case 'd':
      o.duration_ms = (int64_t)(atof(optarg) * 1000);
      break;
    case 's':
      o.event_size = atoi(optarg);
      break;
    case 'k':
      o.keys = atoi(optarg);
      break;
    case 'b':
      o.binary = 1;
      break;
    default:
      usage();
      return 2;
    }
  }
  if (!o.count && !o.duration_ms) o.duration_ms = 10000;
  signal(SIGPIPE, SIG_IGN);
  ceb_bench_load_result r;
  char err[256];
  if (ceb_bench_load_run(&o, &r, err, sizeof err) < 0) {
    fprintf(stderr, "ceb_bench_load: %s\n", err);
    usage();
    return 2;
  }
  ceb_bench_load_print(o.binary ? "load binary" : "load structured", &r);
  return ceb_bench_load_ok(&r) == r.sent && r.sent > 0 ? 0 : 1;
}
