/* The mapping pool (core/mapping): compile refusals with jq's line, every
 * kind of output, runaway programs stopped by the time and memory limits
 * with the item's own reason while the other items of the batch run, no
 * environment and no file at run time, and concurrent callers. */
#include "ceb_test.h"
#include "mapping/ceb_mapping.h"
#include "mapping/mapping_text.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <ceb/status.h>

static ceb_mapper_opts g_opts = {
    .workers = 2, .timeout_ms = 300, .memory_max = 128u * 1024 * 1024};

/* Compiles one program; returns its refusal (static) or NULL. */
static const char *check_one(const char *prog) {
  static char why[600];
  char *reasons[1];
  char err[256] = "";
  int rc = ceb_mapper_check(&g_opts, &prog, 1, reasons, err, sizeof err);
  CHECK_MSG(rc == CEB_OK, "check: %s", err);
  if (!reasons[0]) return NULL;
  snprintf(why, sizeof why, "%s", reasons[0]);
  free(reasons[0]);
  return why;
}

static void test_compile(void) {
  CHECK(check_one("{id: .a, type: \"x\"}") == NULL);
  const char *why = check_one(".a |||");
  CHECK_MSG(why && strstr(why, "syntax error"), "%s", why ? why : "(none)");
  CHECK_INT(why ? cebm_error_line(why) : -1, 1);
  why = check_one("# a comment\n.a\n| ]");
  CHECK_MSG(why && strstr(why, "syntax error"), "%s", why ? why : "(none)");
  CHECK_INT(why ? cebm_error_line(why) : -1, 3);
  char tidy[200];
  cebm_error_tidy(why ? why : "", tidy, sizeof tidy);
  CHECK_MSG(!strchr(tidy, '\n') && !strstr(tidy, "jq: error") &&
                strstr(tidy, "syntax error"),
            "%s", tidy);
  why = check_one("nosuchfunction(1)");
  CHECK_MSG(why && strstr(why, "nosuchfunction/1 is not defined"), "%s",
            why ? why : "(none)");
  /* module directives read files: refused before jq sees them */
  why = check_one("  # x\n import \"a\" as a; .");
  CHECK_MSG(why && strstr(why, "'import' is not allowed"), "%s",
            why ? why : "(none)");
  CHECK(check_one("include \"b\"; .") != NULL);
  CHECK(check_one("module {a: 1}; .") != NULL);
  CHECK(check_one(".imports") == NULL); /* a field, not the directive */
  /* an item of a program that does not compile fails with its reason */
  const char *bad[] = {".", ".a |||"};
  char err[256] = "";
  ceb_mapper *m = ceb_mapper_new(&g_opts, bad, 2, err, sizeof err);
  CHECK_MSG(m != NULL, "%s", err);
  ceb_map_req r[2] = {{.program = 1, .input = "{}", .input_len = 2},
                      {.program = 0, .input = "{}", .input_len = 2}};
  CHECK_INT(ceb_mapper_run(m, r, 2), CEB_OK);
  CHECK_INT(r[0].status, CEB_EMAPPING);
  CHECK_MSG(strstr(r[0].reason, "syntax error"), "%s", r[0].reason);
  CHECK_INT(r[1].status, CEB_OK);
  CHECK_STR(ceb_map_output(&r[1], NULL), "{}");
  ceb_map_req_clear(&r[1]);
  ceb_mapper_free(m);
  /* a pool refuses to start on a worker that is not there */
  ceb_mapper_opts o = g_opts;
  o.worker_path = "/nonexistent/cebridge-mapper";
  CHECK(ceb_mapper_new(&o, bad, 1, err, sizeof err) == NULL);
  CHECK_MSG(strstr(err, "/nonexistent/cebridge-mapper"), "%s", err);
}

enum {
  P_EVENT,
  P_SPLIT,
  P_FILTER,
  P_ERROR,
  P_LOOP,
  P_RANGE,
  P_REPEAT,
  P_DOUBLE,
  P_ENV,
  P_ENVFN,
  P_FILENAME,
  P_INPUT,
  P_INPUTS,
  P_DEBUG,
  P_STDERR,
  P_MODMETA,
  P_HALT,
  P_SEARCH,
  P_RECURSE,
  P_COUNT
};
static const char *const k_progs[P_COUNT] = {
    [P_EVENT] = "{specversion: \"1.0\", id: .key, source: \"urn:x\", "
                "type: (\"t.\" + .kind), data: .value}",
    [P_SPLIT] = ".items",
    [P_FILTER] = ".type | startswith(\"nl.\")",
    [P_ERROR] = "error(\"boom: \" + .key)",
    [P_LOOP] = "def f: f; f",
    [P_RANGE] = "[range(1e12)]",
    [P_REPEAT] = "repeat(.)",
    [P_DOUBLE] = "def f: (. + .) | f; \"xy\" | f",
    [P_ENV] = "$ENV",
    [P_ENVFN] = "env",
    [P_FILENAME] = "input_filename",
    [P_INPUT] = "input",
    [P_INPUTS] = "[inputs]",
    [P_DEBUG] = "debug | .key",
    [P_STDERR] = "stderr | .key",
    [P_MODMETA] = "\"a\" | modulemeta",
    [P_HALT] = "\"stop\\n\" | halt_error(1)",
    [P_SEARCH] = "get_search_list",
    [P_RECURSE] = "def f: 1 + f; f"};

static ceb_mapper *g_m;

static ceb_map_req req(uint32_t prog, uint32_t flags, const char *in) {
  return (ceb_map_req){
      .program = prog, .flags = flags, .input = in, .input_len = strlen(in)};
}

/* Runs one item; its first output or reason (static). */
/* The memory limit alone: a pool whose time limit cannot come first (a
 * slow machine, the sanitizer build, took longer than 300 ms to fill 128
 * MiB). */
static ceb_mapper *g_mem;

static const char *run_on(ceb_mapper *m, uint32_t prog, uint32_t flags,
                          const char *in, int *status) {
  static char buf[4096];
  ceb_map_req r = req(prog, flags, in);
  CHECK_INT(ceb_mapper_run(m, &r, 1), CEB_OK);
  *status = r.status;
  const char *o = ceb_map_output(&r, NULL);
  snprintf(buf, sizeof buf, "%s", r.status == CEB_OK ? (o ? o : "") : r.reason);
  ceb_map_req_clear(&r);
  return buf;
}

static const char *run1(uint32_t prog, uint32_t flags, const char *in,
                        int *status) {
  return run_on(g_m, prog, flags, in, status);
}

static const char *k_doc = "{\"key\":\"k1\",\"kind\":\"created\",\"value\":"
                           "{\"n\":1},\"items\":[{\"a\":1},{\"b\":2}],"
                           "\"type\":\"nl.edu.x\"}";

static void test_outputs(void) {
  int st;
  CHECK_STR(run1(P_EVENT, CEB_MAP_EXPAND, k_doc, &st),
            "{\"specversion\":\"1.0\",\"id\":\"k1\",\"source\":\"urn:x\","
            "\"type\":\"t.created\",\"data\":{\"n\":1}}");
  CHECK_INT(st, CEB_OK);
  ceb_map_req r = req(P_SPLIT, CEB_MAP_EXPAND, k_doc);
  CHECK_INT(ceb_mapper_run(g_m, &r, 1), CEB_OK);
  CHECK_INT(r.nout, 2);
  const char *o1 = ceb_map_output(&r, NULL);
  const char *o2 = ceb_map_output(&r, o1);
  CHECK_STR(o1, "{\"a\":1}");
  CHECK_STR(o2, "{\"b\":2}");
  CHECK(ceb_map_output(&r, o2) == NULL);
  ceb_map_req_clear(&r);
  r = req(P_SPLIT, 0, k_doc); /* no EXPAND: the array is one output */
  CHECK_INT(ceb_mapper_run(g_m, &r, 1), CEB_OK);
  CHECK_INT(r.nout, 1);
  ceb_map_req_clear(&r);
  CHECK_STR(run1(P_FILTER, CEB_MAP_TRUTH, k_doc, &st), "true");
  CHECK_STR(run1(P_FILTER, CEB_MAP_TRUTH, "{\"type\":\"com.x\"}", &st),
            "false");
  CHECK_STR(run1(P_ERROR, 0, k_doc, &st), "boom: k1");
  CHECK_INT(st, CEB_EMAPPING);
  const char *why = run1(P_EVENT, 0, "{\"key\": tru", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(why, "input is not JSON"), "%s", why);
  /* jq quotes the input in its parse error: still one line */
  why = run1(P_EVENT, 0, "{\"key\":\n\"a\"\n,", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(why, "input is not JSON") && !strchr(why, '\n'), "%s", why);
  /* P_EVENT on a document lacking .kind: a jq error, with jq's words */
  why = run1(P_EVENT, 0, "{\"key\":\"k\",\"kind\":5}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(why, "cannot be added"), "%s", why);
}

static void test_runaway(void) {
  ceb_mapper_stats before, after;
  ceb_mapper_stats_get(g_m, &before);
  int st;
  const char *why = run1(P_LOOP, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_STR(why, "mapping timed out after 300 ms");
  why = run1(P_RANGE, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(why, "memory limit") || strstr(why, "timed out"), "%s", why);
  why = g_mem ? run_on(g_mem, P_DOUBLE, 0, "{}", &st) : "no pool";
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(why, "exceeded its memory limit (mapping.memory_max, "
                        "128 MiB)"),
            "%s", why);
  why = run1(P_RECURSE, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(why, "memory limit") || strstr(why, "timed out") ||
                strstr(why, "died"),
            "%s", why);
  why = run1(P_REPEAT, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_STR(why, "the program output more than 10000 values");
  /* a batch: the runaway item fails alone, the others are answered */
  ceb_map_req b[5] = {req(P_EVENT, 0, k_doc), req(P_LOOP, 0, "{}"),
                      req(P_EVENT, 0, k_doc), req(P_DOUBLE, 0, "{}"),
                      req(P_FILTER, CEB_MAP_TRUTH, k_doc)};
  CHECK_INT(ceb_mapper_run(g_m, b, 5), CEB_OK);
  CHECK_INT(b[0].status, CEB_OK);
  CHECK_INT(b[1].status, CEB_EMAPPING);
  CHECK_STR(b[1].reason, "mapping timed out after 300 ms");
  CHECK_INT(b[2].status, CEB_OK);
  CHECK_STR(ceb_map_output(&b[2], NULL), ceb_map_output(&b[0], NULL));
  CHECK_INT(b[3].status, CEB_EMAPPING); /* whichever limit came first */
  CHECK_MSG(strstr(b[3].reason, "memory limit") ||
                strstr(b[3].reason, "timed out"),
            "%s", b[3].reason);
  CHECK_INT(b[4].status, CEB_OK);
  CHECK_STR(ceb_map_output(&b[4], NULL), "true");
  for (int i = 0; i < 5; i++)
    ceb_map_req_clear(&b[i]);
  ceb_mapper_stats_get(g_m, &after);
  CHECK(after.timeouts >= before.timeouts + 2);
  /* P_LOOP twice, P_RANGE and b[3] each by one of the two limits */
  CHECK(after.timeouts + after.memory >= before.timeouts + before.memory + 4);
  CHECK(after.spawns > before.spawns);
  ceb_mapper_stats mem;
  if (g_mem) ceb_mapper_stats_get(g_mem, &mem);
  CHECK(g_mem && mem.memory == 1 && mem.timeouts == 0);
}

static void test_sandbox(void) {
  int st;
  CHECK_STR(run1(P_ENV, 0, "{}", &st), "{}");
  CHECK_INT(st, CEB_OK);
  CHECK_STR(run1(P_ENVFN, 0, "{}", &st), "{}");
  const char *r = run1(P_FILENAME, 0, "{}", &st);
  CHECK_MSG(st == CEB_EMAPPING || strcmp(r, "null") == 0, "%d %s", st, r);
  r = run1(P_INPUT, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(r, "not available in a mapping"), "%s", r);
  r = run1(P_INPUTS, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(r, "not available in a mapping"), "%s", r);
  CHECK_STR(run1(P_DEBUG, 0, k_doc, &st), "\"k1\"");
  CHECK_STR(run1(P_STDERR, 0, k_doc, &st), "\"k1\"");
  r = run1(P_MODMETA, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  r = run1(P_HALT, 0, "{}", &st);
  CHECK_INT(st, CEB_EMAPPING);
  CHECK_MSG(strstr(r, "halt_error: stop"), "%s", r);
  CHECK_STR(run1(P_SEARCH, 0, "{}", &st), "[]");
}

static pid_t g_killed[16];
static int g_nkilled;

/* Kills every worker process of this test (children named
 * cebridge-mapper) from outside; returns how many. */
static int kill_workers(void) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    int pid, ppid;
    char comm[64], state;
    if (sscanf(buf, "%d (%63[^)]) %c %d", &pid, comm, &state, &ppid) == 4 &&
        ppid == getpid() && strcmp(comm, "cebridge-mapper") == 0 &&
        state != 'Z' && kill(pid, SIGKILL) == 0 && n < 16)
      g_killed[n++] = pid;
  }
  if (d) closedir(d);
  g_nkilled = n;
  return n;
}

/* Every process kill_workers killed is dead (a zombie: the pool has not
 * reaped it yet). */
static int killed_dead(void *arg) {
  (void)arg;
  for (int i = 0; i < g_nkilled; i++) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)g_killed[i]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *close = strrchr(buf, ')');
    if (close && close[1] == ' ' && close[2] != 'Z') return 0;
  }
  return 1;
}

/* Workers killed from outside between batches (dead before the next
 * batch): it goes to a new worker, and no item fails for it. */
static void test_killed_between(void) {
  ceb_mapper_stats before, after;
  ceb_mapper_stats_get(g_m, &before);
  CHECK(kill_workers() >= 1);
  CHECK(ceb_test_wait(killed_dead, NULL, 10000));
  ceb_map_req b[3] = {req(P_EVENT, 0, k_doc), req(P_EVENT, 0, k_doc),
                      req(P_FILTER, CEB_MAP_TRUTH, k_doc)};
  CHECK_INT(ceb_mapper_run(g_m, b, 3), CEB_OK);
  for (int i = 0; i < 3; i++) {
    CHECK_MSG(b[i].status == CEB_OK, "%d: %s", i, b[i].reason);
    ceb_map_req_clear(&b[i]);
  }
  ceb_mapper_stats_get(g_m, &after);
  CHECK(after.spawns > before.spawns);
  CHECK_INT(after.failed, before.failed);
}

/* Concurrent callers: each thread runs batches of its own documents and
 * checks every answer is its own (no answer crosses to another caller). */
#define THREADS 6
#define ROUNDS 40
static void *caller(void *arg) {
  int t = (int)(intptr_t)arg;
  char docs[8][96];
  ceb_map_req b[8];
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < 8; i++) {
      snprintf(docs[i], sizeof docs[i],
               "{\"key\":\"t%d-r%d-%d\",\"kind\":\"k\",\"value\":%d}", t, round,
               i, i);
      b[i] = req(P_EVENT, 0, docs[i]);
    }
    if (round % 10 == 5) b[3] = req(P_LOOP, 0, "{}");
    if (ceb_mapper_run(g_m, b, 8) != CEB_OK) bad++;
    for (int i = 0; i < 8; i++) {
      if (round % 10 == 5 && i == 3) {
        bad += b[i].status != CEB_EMAPPING;
        continue;
      }
      char want[96];
      snprintf(want, sizeof want, "\"id\":\"t%d-r%d-%d\"", t, round, i);
      const char *o = ceb_map_output(&b[i], NULL);
      if (b[i].status != CEB_OK || !o || !strstr(o, want)) {
        bad++;
        fprintf(stderr, "thread %d round %d item %d: %d %s\n", t, round, i,
                b[i].status,
                b[i].status == CEB_OK ? (o ? o : "-") : b[i].reason);
      }
      ceb_map_req_clear(&b[i]);
    }
  }
  return (void *)(intptr_t)bad;
}

static void test_concurrency(void) {
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++)
    pthread_create(&th[t], NULL, caller, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) {
    void *bad;
    pthread_join(th[t], &bad);
    CHECK_MSG(bad == NULL, "thread %d: %ld wrong answers", t,
              (long)(intptr_t)bad);
  }
}

static void phase(const char *name) {
  static int64_t t0;
  int64_t now = ceb_test_now_ms();
  if (t0) fprintf(stderr, "  %s: %lld ms\n", name, (long long)(now - t0));
  t0 = now;
}

int main(void) {
  phase("start");
  test_compile();
  phase("compile");
  char err[256] = "";
  g_m = ceb_mapper_new(&g_opts, k_progs, P_COUNT, err, sizeof err);
  CHECK_MSG(g_m != NULL, "%s", err);
  ceb_mapper_opts mem_opts = g_opts;
  mem_opts.workers = 1;
  mem_opts.timeout_ms = 60000;
  g_mem = ceb_mapper_new(&mem_opts, k_progs, P_COUNT, err, sizeof err);
  CHECK_MSG(g_mem != NULL, "%s", err);
  if (g_m) {
    test_outputs();
    phase("outputs");
    test_runaway();
    phase("runaway");
    test_sandbox();
    phase("sandbox");
    test_killed_between();
    phase("killed");
    test_concurrency();
    phase("concurrency");
    ceb_mapper_free(g_m);
  }
  ceb_mapper_free(g_mem);
  return ceb_test_done("unit_mapping");
}
