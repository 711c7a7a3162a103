/* The webhook receiver of the HA tests: libmicrohttpd on 127.0.0.1 (an
 * ephemeral port) answering every POST 204. It counts the deliveries of
 * each HA test event (ce-id "ha-<client>-<n>", binary mode, or "id" of a
 * structured body) and checks FIFO per ordering key: a client's events
 * n, n + K, n + 2K, ... share one key (subject "k-<client>-<n mod K>") and
 * are posted one after the other, each only once the one before got its
 * 202, so on a key n never goes backwards; a redelivery of the key's
 * latest event is a duplicate, an older one a disorder.
 * Callbacks run on libmicrohttpd's threads under one lock; the getters may
 * be called from any thread. */
#ifndef CEB_HA_RECEIVER_H
#define CEB_HA_RECEIVER_H

#include <stdint.h>

typedef struct ha_receiver ha_receiver;

typedef struct ha_rx_counts {
  long requests;   /* POSTs */
  long delivered;  /* first deliveries */
  long duplicates; /* deliveries of an event delivered before */
  long disorder;   /* an event older than its key's latest */
  long unparsable; /* requests without an HA test id */
  char first_disorder[96];
} ha_rx_counts;

/* clients * per_client events at most; keys per client. NULL on failure. */
ha_receiver *ha_receiver_start(int clients, int per_client, int keys);
int ha_receiver_port(const ha_receiver *rx);
void ha_receiver_counts(ha_receiver *rx, ha_rx_counts *out);
/* How many times event (client, n) was delivered. */
int ha_receiver_times(ha_receiver *rx, int client, int n);
/* Answers every POST with status (204 by default) from now on: 503 makes
 * the bridges retry (the receiver is "down" without closing its port). */
void ha_receiver_answer(ha_receiver *rx, unsigned status);
/* Holds every answer ms before sending it (0: none): a slow endpoint, so
 * that the bridges always have deliveries in flight. */
void ha_receiver_delay(ha_receiver *rx, int ms);
void ha_receiver_stop(ha_receiver *rx);

#endif
