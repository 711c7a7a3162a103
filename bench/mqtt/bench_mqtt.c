/* MQTT end-to-end benchmarks through the real `cebridge run` binary, a real
 * mosquitto (tests/helpers/mosquitto, quiet log) and, for Kafka, the
 * librdkafka mock cluster (ceb-kafka-mock); everything on 127.0.0.1, each run
 * in a fresh temp dir:
 *
 *   bench_mqtt http2mqtt [-n EVENTS] [-c CONNECTIONS] [-s BYTES] [-k KEYS]
 *     C connections POST structured CloudEvents of about S bytes to the http
 *     source (auth none) as fast as the 202s come back; the route (ordered
 *     by partitionkey) delivers to an mqtt sink (MQTT 5, binary mode, QoS 1)
 *     on topic bench/out; a plain-socket MQTT 5 subscriber
 *     (mqtt_bench_rawsub.h) reads everything back.
 *   bench_mqtt mqtt2kafka [-n EVENTS] [-k KEYS] [-s BYTES] [-r RATE] [-p P]
 *     P plain-socket publishers (1; each its own keys; mqtt_bench_pub.h)
 *     send N binary-mode MQTT 5
 *     CloudEvents at QoS 1 to bench/in (each with an in-flight window one
 *     below the broker's Receive Maximum, which bounds one connection's
 *     rate), paced to RATE events/s in total when given; the mqtt source
 *     (persistent session, acknowledging only after the durable submit) ->
 *     route -> kafka sink on the mock cluster; the topic is read back
 *     concurrently.
 *   bench_mqtt mqtt2http [-n EVENTS] [-k KEYS] [-s BYTES] [-r RATE]
 *     the same source, delivered by the http sink to a local libmicrohttpd
 *     receiver (204): separates the MQTT source's cost from the Kafka sink's.
 *
 * Every event carries id mb-STREAM-SEQ, partitionkey key-K and benchsent (the
 * bench's CLOCK_MONOTONIC in us when it was sent): the far end counts first
 * deliveries, duplicates and disorder per (key, stream) and the end-to-end
 * latency (mqtt_bench_track.h). Summary lines per run ("bench mqtt ...")
 * with rates, latency p50/p99, the bridge's CPU per event (user + system of
 * all its threads over the run / events) and RSS, and the load average.
 *
 * Exit status: 0 when every event arrived exactly in order per key and the
 * bridge stopped cleanly; 1 otherwise (the temp dir is kept); 2 usage or set
 * up failure. No timing is ever asserted. Bounded: every wait has a
 * deadline. */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "mqtt_bench.h"

static void usage(void) {
  fprintf(stderr,
          "usage: bench_mqtt http2mqtt [-n EVENTS] [-c CONNS] [-s BYTES] "
          "[-k KEYS] [-i SINK_INFLIGHT] [-m MODE] [-P]\n"
          "       bench_mqtt mqtt2kafka|mqtt2http [-n EVENTS] [-k KEYS] "
          "[-s BYTES] [-r EVENTS_PER_S] [-i SOURCE_INFLIGHT] [-p PUBLISHERS] "
          "[-m MODE]\n"
          "  -m binary|structured  MQTT content mode (default binary)\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const char *mode = argv[1];
  mb_params p = {
      .events = 100000, .conns = 64, .size = 1024, .keys = 1000, .pubs = 1};
  int opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "n:c:s:k:r:i:Pp:m:")) != -1) {
    switch (opt) {
    case 'n':
      p.events = atol(optarg);
      break;
    case 'c':
      p.conns = atoi(optarg);
      break;
    case 's':
      p.size = atoi(optarg);
      break;
    case 'k':
      p.keys = atoi(optarg);
      break;
    case 'r':
      p.rate = atof(optarg);
      break;
    case 'i':
      p.inflight = atoi(optarg);
      break;
    case 'P':
      p.preload = 1;
      break;
    case 'p':
      p.pubs = atoi(optarg);
      break;
    case 'm':
      if (strcmp(optarg, "structured") && strcmp(optarg, "binary")) {
        usage();
        return 2;
      }
      p.structured = !strcmp(optarg, "structured");
      break;
    default:
      usage();
      return 2;
    }
  }
  if (optind != argc || p.events < 1 || p.events > 10000000 || p.conns < 1 ||
      p.conns > 1024 || p.size < 0 || p.size > 7000 || p.keys < 1 ||
      p.keys > 100000 || p.rate < 0 || p.rate > 1e6 || p.inflight < 0 ||
      p.inflight > 65535 || p.pubs < 1 || p.pubs > MB_MAX_PUBS) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc;
  if (!strcmp(mode, "http2mqtt"))
    rc = mb_http2mqtt(&p);
  else if (!strcmp(mode, "mqtt2kafka"))
    rc = mb_mqtt2x(&p, 1);
  else if (!strcmp(mode, "mqtt2http"))
    rc = mb_mqtt2x(&p, 0);
  else {
    usage();
    rc = 2;
  }
  curl_global_cleanup();
  return rc;
}
