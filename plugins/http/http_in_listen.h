/* The intermediary's listeners. With `threads` = N > 1 the source runs N
 * libmicrohttpd daemons (one poll() thread each) on N SO_REUSEPORT sockets
 * bound to the same address, so that the kernel spreads connections evenly
 * over the threads. (libmicrohttpd's own thread pool shares one socket:
 * the first thread awake took most of a burst of connections and then did
 * all their work while the other idled.) The connection limits, which each
 * daemon would only count for itself, are kept here across all of them.
 *
 * Threading: start/stop on the plugin's lifecycle thread; the accept and
 * notify callbacks run on the daemons' threads. */
#ifndef HTTP_IN_LISTEN_H
#define HTTP_IN_LISTEN_H

#include <microhttpd.h>
#include <sys/socket.h>

#include "http_in_int.h"

/* Binds and starts s->threads daemons on *ss with the given flags and
 * options (MHD_OPTION_END-terminated, at most 20; no MHD_OPTION_SOCK_ADDR,
 * thread pool or NOTIFY_CONNECTION options: those are set here; connection
 * limit options only backstop the shared ones). Sets s->bound_port.
 * CEB_OK, or CEB_EIO with the reason logged (address in use, permissions,
 * TLS material); nothing is left running then. */
int http_listen_start(http_source *s, const struct sockaddr_storage *ss,
                      unsigned flags, const struct MHD_OptionItem *opts);

/* Stops every daemon (call http_source_resume_all first) and frees the
 * connection accounting. Idempotent. */
void http_listen_stop(http_source *s);

#endif
