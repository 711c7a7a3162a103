#include "ha_receiver.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ha_receiver {
  struct MHD_Daemon *d;
  int port, clients, per_client, keys;
  unsigned status;
  int delay_ms;
  pthread_mutex_t lock;
  int *times; /* per event */
  long *last; /* per (client, key): latest n delivered, -1 none */
  ha_rx_counts n;
};

typedef struct req_ctx {
  char *body;
  size_t len;
} req_ctx;

/* "ha-<client>-<n>" */
static int parse_id(const char *id, int *c, int *n) {
  if (!id || strncmp(id, "ha-", 3) != 0) return -1;
  char *e1, *e2;
  long cl = strtol(id + 3, &e1, 10);
  if (*e1 != '-') return -1;
  long nl = strtol(e1 + 1, &e2, 10);
  if (*e2 || cl < 0 || nl < 0 || cl > 1000000 || nl > 100000000) return -1;
  *c = (int)cl;
  *n = (int)nl;
  return 0;
}

static void record(ha_receiver *rx, const char *id) {
  int c = -1, n = -1;
  int ok = parse_id(id, &c, &n) == 0 && c < rx->clients && n < rx->per_client;
  pthread_mutex_lock(&rx->lock);
  rx->n.requests++;
  if (!ok) {
    rx->n.unparsable++;
  } else {
    long *last = &rx->last[c * rx->keys + n % rx->keys];
    if (rx->times[c * rx->per_client + n]++ == 0)
      rx->n.delivered++;
    else
      rx->n.duplicates++;
    if (n < *last) {
      if (!rx->n.disorder++)
        snprintf(rx->n.first_disorder, sizeof rx->n.first_disorder,
                 "ha-%d-%d after ha-%d-%ld (key k-%d-%d)", c, n, c, *last, c,
                 n % rx->keys);
    } else {
      *last = n;
    }
  }
  pthread_mutex_unlock(&rx->lock);
}

/* The id of a structured-mode body, malloc'd, or NULL. */
static char *body_id(const char *body, size_t len) {
  json_t *j = json_loadb(body, len, 0, NULL);
  const char *id = json_string_value(json_object_get(j, "id"));
  char *out = id ? strdup(id) : NULL;
  json_decref(j);
  return out;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **ctx) {
  (void)url;
  (void)version;
  ha_receiver *rx = cls;
  req_ctx *r = *ctx;
  if (!r) {
    *ctx = r = calloc(1, sizeof *r);
    return r ? MHD_YES : MHD_NO;
  }
  if (*size) {
    if (r->len < 65536) {
      char *g = realloc(r->body, r->len + *size + 1);
      if (!g) return MHD_NO;
      r->body = g;
      memcpy(r->body + r->len, data, *size);
      r->len += *size;
      r->body[r->len] = 0;
    }
    *size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&rx->lock);
  unsigned code = rx->status;
  int delay_ms = rx->delay_ms;
  pthread_mutex_unlock(&rx->lock);
  if (delay_ms > 0) { /* a slow receiver: claims stay open that long */
    struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (strcmp(method, "POST") != 0) {
    code = MHD_HTTP_METHOD_NOT_ALLOWED;
  } else if (code < 300) {
    const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-id");
    char *sid = id ? NULL : body_id(r->body, r->len);
    record(rx, id ? id : sid);
    free(sid);
  }
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  enum MHD_Result res = MHD_queue_response(c, code, resp);
  MHD_destroy_response(resp);
  return res;
}

static void on_done(void *cls, struct MHD_Connection *c, void **ctx,
                    enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  req_ctx *r = *ctx;
  if (r) free(r->body);
  free(r);
  *ctx = NULL;
}

ha_receiver *ha_receiver_start(int clients, int per_client, int keys) {
  ha_receiver *rx = calloc(1, sizeof *rx);
  if (!rx || clients < 1 || per_client < 1 || keys < 1) goto fail;
  rx->clients = clients;
  rx->per_client = per_client;
  rx->keys = keys;
  rx->status = MHD_HTTP_NO_CONTENT;
  rx->times = calloc((size_t)clients * per_client, sizeof *rx->times);
  rx->last = malloc(sizeof *rx->last * (size_t)clients * keys);
  if (!rx->times || !rx->last) goto fail;
  for (int i = 0; i < clients * keys; i++)
    rx->last[i] = -1;
  pthread_mutex_init(&rx->lock, NULL);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  /* A thread per connection: a delayed answer holds only its own. */
  rx->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                               MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
                           0, NULL, NULL, on_request, rx,
                           MHD_OPTION_CONNECTION_LIMIT, 256u,
                           MHD_OPTION_NOTIFY_COMPLETED, on_done, rx,
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
  fprintf(stderr, "ha: the webhook receiver did not start\n");
  if (rx) {
    free(rx->times);
    free(rx->last);
  }
  free(rx);
  return NULL;
}

int ha_receiver_port(const ha_receiver *rx) {
  return rx->port;
}

void ha_receiver_counts(ha_receiver *rx, ha_rx_counts *out) {
  pthread_mutex_lock(&rx->lock);
  *out = rx->n;
  pthread_mutex_unlock(&rx->lock);
}

int ha_receiver_times(ha_receiver *rx, int client, int n) {
  if (client < 0 || client >= rx->clients || n < 0 || n >= rx->per_client)
    return 0;
  pthread_mutex_lock(&rx->lock);
  int t = rx->times[client * rx->per_client + n];
  pthread_mutex_unlock(&rx->lock);
  return t;
}

void ha_receiver_answer(ha_receiver *rx, unsigned status) {
  pthread_mutex_lock(&rx->lock);
  rx->status = status;
  pthread_mutex_unlock(&rx->lock);
}

void ha_receiver_delay(ha_receiver *rx, int ms) {
  pthread_mutex_lock(&rx->lock);
  rx->delay_ms = ms;
  pthread_mutex_unlock(&rx->lock);
}

void ha_receiver_stop(ha_receiver *rx) {
  if (!rx) return;
  MHD_stop_daemon(rx->d);
  pthread_mutex_destroy(&rx->lock);
  free(rx->times);
  free(rx->last);
  free(rx);
}
