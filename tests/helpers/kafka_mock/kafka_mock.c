/* ceb-kafka-mock: librdkafka's mock cluster as a standalone process.
 *
 * Usage: ceb-kafka-mock [-b BROKERS] [-t TOPIC:PARTITIONS]...
 *
 * Starts an in-process mock cluster of BROKERS brokers (default 1) on
 * loopback ephemeral ports, pre-creates the given topics (replication factor
 * 1), prints the bootstrap servers as one line on stdout and then serves
 * commands, one per line on stdin, answering each with one line "ok" or
 * "error <text>" so a test can wait for a command to take effect:
 *
 *   topic <name> <partitions>               create a topic
 *   push_errors <apikey> <count> <err>...   the next <count> requests of
 *                                           <apikey> fail, with the given
 *                                           error codes in order (one <err>
 *                                           repeats for every request)
 *   clear_errors <apikey>                   drop pending injected errors
 *   broker_down <id> / broker_up <id>       take a broker off / on line
 *   rtt <id> <ms>                           delay every response of broker
 *                                           <id> (-1: all brokers) by <ms>
 *   topic_error <name> <err>                metadata error for a topic
 *
 * Error codes are numeric (rd_kafka_resp_err_t / Kafka protocol codes) and
 * API keys are Kafka protocol numbers (Produce = 0, Fetch = 1, ...).
 * The process exits 0 when stdin closes or on SIGTERM / SIGINT. */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ERRS 64

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int create_topic(rd_kafka_mock_cluster_t *mc, const char *name,
                        long partitions, char *msg, size_t msgsz) {
  rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(mc, name, (int)partitions, 1);
  if (err) {
    snprintf(msg, msgsz, "topic %s: %s", name, rd_kafka_err2str(err));
    return -1;
  }
  return 0;
}

/* Splits line into at most max whitespace-separated words. */
static int split(char *line, char **argv, int max) {
  int n = 0;
  for (char *save = NULL, *w = strtok_r(line, " \t\r\n", &save); w && n < max;
       w = strtok_r(NULL, " \t\r\n", &save))
    argv[n++] = w;
  return n;
}

/* Runs one command; 0 ok, -1 with msg filled. */
static int run_command(rd_kafka_mock_cluster_t *mc, char *line, char *msg,
                       size_t msgsz) {
  char *argv[MAX_ERRS + 4];
  int argc = split(line, argv, MAX_ERRS + 4);
  long a, b;
  if (argc == 0) {
    snprintf(msg, msgsz, "empty command");
    return -1;
  }
  if (!strcmp(argv[0], "topic") && argc == 3) {
    if (parse_long(argv[2], 1, 10000, &a)) {
      snprintf(msg, msgsz, "bad partition count '%s'", argv[2]);
      return -1;
    }
    return create_topic(mc, argv[1], a, msg, msgsz);
  }
  if (!strcmp(argv[0], "push_errors") && argc >= 4) {
    if (parse_long(argv[1], 0, 32767, &a) ||
        parse_long(argv[2], 1, 100000, &b)) {
      snprintf(msg, msgsz, "bad apikey or count");
      return -1;
    }
    int nerr = argc - 3;
    if (nerr != 1 && nerr != b) {
      snprintf(msg, msgsz, "give one error code or <count> of them");
      return -1;
    }
    rd_kafka_resp_err_t *errs = calloc((size_t)b, sizeof *errs);
    if (!errs) {
      snprintf(msg, msgsz, "out of memory");
      return -1;
    }
    for (long i = 0; i < b; i++) {
      long e;
      if (parse_long(argv[3 + (nerr == 1 ? 0 : i)], -200, 200, &e)) {
        free(errs);
        snprintf(msg, msgsz, "bad error code");
        return -1;
      }
      errs[i] = (rd_kafka_resp_err_t)e;
    }
    rd_kafka_mock_push_request_errors_array(mc, (int16_t)a, (size_t)b, errs);
    free(errs);
    return 0;
  }
  if (!strcmp(argv[0], "clear_errors") && argc == 2) {
    if (parse_long(argv[1], 0, 32767, &a)) {
      snprintf(msg, msgsz, "bad apikey");
      return -1;
    }
    rd_kafka_mock_clear_request_errors(mc, (int16_t)a);
    return 0;
  }
  if ((!strcmp(argv[0], "broker_down") || !strcmp(argv[0], "broker_up")) &&
      argc == 2) {
    if (parse_long(argv[1], 0, 1000, &a)) {
      snprintf(msg, msgsz, "bad broker id");
      return -1;
    }
    rd_kafka_resp_err_t err =
        argv[0][7] == 'd' ? rd_kafka_mock_broker_set_down(mc, (int32_t)a)
                          : rd_kafka_mock_broker_set_up(mc, (int32_t)a);
    if (err) {
      snprintf(msg, msgsz, "%s", rd_kafka_err2str(err));
      return -1;
    }
    return 0;
  }
  if (!strcmp(argv[0], "rtt") && argc == 3) {
    if (parse_long(argv[1], -1, 1000, &a) ||
        parse_long(argv[2], 0, 60000, &b)) {
      snprintf(msg, msgsz, "bad broker id or delay");
      return -1;
    }
    rd_kafka_resp_err_t err =
        rd_kafka_mock_broker_set_rtt(mc, (int32_t)a, (int)b);
    if (err) {
      snprintf(msg, msgsz, "%s", rd_kafka_err2str(err));
      return -1;
    }
    return 0;
  }
  if (!strcmp(argv[0], "topic_error") && argc == 3) {
    if (parse_long(argv[2], -200, 200, &a)) {
      snprintf(msg, msgsz, "bad error code");
      return -1;
    }
    rd_kafka_mock_topic_set_error(mc, argv[1], (rd_kafka_resp_err_t)a);
    return 0;
  }
  snprintf(msg, msgsz, "unknown command or wrong arguments: %s", argv[0]);
  return -1;
}

static void usage(void) {
  fprintf(stderr,
          "usage: ceb-kafka-mock [-b BROKERS] [-t TOPIC:PARTITIONS]...\n");
}

int main(int argc, char **argv) {
  long brokers = 1;
  int opt;
  /* Topics are created after the cluster exists: remember the arguments. */
  char **topics = calloc((size_t)argc, sizeof *topics);
  int ntopics = 0;
  if (!topics) return 1;
  while ((opt = getopt(argc, argv, "b:t:h")) != -1) {
    if (opt == 'b' && !parse_long(optarg, 1, 16, &brokers)) continue;
    if (opt == 't' && strchr(optarg, ':')) {
      topics[ntopics++] = optarg;
      continue;
    }
    usage();
    free(topics);
    return 2;
  }

  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  /* The handle only hosts the cluster: keep it quiet and off the network. */
  if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr)) {
    fprintf(stderr, "ceb-kafka-mock: %s\n", errstr);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    fprintf(stderr, "ceb-kafka-mock: rd_kafka_new: %s\n", errstr);
    free(topics);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, (int)brokers);
  if (!mc) {
    fprintf(stderr, "ceb-kafka-mock: cannot create the mock cluster\n");
    rd_kafka_destroy(rk);
    free(topics);
    return 1;
  }
  int rc = 0;
  for (int i = 0; i < ntopics && rc == 0; i++) {
    char *colon = strrchr(topics[i], ':');
    long parts;
    *colon = '\0';
    if (parse_long(colon + 1, 1, 10000, &parts)) {
      fprintf(stderr, "ceb-kafka-mock: bad partition count in -t %s\n",
              topics[i]);
      rc = 2;
    } else if (create_topic(mc, topics[i], parts, errstr, sizeof errstr)) {
      fprintf(stderr, "ceb-kafka-mock: %s\n", errstr);
      rc = 1;
    }
  }
  free(topics);

  if (rc == 0) {
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
  }

  char line[4096];
  size_t used = 0;
  while (rc == 0 && !stop_requested) {
    struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
    int n = poll(&pfd, 1, 200);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (n == 0) continue;
    ssize_t got = read(STDIN_FILENO, line + used, sizeof line - 1 - used);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break; /* stdin closed: the test is done with us */
    used += (size_t)got;
    line[used] = '\0';
    char *nl;
    while ((nl = strchr(line, '\n')) != NULL) {
      *nl = '\0';
      char msg[512];
      if (run_command(mc, line, msg, sizeof msg) == 0)
        printf("ok\n");
      else
        printf("error %s\n", msg);
      fflush(stdout);
      size_t rest = used - (size_t)(nl + 1 - line);
      memmove(line, nl + 1, rest + 1);
      used = rest;
    }
    if (used == sizeof line - 1) {
      printf("error line too long\n");
      fflush(stdout);
      used = 0;
    }
  }

  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return rc;
}
