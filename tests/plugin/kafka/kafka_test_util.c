#include "kafka_test_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "config/ceb_core_spec.h"

int ktest_mock_start(ktest_mock *m, const char *const *topics) {
  int to_child[2], from_child[2];
  memset(m, 0, sizeof *m);
  m->pid = -1;
  if (pipe(to_child) || pipe(from_child)) return -1;
  const char *argv[64];
  int argc = 0;
  argv[argc++] = CEB_TEST_BIN_DIR "/ceb-kafka-mock";
  for (size_t i = 0; topics && topics[i] && argc < 60; i++) {
    argv[argc++] = "-t";
    argv[argc++] = topics[i];
  }
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    execv(argv[0], (char *const *)argv);
    perror("exec ceb-kafka-mock");
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  m->pid = pid;
  m->in_fd = to_child[1];
  m->out = fdopen(from_child[0], "r");
  if (!m->out || !fgets(m->bootstrap, sizeof m->bootstrap, m->out)) {
    fprintf(stderr, "ceb-kafka-mock did not print its bootstrap servers\n");
    ktest_mock_stop(m);
    return -1;
  }
  m->bootstrap[strcspn(m->bootstrap, "\r\n")] = '\0';
  return 0;
}

int ktest_mock_cmd(ktest_mock *m, const char *cmd) {
  char line[512];
  size_t n = strlen(cmd);
  if (write(m->in_fd, cmd, n) != (ssize_t)n || write(m->in_fd, "\n", 1) != 1)
    return -1;
  if (!fgets(line, sizeof line, m->out)) return -1;
  if (strncmp(line, "ok", 2) != 0) {
    fprintf(stderr, "mock: %s -> %s", cmd, line);
    return -1;
  }
  return 0;
}

void ktest_mock_stop(ktest_mock *m) {
  if (m->in_fd > 0) close(m->in_fd);
  m->in_fd = -1;
  if (m->pid > 0) {
    int64_t until = ceb_test_now_ms() + 10000;
    int status;
    while (waitpid(m->pid, &status, WNOHANG) == 0) {
      if (ceb_test_now_ms() > until) {
        kill(m->pid, SIGKILL);
        waitpid(m->pid, &status, 0);
        break;
      }
      usleep(10000);
    }
  }
  m->pid = -1;
  if (m->out) fclose(m->out);
  m->out = NULL;
}

static int validating_submit(ceb_instance *inst, ceb_event *const *events,
                             size_t count, const ceb_submit_opts *opts,
                             ceb_submit_cb cb, void *cb_arg) {
  ceb_fake_host *f = inst->runtime_data;
  ceb_violations local;
  ceb_violations *v = opts && opts->violations ? opts->violations : &local;
  for (size_t i = 0; events && i < count; i++) {
    if (events[i] && ceb_event_validate(events[i], NULL, v) > 0) {
      if (opts && opts->failed_index) *opts->failed_index = i;
      return CEB_EVALIDATION;
    }
  }
  return f->host.submit(inst, events, count, opts, cb, cb_arg);
}

void ktest_validating_host(const ceb_fake_host *f, ceb_host *out) {
  *out = f->host;
  out->submit = validating_submit;
}

const ceb_plugin *ktest_plugin(void **dl) {
  *dl = dlopen(CEB_PLUGIN_DIR "/kafka.so", RTLD_NOW | RTLD_LOCAL);
  if (!*dl) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return NULL;
  }
  ceb_plugin_query_fn q =
      (ceb_plugin_query_fn)dlsym(*dl, CEB_PLUGIN_QUERY_SYMBOL);
  const ceb_plugin *p = q ? q(CEB_ABI_MAJOR, CEB_ABI_MINOR) : NULL;
  if (!p) fprintf(stderr, "kafka.so: no descriptor\n");
  return p;
}

void ktest_plugin_close(void *dl) {
  if (dl && !getenv("KTEST_NO_DLCLOSE")) dlclose(dl);
}

ceb_config *ktest_config(const ceb_plugin *p, uint32_t role,
                         const char *const *kv) {
  ceb_config *cfg = cebi_config_new("test");
  if (!cfg) return NULL;
  cebi_config_put(cfg, "plugin", "kafka", "test.conf", 1);
  for (int i = 0; kv[i]; i += 2)
    cebi_config_put(cfg, kv[i], kv[i + 1], "test.conf", 2 + i / 2);
  if (role == CEB_ROLE_SOURCE)
    cebi_config_set_spec(cfg, p->config_source, ceb_spec_source_common);
  else
    cebi_config_set_spec(cfg, p->config_sink, ceb_spec_sink_common);
  return cfg;
}

static rd_kafka_conf_t *base_conf(const char *bootstrap) {
  char err[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err);
  rd_kafka_conf_set(c, "log_level", "3", err, sizeof err);
  return c;
}

static void produce_dr(rd_kafka_t *rk, const rd_kafka_message_t *m,
                       void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->_private) /* records produced without a result slot */
    *(rd_kafka_resp_err_t *)m->_private = m->err;
}

rd_kafka_t *ktest_producer(const char *bootstrap) {
  return ktest_producer_linger(bootstrap, NULL);
}

rd_kafka_t *ktest_producer_linger(const char *bootstrap, const char *linger) {
  char err[256];
  rd_kafka_conf_t *c = base_conf(bootstrap);
  rd_kafka_conf_set(c, "acks", "all", err, sizeof err);
  if (linger) {
    rd_kafka_conf_set(c, "linger.ms", linger, err, sizeof err);
    rd_kafka_conf_set(c, "batch.num.messages", "100000", err, sizeof err);
  }
  rd_kafka_conf_set_dr_msg_cb(c, produce_dr);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
  if (!rk) fprintf(stderr, "producer: %s\n", err);
  return rk;
}

int ktest_produce(rd_kafka_t *p, const char *topic, int32_t partition,
                  const char *key, const void *value, size_t len,
                  const ceb_headers *headers) {
  rd_kafka_headers_t *h = rd_kafka_headers_new(8);
  for (size_t i = 0; headers && i < headers->count; i++)
    rd_kafka_header_add(h, headers->items[i].name, -1, headers->items[i].value,
                        (ssize_t)headers->items[i].value_len);
  rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__IN_PROGRESS;
  rd_kafka_resp_err_t e = rd_kafka_producev(
      p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
      RD_KAFKA_V_VALUE((void *)value, len),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
      RD_KAFKA_V_OPAQUE(&result), RD_KAFKA_V_END);
  if (e) {
    rd_kafka_headers_destroy(h);
    fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
    return -1;
  }
  int64_t until = ceb_test_now_ms() + 20000;
  while (result == RD_KAFKA_RESP_ERR__IN_PROGRESS && ceb_test_now_ms() < until)
    rd_kafka_flush(p, 100);
  if (result) fprintf(stderr, "produce report: %s\n", rd_kafka_err2str(result));
  return result == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
}

rd_kafka_t *ktest_reader(const char *bootstrap, const char *topic,
                         int partitions) {
  char err[256];
  rd_kafka_conf_t *c = base_conf(bootstrap);
  rd_kafka_conf_set(c, "group.id", "ktest-reader", err, sizeof err);
  rd_kafka_conf_set(c, "enable.auto.commit", "false", err, sizeof err);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "reader: %s\n", err);
    return NULL;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *l =
      rd_kafka_topic_partition_list_new(partitions);
  for (int i = 0; i < partitions; i++)
    rd_kafka_topic_partition_list_add(l, topic, i)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  return rk;
}

size_t ktest_read(rd_kafka_t *c, rd_kafka_message_t **out, size_t n,
                  int64_t timeout_ms) {
  size_t got = 0;
  int64_t until = ceb_test_now_ms() + timeout_ms;
  while (got < n && ceb_test_now_ms() < until) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    if (!m) continue;
    if (m->err) {
      rd_kafka_message_destroy(m);
      continue;
    }
    out[got++] = m;
  }
  return got;
}

void ktest_reader_close(rd_kafka_t *c) {
  if (!c) return;
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
}

int64_t ktest_committed(const char *bootstrap, const char *group,
                        const char *topic, int32_t partition) {
  char err[256];
  rd_kafka_conf_t *c = base_conf(bootstrap);
  rd_kafka_conf_set(c, "group.id", group, err, sizeof err);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (!rk) return -2000;
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic, partition);
  int64_t off = -2000;
  if (rd_kafka_committed(rk, l, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      !l->elems[0].err)
    off = l->elems[0].offset;
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(rk);
  return off;
}

char *ktest_header(const rd_kafka_message_t *m, const char *name) {
  rd_kafka_headers_t *h = NULL;
  const void *v;
  size_t sz;
  if (rd_kafka_message_headers(m, &h) ||
      rd_kafka_header_get_last(h, name, &v, &sz))
    return NULL;
  char *s = malloc(sz + 1);
  if (s) {
    memcpy(s, v, sz);
    s[sz] = '\0';
  }
  return s;
}
