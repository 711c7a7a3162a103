/* cebridge-mapper: one mapping worker process. The host spawns it (with an
 * empty environment and the socket as fd 3), sends the programs once, then
 * batches of input documents; see mapper_proto.h for the frames.
 *
 * Why a process: libjq 1.6 cannot be interrupted (jq_next runs until the
 * program yields or fails; there is no step limit or cancel hook) and
 * allocates with plain malloc, aborting when it fails (jv_alloc.c:
 * memory_exhausted). A runaway program in the host would hang a thread or
 * kill the bridge. Here it can only hang or kill this process, which the
 * host kills and replaces.
 *
 * Sandbox, before anything is compiled: no environment (the host passes
 * none, so $ENV and env are {} and ~/.jq is never imported, linker.c reads
 * $HOME), stdin/stdout/stderr on /dev/null (the stderr builtin writes
 * there), RLIMIT_NOFILE 4 (fds 0-3 are taken: open() fails, so
 * modulemeta, a module directive or a time zone file read nothing),
 * RLIMIT_AS = mapping.memory_max, no core dumps, no library search path,
 * module directives (import, include, module) refused before compiling,
 * and an input callback that refuses input / inputs. A host that dies
 * closes the socket: the worker's next read ends it; an item still running
 * then is ended by SIGALRM at twice the host's timeout (PR_SET_PDEATHSIG
 * would fire when the host THREAD that spawned the worker exits). */
#include <errno.h>
#include <fcntl.h>
#include <jq.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mapping/mapper_json_in.h"
#include "mapping/mapper_json_out.h"
#include "mapping/mapper_proto.h"
#include "mapping/mapping_text.h"

static int g_fd = CEBM_FD;

/* ---- blocking I/O on the socket (the worker does nothing else) ----
 * Reads go through g_in: a batch's frames (its count, each item's head and
 * document) arrive together, and one read takes as many of them as the
 * socket holds. Read one by one they were 1 + 2n read() calls per batch,
 * most of the worker's kernel time under load (bench/kafka/README.md,
 * "Mappings", 2026-12-05). */
#define IN_BYTES (64u * 1024u)

static char *g_in; /* IN_BYTES, allocated before the sandbox */
static size_t g_in_off, g_in_len;

static int read_raw(void *buf, size_t len) {
  char *p = buf;
  while (len) {
    ssize_t n = read(g_fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int read_all(void *buf, size_t len) {
  char *p = buf;
  while (len) {
    if (g_in_off < g_in_len) {
      size_t take = g_in_len - g_in_off < len ? g_in_len - g_in_off : len;
      memcpy(p, g_in + g_in_off, take);
      g_in_off += take;
      p += take;
      len -= take;
      continue;
    }
    g_in_off = g_in_len = 0;
    if (!g_in || len >= IN_BYTES) return read_raw(p, len); /* a large doc */
    ssize_t n = read(g_fd, g_in, IN_BYTES);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    g_in_len = (size_t)n;
  }
  return 0;
}

static int write_all(const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(g_fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int read_u32(uint32_t *v) {
  return read_all(v, sizeof *v);
}

/* ---- answers, sent in bursts ----
 * Why: written one by one, each answer of a batch costs the worker a
 * write and the host a wake-up (a context switch, a poll and a recv) per
 * item. Answers go to g_out instead; the serve loop sends it when a batch
 * is done, and a timer sends it FLUSH_AFTER_NS after the first answer it
 * holds, so an answer waits at most about that long even while a later
 * item runs for its whole time limit (the host's deadline for an item is
 * counted from when it starts waiting for it: a held answer must not make
 * a good item look late, nor the compile's frame be late).
 *
 * The timer is a signal (SIGUSR1) on this, the only thread: a second
 * thread would switch glibc's malloc to its multi-threaded paths for
 * libjq's allocations (slower, and a program that exhausts
 * mapping.memory_max was seen to run into the time limit first). The
 * handler writes g_out only when the main flow is outside answer() /
 * flush_out() (g_busy); otherwise it leaves the flush to them (g_late). */
#define FLUSH_AFTER_NS 1000000L /* 1 ms */
#define FLUSH_BYTES (64u * 1024u)

static char *g_out; /* 2 * FLUSH_BYTES, allocated before the sandbox */
static volatile size_t g_out_len;
static volatile sig_atomic_t g_busy, g_late, g_out_failed;
static timer_t g_timer;
static int g_timer_ok; /* else every answer is sent at once */
/* The timer is set (cleared by its handler and by flush_out). */
static volatile sig_atomic_t g_timer_set;
/* The answer being written is the batch's last: serve() flushes right
 * after it, so no timer is set for it (a timer set for a batch of one
 * item cost a timer_settime and, 1 ms later, a signal that woke the idle
 * worker to flush nothing). */
static int g_last;

static void flush_now(void) {
  if (g_out_len && !g_out_failed && write_all(g_out, g_out_len) != 0)
    g_out_failed = 1;
  g_out_len = 0;
}

static void on_flush_timer(int sig) {
  (void)sig;
  int saved = errno;
  g_timer_set = 0;
  if (g_busy)
    g_late = 1;
  else
    flush_now();
  errno = saved;
}

static void enter(void) {
  g_busy = 1;
  atomic_signal_fence(memory_order_seq_cst);
}

static void leave(void) {
  atomic_signal_fence(memory_order_seq_cst);
  g_busy = 0;
  atomic_signal_fence(memory_order_seq_cst);
  if (g_late) { /* the timer fired inside: its flush is ours */
    g_late = 0;
    enter();
    flush_now();
    atomic_signal_fence(memory_order_seq_cst);
    g_busy = 0;
  }
}

static int flush_out(void) {
  enter();
  flush_now();
  if (g_timer_set) { /* nothing is held now: no signal for nothing */
    struct itimerspec off = {{0, 0}, {0, 0}};
    timer_settime(g_timer, 0, &off, NULL);
    g_timer_set = 0;
  }
  leave();
  return g_out_failed ? -1 : 0;
}

static int answer(uint32_t status, uint32_t nout, const char *text,
                  size_t len) {
  uint32_t h[3] = {status, nout, (uint32_t)len};
  enter();
  if (sizeof h + len >= FLUSH_BYTES) {
    /* a large answer goes straight out, after the ones held (no copy: it
     * may be most of mapping.memory_max) */
    flush_now();
    if (!g_out_failed &&
        (write_all(h, sizeof h) != 0 || (len && write_all(text, len) != 0)))
      g_out_failed = 1;
  } else {
    /* g_out_len < FLUSH_BYTES here, and g_out holds 2 * FLUSH_BYTES */
    int was_empty = g_out_len == 0;
    memcpy(g_out + g_out_len, h, sizeof h);
    if (len) memcpy(g_out + g_out_len + sizeof h, text, len);
    g_out_len += sizeof h + len;
    if (g_out_len >= FLUSH_BYTES || !g_timer_ok) {
      flush_now();
    } else if (was_empty && !g_last) { /* the first held: clock starts */
      struct itimerspec at = {.it_value = {0, FLUSH_AFTER_NS}};
      if (timer_settime(g_timer, 0, &at, NULL) != 0)
        flush_now();
      else
        g_timer_set = 1;
    }
  }
  leave();
  return g_out_failed ? -1 : 0;
}

/* A reason is one line: jq's messages may quote the input (a parse error
 * names the text "while parsing"), newlines and all. */
static int answer_error(const char *reason) {
  char line[CEBM_MAX_REASON];
  size_t len = strnlen(reason, CEBM_MAX_REASON - 1);
  for (size_t i = 0; i < len; i++)
    line[i] =
        (unsigned char)reason[i] < 0x20 || reason[i] == 0x7f ? ' ' : reason[i];
  return answer(CEBM_ST_ERROR, 0, line, len);
}

/* libjq's out-of-memory path (memory_exhausted) calls this, then aborts:
 * tell the host first, with a frame built ahead (no allocation here). */
static void on_nomem(void *arg) {
  (void)arg;
  static const uint32_t frame[3] = {CEBM_ST_MEMORY, 0, 0};
  /* the answers held go first: they belong to the items before this one
   * (g_busy keeps the timer's handler out of the buffer meanwhile) */
  g_busy = 1;
  atomic_signal_fence(memory_order_seq_cst);
  flush_now();
  ssize_t n = write(g_fd, frame, sizeof frame);
  (void)n;
  _exit(3);
}

/* ---- compiling ---- */

typedef struct errbuf {
  char text[CEBM_MAX_REASON];
} errbuf;

/* jq_compile's messages: keep the first (it names the line). */
static void on_error(void *arg, jv msg) {
  errbuf *e = arg;
  if (!e->text[0]) {
    jv s = jq_format_error(jv_copy(msg));
    if (jv_get_kind(s) == JV_KIND_STRING)
      snprintf(e->text, sizeof e->text, "%s", jv_string_value(s));
    jv_free(s);
  }
  jv_free(msg);
}

static jv refuse_input(jq_state *jq, void *arg) {
  (void)jq;
  (void)arg;
  return jv_invalid_with_msg(
      jv_string("input and inputs are not available in a mapping"));
}

/* debug's messages go nowhere (the host has no use for them per event).
 * Set explicitly: jq 1.6's jq_init leaves the debug and input callbacks
 * uninitialised, and debug called through garbage. */
static void drop_debug(void *arg, jv msg) {
  (void)arg;
  jv_free(msg);
}

static jq_state *compile(const char *text, errbuf *e) {
  e->text[0] = '\0';
  char why[160];
  if (cebm_text_has_module_directive(text, why, sizeof why)) {
    snprintf(e->text, sizeof e->text, "%s", why);
    return NULL;
  }
  jq_state *jq = jq_init();
  if (!jq) {
    snprintf(e->text, sizeof e->text, "jq_init failed");
    return NULL;
  }
  jq_set_error_cb(jq, on_error, e);
  jq_set_nomem_handler(jq, on_nomem, NULL);
  jq_set_attr(jq, jv_string("JQ_LIBRARY_PATH"), jv_array());
  jq_set_input_cb(jq, refuse_input, NULL);
  jq_set_debug_cb(jq, drop_debug, NULL);
  if (!jq_compile(jq, text)) {
    if (!e->text[0]) snprintf(e->text, sizeof e->text, "jq: compile error");
    jq_teardown(&jq);
    return NULL;
  }
  return jq;
}

/* ---- running ---- */

typedef struct outbuf {
  cebm_text t; /* the outputs, each NUL-terminated */
  uint32_t n;
} outbuf;

/* Appends v's JSON text and its NUL (mapper_json_out.h: libjq's own
 * printer is most of a worker's time). */
static int out_add(outbuf *o, jv v) {
  if (o->n >= CEBM_MAX_OUTPUTS) {
    jv_free(v);
    return -2;
  }
  size_t start = o->t.len;
  if (cebm_json_write(&o->t, v) != 0 || cebm_json_write_nul(&o->t) != 0)
    on_nomem(NULL);
  if (o->t.len > CEBM_MAX_TEXT) {
    o->t.len = start;
    return -3;
  }
  o->n++;
  return 0;
}

/* The reason of an error value: its string, else its JSON text. */
static void reason_of(jv msg, const char *prefix, char *buf, size_t cap) {
  if (jv_get_kind(msg) == JV_KIND_STRING) {
    snprintf(buf, cap, "%s%s", prefix, jv_string_value(msg));
  } else {
    jv s = jv_dump_string(jv_copy(msg), 0);
    snprintf(buf, cap, "%s%s (not a string)", prefix, jv_string_value(s));
    jv_free(s);
  }
  jv_free(msg);
}

static int run_item(jq_state *jq, uint32_t flags, const char *doc, uint32_t len,
                    outbuf *o) {
  char reason[CEBM_MAX_REASON];
  jv in = cebm_json_read(doc, len); /* libjq's own parser on anything odd */
  if (!jv_is_valid(in)) {
    reason_of(jv_invalid_get_msg(in), "input is not JSON: ", reason,
              sizeof reason);
    return answer_error(reason);
  }
  o->t.len = 0;
  o->n = 0;
  jq_start(jq, in, 0);
  int truth = -1, bad = 0;
  for (;;) {
    jv v = jq_next(jq);
    if (!jv_is_valid(v)) {
      if (jq_halted(jq)) {
        jv_free(v);
        jv m = jq_get_error_message(jq);
        if (jv_get_kind(m) == JV_KIND_STRING)
          reason_of(m, "halt_error: ", reason, sizeof reason);
        else {
          jv_free(m);
          snprintf(reason, sizeof reason, "the program halted");
        }
        return answer_error(reason);
      }
      if (jv_invalid_has_msg(jv_copy(v))) {
        reason_of(jv_invalid_get_msg(v), "", reason, sizeof reason);
        return answer_error(reason);
      }
      jv_free(v);
      break;
    }
    if (flags & CEBM_TRUTH) {
      jv_kind k = jv_get_kind(v);
      truth = k != JV_KIND_FALSE && k != JV_KIND_NULL;
      jv_free(v);
      break; /* the first output decides; the rest never runs */
    }
    if ((flags & CEBM_EXPAND) && jv_get_kind(v) == JV_KIND_ARRAY) {
      int n = jv_array_length(jv_copy(v));
      for (int i = 0; i < n && !bad; i++)
        bad = out_add(o, jv_array_get(jv_copy(v), i));
      jv_free(v);
    } else {
      bad = out_add(o, v);
    }
    if (bad) break;
  }
  if (bad == -2) {
    snprintf(reason, sizeof reason, "the program output more than %u values",
             CEBM_MAX_OUTPUTS);
    return answer_error(reason);
  }
  if (bad == -3) {
    snprintf(reason, sizeof reason, "the program output more than %u bytes",
             CEBM_MAX_TEXT);
    return answer_error(reason);
  }
  if (flags & CEBM_TRUTH)
    return truth == 1 ? answer(CEBM_ST_OK, 1, "true", 5)
                      : answer(CEBM_ST_OK, 1, "false", 6);
  return answer(CEBM_ST_OK, o->n, o->t.p, (uint32_t)o->t.len);
}

typedef struct item {
  uint32_t program, flags, len;
  char *doc;
} item;

typedef struct program {
  char *text;
  jq_state *jq;
  char *refused; /* a compile that failed: its reason, kept */
} program;

/* The orphan backstop (the file comment): an item runs under an alarm of
 * g_alarm_s + 1 s. Why not alarm() around each item: two syscalls per
 * item. The alarm is set again only when it was set 1 s ago or more (the
 * clock is read in the vDSO), so an item always has at least g_alarm_s
 * before it; it is never cleared: SIGALRM ends the worker only while an
 * item runs (g_running), and is ignored while it waits for a batch (the
 * read restarts; a closed socket ends it there). */
static unsigned g_alarm_s;
static volatile sig_atomic_t g_running;
static int64_t g_alarm_at_ms = INT64_MIN / 2;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_alarm(int sig) {
  if (!g_running) return;
  signal(sig, SIG_DFL); /* ended by the signal, as alarm() alone did */
  raise(sig);
}

static void alarm_for_item(void) {
  int64_t now = mono_ms();
  if (now - g_alarm_at_ms >= 1000) {
    alarm(g_alarm_s + 1);
    g_alarm_at_ms = now;
  }
}

static int run_program(program *p, const item *it, outbuf *o, int last) {
  if (!p->jq && !p->refused) {
    errbuf e;
    p->jq = compile(p->text, &e);
    if (!p->jq) p->refused = strdup(e.text);
    if (!p->jq && !p->refused) on_nomem(NULL);
    /* the host's clock for this item starts now */
    if (answer(CEBM_ST_COMPILED, 0, NULL, 0) != 0) return -1;
  }
  g_last = last;
  int rc;
  if (p->refused) {
    rc = answer_error(p->refused);
  } else {
    alarm_for_item();
    g_running = 1;
    rc = run_item(p->jq, it->flags, it->doc, it->len, o);
    g_running = 0;
  }
  g_last = 0;
  return rc;
}

static int serve(program *progs, uint32_t nprogs) {
  outbuf o = {0};
  for (;;) {
    uint32_t count;
    if (read_u32(&count) != 0) return 0; /* the host closed: done */
    item *items = calloc(count ? count : 1, sizeof *items);
    if (!items) on_nomem(NULL);
    for (uint32_t i = 0; i < count; i++) {
      uint32_t h[3];
      if (read_all(h, sizeof h) != 0 || h[2] > CEBM_MAX_TEXT) return 1;
      items[i] = (item){h[0], h[1], h[2], malloc((size_t)h[2] + 1)};
      if (!items[i].doc) on_nomem(NULL);
      if (read_all(items[i].doc, h[2]) != 0) return 1;
      items[i].doc[h[2]] = '\0';
    }
    for (uint32_t i = 0; i < count; i++) {
      int last = i + 1 == count;
      int rc;
      if (items[i].program < nprogs) {
        rc = run_program(&progs[items[i].program], &items[i], &o, last);
      } else {
        g_last = last;
        rc = answer_error("no such program");
        g_last = 0;
      }
      free(items[i].doc);
      if (rc != 0) return 1;
    }
    free(items);
    if (flush_out() != 0) return 1; /* the batch's last answers */
  }
}

static void sandbox(uint32_t memory_mib) {
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2 && null != g_fd) close(null);
  }
  if (chdir("/") != 0) _exit(2);
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  if (memory_mib) {
    rlim_t bytes = (rlim_t)memory_mib * 1024 * 1024;
    struct rlimit as = {bytes, bytes};
    setrlimit(RLIMIT_AS, &as);
  }
  struct rlimit files = {CEBM_FD + 1, CEBM_FD + 1};
  setrlimit(RLIMIT_NOFILE, &files);
}

/* CEBM_INIT_CHECK: compile each program, answer each, exit. */
static int check(program *progs, uint32_t nprogs) {
  int refused = 0;
  for (uint32_t i = 0; i < nprogs; i++) {
    errbuf e;
    jq_state *jq = compile(progs[i].text, &e);
    refused |= !jq;
    size_t len = jq ? 0 : strnlen(e.text, sizeof e.text);
    uint32_t a[2] = {jq ? 0u : 1u, (uint32_t)len};
    if (jq) jq_teardown(&jq);
    if (write_all(a, sizeof a) != 0 || (len && write_all(e.text, len) != 0))
      return 2;
  }
  return refused;
}

int main(void) {
  /* Only the socket the host passed: anything else inherited is closed. */
  for (int fd = CEBM_FD + 1; fd < 1024; fd++)
    close(fd);
  g_in = malloc(IN_BYTES); /* NULL: unbuffered reads */
  uint32_t h[6];
  if (read_all(h, sizeof h) != 0 || h[0] != CEBM_MAGIC || h[1] != CEBM_VERSION)
    return 2;
  uint32_t flags = h[2], nprogs = h[5];
  /* the orphan backstop: twice the host's timeout, whole seconds */
  g_alarm_s = (unsigned)((2ull * h[4] + 999) / 1000);
  if (g_alarm_s < 1) g_alarm_s = 1;
  program *progs = calloc(nprogs ? nprogs : 1, sizeof *progs);
  if (!progs) return 2;
  for (uint32_t i = 0; i < nprogs; i++) {
    uint32_t len;
    if (read_u32(&len) != 0 || len > CEBM_MAX_TEXT) return 2;
    progs[i].text = malloc((size_t)len + 1);
    if (!progs[i].text || read_all(progs[i].text, len) != 0) return 2;
    progs[i].text[len] = '\0';
  }
  /* the answers' buffer and timer, before the memory limit */
  if (!(g_out = malloc(2 * FLUSH_BYTES))) return 2;
  struct sigaction al = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
  sigemptyset(&al.sa_mask);
  if (sigaction(SIGALRM, &al, NULL) != 0) return 2;
  struct sigaction sa = {.sa_handler = on_flush_timer, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
  g_timer_ok = sigaction(SIGUSR1, &sa, NULL) == 0 &&
               timer_create(CLOCK_MONOTONIC, &sev, &g_timer) == 0;
  sandbox(h[3]);
  int rc =
      flags & CEBM_INIT_CHECK ? check(progs, nprogs) : serve(progs, nprogs);
  for (uint32_t i = 0; i < nprogs; i++) {
    if (progs[i].jq) jq_teardown(&progs[i].jq);
    free(progs[i].text);
    free(progs[i].refused);
  }
  free(progs);
  return rc;
}
