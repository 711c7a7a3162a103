#include "ceb_bench_receiver.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ceb_bench_receiver {
  struct MHD_Daemon *d;
  int port, keys, conns;
  pthread_mutex_t lock;
  long *last; /* per (key, connection): latest sequence number, -1 none */
  ceb_bench_rx_counts n;
};

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* id "PREFIX-CONN-SEQ": the last two '-'-separated fields are numbers. */
static int parse_id(const char *id, long *conn, long *seq) {
  const char *d2 = id ? strrchr(id, '-') : NULL;
  if (!d2 || d2 == id) return -1;
  const char *d1 = d2 - 1;
  while (d1 > id && *d1 != '-')
    d1--;
  char *e1, *e2;
  *conn = strtol(d1 + 1, &e1, 10);
  *seq = strtol(d2 + 1, &e2, 10);
  return *d1 == '-' && e1 == d2 && *e2 == '\0' && *conn >= 0 && *seq >= 0 ? 0
                                                                          : -1;
}

static void record(ceb_bench_receiver *rx, const char *id, const char *subj) {
  long conn = -1, seq = -1, key = -1;
  if (subj && !strncmp(subj, "key-", 4)) key = strtol(subj + 4, NULL, 10);
  int ok = parse_id(id, &conn, &seq) == 0 && conn < rx->conns && key >= 0 &&
           key < rx->keys;
  pthread_mutex_lock(&rx->lock);
  int64_t t = now_us();
  if (!rx->n.first_us) rx->n.first_us = t;
  rx->n.last_us = t;
  long *last = ok ? &rx->last[key * rx->conns + conn] : NULL;
  if (!ok)
    rx->n.unparsable++;
  else if (seq > *last) {
    *last = seq;
    rx->n.delivered++;
  } else if (seq == *last)
    rx->n.duplicates++;
  else if (!rx->n.disorder++) {
    rx->n.bad_key = key;
    rx->n.bad_conn = conn;
    rx->n.bad_seq = seq;
    rx->n.bad_last = *last;
  }
  pthread_mutex_unlock(&rx->lock);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **ctx) {
  (void)url;
  (void)version;
  (void)data;
  static int first_call;
  if (!*ctx) {
    *ctx = &first_call;
    return MHD_YES;
  }
  if (*size) { /* the body is not needed: consume it */
    *size = 0;
    return MHD_YES;
  }
  unsigned code = MHD_HTTP_NO_CONTENT;
  if (!strcmp(method, "POST"))
    record(cls, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-id"),
           MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-subject"));
  else
    code = MHD_HTTP_METHOD_NOT_ALLOWED;
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  enum MHD_Result r = MHD_queue_response(c, code, resp);
  MHD_destroy_response(resp);
  return r;
}

ceb_bench_receiver *ceb_bench_receiver_start(int keys, int conns, int threads) {
  ceb_bench_receiver *rx = calloc(1, sizeof *rx);
  if (!rx || keys < 1 || conns < 1 || (long)keys * conns > 16L << 20) goto fail;
  rx->keys = keys;
  rx->conns = conns;
  size_t pairs = (size_t)keys * (size_t)conns;
  rx->last = malloc(sizeof *rx->last * pairs);
  if (!rx->last) goto fail;
  pthread_mutex_init(&rx->lock, NULL);
  for (size_t i = 0; i < pairs; i++)
    rx->last[i] = -1;
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  rx->d =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL,
                       NULL, on_request, rx, MHD_OPTION_THREAD_POOL_SIZE,
                       (unsigned)threads, MHD_OPTION_CONNECTION_LIMIT, 1024u,
                       MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
  if (!rx->d) {
    pthread_mutex_destroy(&rx->lock);
    goto fail;
  }
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(rx->d, MHD_DAEMON_INFO_BIND_PORT);
  rx->port = di ? di->port : 0;
  return rx;
fail:
  fprintf(stderr, "bench: receiver did not start\n");
  if (rx) free(rx->last);
  free(rx);
  return NULL;
}

int ceb_bench_receiver_port(const ceb_bench_receiver *rx) {
  return rx->port;
}

void ceb_bench_receiver_reset(ceb_bench_receiver *rx) {
  pthread_mutex_lock(&rx->lock);
  memset(&rx->n, 0, sizeof rx->n);
  pthread_mutex_unlock(&rx->lock);
}

void ceb_bench_receiver_snapshot(ceb_bench_receiver *rx,
                                 ceb_bench_rx_counts *out) {
  pthread_mutex_lock(&rx->lock);
  *out = rx->n;
  pthread_mutex_unlock(&rx->lock);
}

void ceb_bench_receiver_stop(ceb_bench_receiver *rx) {
  if (!rx) return;
  MHD_stop_daemon(rx->d);
  pthread_mutex_destroy(&rx->lock);
  free(rx->last);
  free(rx);
}
