/* A TCP proxy in front of the test's PostgreSQL that can lose one answer
 * after the server committed: armed, it passes the client's bytes on, and
 * of the server's the first answer that holds a COMMIT's command tag is
 * read up to the ReadyForQuery that ends it and then dropped, both sockets
 * closed. The client sees its connection lost while its transaction is
 * durable: the one case a resend must tell from a lost lease
 * (pg_delivery.c, SQL_SETTLE).
 *
 * No parsing of the protocol beyond finding "COMMIT\0" and the idle
 * ReadyForQuery ('Z', length 5, 'I') at the end of what arrived: enough for
 * the engine's pipelined groups, whose answer ends with the sync.
 *
 * Threading: one thread accepts and one serves each connection; the
 * functions may be called from any thread. Ownership: the proxy is the
 * caller's until cebt_proxy_stop. */
#ifndef CEB_PG_DROP_PROXY_H
#define CEB_PG_DROP_PROXY_H

typedef struct cebt_proxy cebt_proxy;

/* Listens on 127.0.0.1, an ephemeral port, forwarding to 127.0.0.1:port.
 * NULL on failure. */
cebt_proxy *cebt_proxy_start(int upstream_port);
/* Its listening port. */
int cebt_proxy_port(const cebt_proxy *p);
/* Drops the next committed answer (see above). */
void cebt_proxy_arm(cebt_proxy *p);
/* How many answers were dropped so far. */
int cebt_proxy_dropped(cebt_proxy *p);
/* Closes every connection and the listener, joins the threads. */
void cebt_proxy_stop(cebt_proxy *p);

#endif
