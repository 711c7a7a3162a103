/* Scripted libmicrohttpd receiver (see ceb_test_rx.h). */
#include "ceb_test_rx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <jansson.h>
#include <microhttpd.h>

#include "ceb_test.h"

/* Records grow as requests come (a load test receives thousands); past
 * this many the receiver answers 507 rather than grow without bound. */
#define RX_MAX_REQUESTS (1024 * 1024)
#define RX_MAX_BODY (4 * 1024 * 1024)

struct rx_server {
  struct MHD_Daemon *daemon;
  int port;
  rx_handler handler;
  void *arg;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  rx_request **reqs; /* the records, grown under lock */
  size_t count, cap;
  int stopping;
};

typedef struct rx_conn {
  rx_request *req;
} rx_conn;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind,
                                      const char *key, const char *value) {
  (void)kind;
  rx_request *req = cls;
  ceb_headers_add(&req->headers, key, value ? value : "",
                  value ? strlen(value) : 0);
  return MHD_YES;
}

static void hold(rx_server *rx, int delay_ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += delay_ms / 1000;
  until.tv_nsec += (long)(delay_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&rx->lock);
  while (!rx->stopping &&
         pthread_cond_timedwait(&rx->cond, &rx->lock, &until) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&rx->lock);
}

/* The CloudEvent id a request carries: ce-id (binary mode) or the "id" of a
 * structured JSON body; NULL for anything else (batches, other requests). */
static char *event_id_of(const rx_request *r) {
  const char *h = ceb_headers_get(&r->headers, "ce-id");
  if (h) return strdup(h);
  if (!r->len || r->body[0] != '{') return NULL;
  json_t *j = json_loadb(r->body, r->len, 0, NULL);
  const char *id = json_string_value(json_object_get(j, "id"));
  char *out = id ? strdup(id) : NULL;
  json_decref(j);
  return out;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *data_size, void **con_cls) {
  (void)version;
  rx_server *rx = cls;
  rx_conn *c = *con_cls;
  if (!c) {
    c = calloc(1, sizeof(*c));
    c->req = calloc(1, sizeof(*c->req));
    snprintf(c->req->method, sizeof(c->req->method), "%s", method);
    snprintf(c->req->path, sizeof(c->req->path), "%s", url);
    c->req->body = calloc(1, 1);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, c->req);
    const union MHD_ConnectionInfo *peer =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (peer && peer->client_addr && peer->client_addr->sa_family == AF_INET)
      c->req->client_port =
          ntohs(((const struct sockaddr_in *)peer->client_addr)->sin_port);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (ci && ci->tls_session) {
      unsigned int n = 0;
      if (gnutls_certificate_get_peers((gnutls_session_t)ci->tls_session, &n))
        c->req->client_certs = (int)n;
    }
    *con_cls = c;
    return MHD_YES;
  }
  if (*data_size) {
    rx_request *r = c->req;
    if (r->len + *data_size <= RX_MAX_BODY) {
      r->body = realloc(r->body, r->len + *data_size + 1);
      memcpy(r->body + r->len, data, *data_size);
      r->len += *data_size;
      r->body[r->len] = '\0';
    }
    *data_size = 0;
    return MHD_YES;
  }
  c->req->event_id = event_id_of(c->req);
  pthread_mutex_lock(&rx->lock);
  size_t index = (size_t)-1;
  if (rx->count == rx->cap && rx->cap < RX_MAX_REQUESTS) {
    size_t cap = rx->cap ? rx->cap * 2 : 64;
    rx_request **grown = realloc(rx->reqs, cap * sizeof *grown);
    if (grown) {
      rx->reqs = grown;
      rx->cap = cap;
    }
  }
  if (rx->count < rx->cap) {
    index = rx->count;
    rx->reqs[rx->count++] = c->req;
  }
  pthread_cond_broadcast(&rx->cond);
  pthread_mutex_unlock(&rx->lock);
  rx_response resp = {.status = 200};
  if (index != (size_t)-1) {
    rx_request *req = c->req;
    c->req = NULL; /* owned by the server now */
    if (rx->handler) rx->handler(rx->arg, req, index, &resp);
  } else {
    resp.status = 507;
  }
  if (resp.delay_ms > 0) hold(rx, resp.delay_ms);
  struct MHD_Response *mr = MHD_create_response_from_buffer(
      resp.len, resp.body, MHD_RESPMEM_MUST_COPY);
  for (size_t i = 0; i < resp.headers.count; i++)
    MHD_add_response_header(mr, resp.headers.items[i].name,
                            resp.headers.items[i].value);
  ceb_headers_clear(&resp.headers);
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)resp.status, mr);
  MHD_destroy_response(mr);
  return ret;
}

static void request_free(rx_request *r) {
  if (!r) return;
  free(r->event_id);
  ceb_headers_clear(&r->headers);
  free(r->body);
  free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)conn;
  (void)toe;
  rx_conn *c = *con_cls;
  if (c) {
    request_free(c->req);
    free(c);
    *con_cls = NULL;
  }
}

rx_server *rx_start(rx_handler handler, void *arg) {
  return rx_start_tls(handler, arg, NULL, NULL, NULL);
}

rx_server *rx_start_tls(rx_handler handler, void *arg, const char *key_pem,
                        const char *cert_pem, const char *trust_pem) {
  rx_server *rx = calloc(1, sizeof(*rx));
  rx->handler = handler;
  rx->arg = arg;
  pthread_mutex_init(&rx->lock, NULL);
  pthread_cond_init(&rx->cond, NULL);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
  struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}};
  if (key_pem && cert_pem) {
    flags |= MHD_USE_TLS;
    tls[0] =
        (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key_pem};
    tls[1] =
        (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert_pem};
    if (trust_pem)
      tls[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                       (void *)trust_pem};
  }
  rx->daemon =
      MHD_start_daemon(flags, 0, NULL, NULL, on_request, rx,
                       MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
                       on_completed, rx, MHD_OPTION_CONNECTION_TIMEOUT,
                       (unsigned)30, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
  if (!rx->daemon) {
    free(rx);
    return NULL;
  }
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(rx->daemon, MHD_DAEMON_INFO_BIND_PORT);
  rx->port = info ? info->port : 0;
  return rx;
}

void rx_stop(rx_server *rx) {
  if (!rx) return;
  pthread_mutex_lock(&rx->lock);
  rx->stopping = 1;
  pthread_cond_broadcast(&rx->cond);
  pthread_mutex_unlock(&rx->lock);
  MHD_stop_daemon(rx->daemon);
  for (size_t i = 0; i < rx->count; i++)
    request_free(rx->reqs[i]);
  free(rx->reqs);
  pthread_cond_destroy(&rx->cond);
  pthread_mutex_destroy(&rx->lock);
  free(rx);
}

int rx_port(const rx_server *rx) {
  return rx->port;
}

size_t rx_count(rx_server *rx) {
  pthread_mutex_lock(&rx->lock);
  size_t n = rx->count;
  pthread_mutex_unlock(&rx->lock);
  return n;
}

const rx_request *rx_get(rx_server *rx, size_t i) {
  pthread_mutex_lock(&rx->lock);
  const rx_request *r = i < rx->count ? rx->reqs[i] : NULL;
  pthread_mutex_unlock(&rx->lock);
  return r;
}

size_t rx_count_path(rx_server *rx, const char *prefix) {
  size_t n = 0;
  pthread_mutex_lock(&rx->lock);
  for (size_t i = 0; i < rx->count; i++)
    if (strncmp(rx->reqs[i]->path, prefix, strlen(prefix)) == 0) n++;
  pthread_mutex_unlock(&rx->lock);
  return n;
}

size_t rx_count_exact(rx_server *rx, const char *path) {
  size_t n = 0;
  pthread_mutex_lock(&rx->lock);
  for (size_t i = 0; i < rx->count; i++)
    if (strcmp(rx->reqs[i]->path, path) == 0) n++;
  pthread_mutex_unlock(&rx->lock);
  return n;
}

const rx_request *rx_nth_exact(rx_server *rx, const char *path, size_t i) {
  const rx_request *found = NULL;
  size_t k = 0;
  pthread_mutex_lock(&rx->lock);
  for (size_t n = 0; n < rx->count && !found; n++)
    if (strcmp(rx->reqs[n]->path, path) == 0 && k++ == i) found = rx->reqs[n];
  pthread_mutex_unlock(&rx->lock);
  return found;
}

typedef struct exact_wait {
  rx_server *rx;
  const char *path;
  size_t n;
} exact_wait;

static int has_exact(void *arg) {
  exact_wait *w = arg;
  return rx_count_exact(w->rx, w->path) >= w->n;
}

int rx_wait_exact(rx_server *rx, const char *path, size_t n, long timeout_ms) {
  exact_wait w = {rx, path, n};
  return ceb_test_wait(has_exact, &w, timeout_ms);
}

typedef struct wait_arg {
  rx_server *rx;
  size_t n;
} wait_arg;

static int enough(void *arg) {
  wait_arg *w = arg;
  return rx_count(w->rx) >= w->n;
}

int rx_wait(rx_server *rx, size_t n, long timeout_ms) {
  wait_arg w = {rx, n};
  return ceb_test_wait(enough, &w, timeout_ms);
}

size_t rx_count_event(rx_server *rx, const char *id) {
  size_t n = 0;
  pthread_mutex_lock(&rx->lock);
  for (size_t i = 0; i < rx->count; i++)
    if (rx->reqs[i]->event_id && strcmp(rx->reqs[i]->event_id, id) == 0) n++;
  pthread_mutex_unlock(&rx->lock);
  return n;
}

typedef struct event_wait {
  rx_server *rx;
  const char *id;
} event_wait;

static int has_event(void *arg) {
  event_wait *w = arg;
  return rx_count_event(w->rx, w->id) > 0;
}

int rx_wait_event(rx_server *rx, const char *id, long timeout_ms) {
  event_wait w = {rx, id};
  return ceb_test_wait(has_event, &w, timeout_ms);
}

void rx_reply(rx_response *resp, int status, const char *content_type,
              const char *body) {
  resp->status = status;
  if (content_type)
    ceb_headers_add(&resp->headers, "Content-Type", content_type,
                    strlen(content_type));
  if (body) {
    size_t n = strlen(body);
    resp->len = n < sizeof resp->body ? n : sizeof resp->body;
    memcpy(resp->body, body, resp->len);
  }
}
