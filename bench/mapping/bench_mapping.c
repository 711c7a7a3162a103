/* Mapping cost: what the host pays per event for a typical ingress mapping
 * (a plain JSON Kafka record's input document -> one CloudEvent, then the
 * SDK decode submit_mapped does) and a typical egress mapping (a CloudEvent
 * -> a meemoo-style {type, timestamp, data} body, then the output reader
 * the engine uses), through the worker pool (core/mapping) as the bridge
 * runs it: batches of `batch` items, `threads` callers at once, `workers`
 * worker processes.
 *
 *   bench_mapping [events=20000] [batch=1] [threads=1] [workers=2]
 *
 * Prints events/s and us/event (wall time / events) per direction. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <ceb/ceb.h>

#include "mapping/ceb_mapping.h"
#include "mapping/ceb_mapping_egress.h"

/* The input document the kafka source builds for a plain JSON record
 * (tests/fuzz/corpus/mapping_doc/kafka_plain_json.json). */
static const char k_record[] =
    "{\"topic\":\"sis.enrolments\",\"partition\":3,\"offset\":1207,"
    "\"timestamp\":1758548009123,\"timestamp_type\":\"create_time\","
    "\"key\":\"s-42\",\"key_encoding\":\"text\",\"headers\":{\"event-id\":"
    "\"sis-0001\",\"trace\":\"t-2\"},\"value\":{\"student\":\"s-42\","
    "\"status\":\"enrolled\",\"programme\":\"B-ICT\",\"year\":2026},"
    "\"value_encoding\":\"json\"}";
static const char k_ingress[] =
    "{specversion: \"1.0\", id: .headers[\"event-id\"], "
    "source: \"urn:nld:oin:00000001234567890000:systeem:sis\", "
    "type: (\"nl.edu.sis.enrolment.\" + .value.status), subject: .key, "
    "time: (.timestamp / 1000 | todate), "
    "datacontenttype: \"application/json\", data: .value}";

static const char k_event[] =
    "{\"specversion\":\"1.0\",\"id\":\"sis-0001\",\"source\":\"urn:nld:oin:"
    "00000001234567890000:systeem:sis\",\"type\":\"nl.edu.sis.enrolment."
    "enrolled\",\"subject\":\"s-42\",\"time\":\"2025-09-22T13:33:29Z\","
    "\"datacontenttype\":\"application/json\",\"data\":{\"student\":\"s-42\","
    "\"status\":\"enrolled\",\"programme\":\"B-ICT\",\"year\":2026}}";
static const char k_egress[] =
    "{body: {type: .type, timestamp: .time, data: .data}, "
    "headers: {\"X-Subject\": .subject}}";

static ceb_mapper *g_m;
static int g_events, g_batch, g_threads;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct job {
  uint32_t program;
  long failed;
} job;

static void *caller(void *arg) {
  job *j = arg;
  int per = g_events / g_threads;
  ceb_map_req *r = calloc((size_t)g_batch, sizeof *r);
  const char *in = j->program == 0 ? k_record : k_event;
  for (int done = 0; done < per; done += g_batch) {
    int n = per - done < g_batch ? per - done : g_batch;
    for (int i = 0; i < n; i++)
      r[i] = (ceb_map_req){.program = j->program,
                           .flags = j->program == 0 ? CEB_MAP_EXPAND : 0,
                           .input = in,
                           .input_len = strlen(in)};
    ceb_mapper_run(g_m, r, (size_t)n);
    for (int i = 0; i < n; i++) {
      const char *o = ceb_map_output(&r[i], NULL);
      if (r[i].status != CEB_OK || !o) {
        j->failed++;
        continue;
      }
      if (j->program == 0) { /* what submit_mapped does with it */
        ceb_event *ev = NULL;
        ceb_error e;
        if (ceb_json_decode(o, strlen(o), &ev, &e) != CEB_OK) j->failed++;
        ceb_event_unref(ev);
      } else { /* what the engine does with it */
        char why[256];
        ceb_egress_out *out = ceb_egress_read(o, why, sizeof why);
        if (!out) j->failed++;
        ceb_egress_free(out);
      }
      ceb_map_req_clear(&r[i]);
    }
  }
  free(r);
  return NULL;
}

static double cpu_s(int who) {
  struct rusage ru;
  getrusage(who, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void run(const char *name, uint32_t program) {
  pthread_t th[64];
  job jobs[64];
  double t0 = now_s(), c0 = cpu_s(RUSAGE_SELF);
  for (int t = 0; t < g_threads; t++) {
    jobs[t] = (job){program, 0};
    pthread_create(&th[t], NULL, caller, &jobs[t]);
  }
  long failed = 0;
  for (int t = 0; t < g_threads; t++) {
    pthread_join(th[t], NULL);
    failed += jobs[t].failed;
  }
  double s = now_s() - t0, c = cpu_s(RUSAGE_SELF) - c0;
  int n = g_events / g_threads * g_threads;
  printf("%-8s %d events, batch %d, %d threads: %.0f ev/s, %.1f us/event "
         "(wall), host CPU %.1f us/event, %ld failed\n",
         name, n, g_batch, g_threads, n / s, s * 1e6 / n, c * 1e6 / n,
         failed);
}

int main(int argc, char **argv) {
  g_events = argc > 1 ? atoi(argv[1]) : 20000;
  g_batch = argc > 2 ? atoi(argv[2]) : 1;
  g_threads = argc > 3 ? atoi(argv[3]) : 1;
  int workers = argc > 4 ? atoi(argv[4]) : 2;
  if (g_events < 1 || g_batch < 1 || g_threads < 1 || g_threads > 64 ||
      workers < 1) {
    fprintf(stderr, "usage: bench_mapping [events] [batch] [threads] "
                    "[workers]\n");
    return 2;
  }
  ceb_mapper_opts o = {.workers = workers,
                       .timeout_ms = 1000,
                       .memory_max = 256u * 1024 * 1024};
  const char *progs[] = {k_ingress, k_egress};
  char err[256];
  g_m = ceb_mapper_new(&o, progs, 2, err, sizeof err);
  if (!g_m) {
    fprintf(stderr, "bench_mapping: %s\n", err);
    return 1;
  }
  /* warm up: each worker compiles a program at its first use */
  int ev = g_events;
  g_events = g_threads * g_batch * 4;
  run("warmup", 0);
  run("warmup", 1);
  g_events = ev;
  double w0 = cpu_s(RUSAGE_CHILDREN); /* the warm-up's workers: none yet */
  run("ingress", 0);
  run("egress", 1);
  ceb_mapper_free(g_m); /* reaps the workers: their CPU is counted now */
  int n = 2 * (g_events / g_threads * g_threads);
  printf("workers  CPU %.1f us/event (both directions, whole run)\n",
         (cpu_s(RUSAGE_CHILDREN) - w0) * 1e6 / n);
  return 0;
}
