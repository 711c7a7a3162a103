/* Internals of the intermediary shared by its lifecycle (http_in.c)
 * and its request handling (http_in_request.c). */
#ifndef HTTP_IN_INT_H
#define HTTP_IN_INT_H

#include "http_guard.h"
#include "http_in.h"
#include "http_in_ratelimit.h"
#include "http_in_replay.h"
#include "http_jwks.h"
#include "http_jwt.h"
#include "http_tls.h"
#include "http_webhook_sig.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#define HTTP_LISTEN_MAX 64 /* the `threads` key's maximum */

typedef enum http_idem_mode {
  HTTP_IDEM_OFF = 0,
  HTTP_IDEM_OPTIONAL = 1,
  HTTP_IDEM_REQUIRED = 2
} http_idem_mode;

/* One client's allowed event types (clients.<client>.types). */
typedef struct http_client_types {
  char *client;
  const char *patterns; /* borrowed from the config */
} http_client_types;

typedef struct http_source {
  const ceb_host *host;
  ceb_instance *inst;
  const ceb_config *cfg;
  char *name;

  /* config */
  char listen_host[256];
  int listen_port;
  int loopback;
  const char *path;
  const char *port_file;
  unsigned threads;
  size_t max_body;
  unsigned max_conn, max_conn_per_ip;
  unsigned conn_timeout_s;
  http_guard_cfg guard_cfg; /* request deadlines, rate, slot reserve */
  size_t conn_memory;
  int retry_after_s;
  http_tls_listener tls; /* no cert: plain HTTP */
  int head_layout; /* the NUL and obs-fold checks can run (http_in_head.h) */
  int auth_oauth2;
  http_jwks *jwks;
  http_jwt_rules rules;
  http_client_types *clients;
  size_t nclients;
  /* clients.<client>.callback: each client's default callback URL
   * (checked at init; http_in_callback.c) */
  http_client_types *cb_defaults; /* patterns: the URL */
  size_t ncb_defaults;
  /* callback_allow, normalised (http_callback_url_norm): the URL prefixes
   * an X-Callback must lie under; none: any URL the check allows */
  char **cb_allow;
  size_t ncb_allow;
  int callbacks; /* the host sends this source's callbacks (ABI 1.3) */
  http_idem_mode idem;
  http_ratelimit *ratelimit; /* NULL: no limit */
  double rate;
  const char *const *origins;
  size_t norigins;
  http_webhook_keys *wh_keys; /* NULL: signatures not required */
  http_replay *wh_replay;
  int64_t wh_tolerance_ms;
  int mapped; /* the section has `map` (ABI 1.2): every request is handed
                 to the map program as its input document (http_in_doc.h) */
  int serve_openapi, serve_contracts; /* http_in_publish.c */
  int serve_status;                   /* http_in_publish.c */
  /* job status lookups in progress: each holds a listener thread on a
   * store read (http_in_publish.c bounds them) */
  atomic_uint status_lookups;
  char *openapi; /* this configuration's document */
  size_t openapi_len;

  /* runtime */
  struct MHD_Daemon *daemons[HTTP_LISTEN_MAX]; /* http_in_listen.c */
  unsigned ndaemons;
  struct http_conns *conns; /* open connections, across the daemons */
  http_guard *guard;        /* deadlines and reserve, across the daemons */
  int bound_port;
  atomic_int draining;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  size_t pending; /* requests submitted and not yet completed */
  int stopping;   /* no more suspending: the daemon is about to stop */
  struct http_req *suspended; /* suspended requests (intrusive list) */
} http_source;
typedef struct http_conns http_conns;

/* Resumes every suspended connection and forbids new suspensions, so that
 * MHD_stop_daemon (which refuses suspended connections) can run. The
 * resumed requests are closed by the daemon's shutdown; their submit
 * callbacks, when they come, only touch the request record. */
void http_source_resume_all(http_source *s);

/* Init: clients.<client>.callback = url (client: client_len bytes), the
 * URL checked (CEB_ECONFIG with key's origin logged). Control thread. */
/* Reads callback_allow and checks every client's default callback against
 * it (a config error names the key and its file:line). Init thread. */
int http_in_callback_allow_init(http_source *s);
/* Frees what http_in_callback_allow_init kept. */
void http_in_callback_allow_free(http_source *s);
int http_in_callback_default(http_source *s, const char *key,
                             const char *client, size_t client_len,
                             const char *url);

/* The MHD access handler and completion callback. */
enum MHD_Result http_source_handle(void *cls, struct MHD_Connection *conn,
                                   const char *url, const char *method,
                                   const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls);
void http_source_completed(void *cls, struct MHD_Connection *conn,
                           void **con_cls, enum MHD_RequestTerminationCode toe);

/* MHD_OPTION_UNESCAPE_CALLBACK: libmicrohttpd's percent-decoding, except
 * that a request target decoding to a NUL becomes "\x01", which the
 * handler refuses (libmicrohttpd keeps C strings: "/events%00x" was read as
 * "/events"). Called on the listener thread; reentrant. */
size_t http_source_unescape(void *cls, struct MHD_Connection *conn, char *s);

#endif
