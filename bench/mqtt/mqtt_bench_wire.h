/* MQTT 5 wire helpers for the bench's own plain-socket clients
 * (mqtt_bench_rawsub.h, mqtt_bench_pub.h): connect with CONNECT/CONNACK,
 * encode and decode the variable byte integers, strings and properties.
 * The clients are the far ends of the measured bridge; they use no MQTT
 * library so that they take as little as possible of the two cores the
 * bridge is measured on (bench/mqtt/README.md, session 4).
 *
 * Threading: plain functions; a connection is used by one thread at a
 * time. */
#ifndef MQTT_BENCH_WIRE_H
#define MQTT_BENCH_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define MB_WIRE_MAX_PACKET (1u << 20) /* far above a bench event */

/* Connects to url ("tcp://127.0.0.1:PORT") as an MQTT 5 client: clean
 * start, no keep-alive, our Receive Maximum receive_max. Returns the socket
 * (blocking, TCP_NODELAY, 10 s receive timeout) with *server_rmax the
 * broker's Receive Maximum (65535 when it sends none), or -1 (reason on
 * stderr). */
int mb_wire_connect(const char *url, const char *client_id, int receive_max,
                    int *server_rmax);
/* Sends all n bytes. 0 or -1. */
int mb_wire_send_all(int fd, const void *p, size_t n);
/* Reads one whole packet (blocking): returns its first byte and puts the
 * body (after the length) in buf, *len its size; -1 on error, a closed
 * connection or a body larger than cap. */
int mb_wire_read_packet(int fd, unsigned char *buf, size_t cap, size_t *len);
/* Variable byte integer at p (at most n bytes): 1 with *v and *used, 0 when
 * incomplete, -1 when malformed. */
int mb_wire_varint(const unsigned char *p, size_t n, uint32_t *v, size_t *used);
/* Writes v as a variable byte integer (at most 4 bytes); returns the
 * length. */
size_t mb_wire_put_varint(unsigned char *p, uint32_t v);
/* Writes a 2-byte length and the n bytes of s; returns n + 2. */
size_t mb_wire_put_str(unsigned char *p, const char *s, size_t n);

/* One MQTT 5 property: num for integer types, s1/l1 for a string or binary
 * value, s2/l2 also for a user property's value. */
typedef struct mb_wire_prop {
  unsigned id;
  uint32_t num;
  const unsigned char *s1, *s2;
  size_t l1, l2;
} mb_wire_prop;
/* The property at *i of the n bytes at p: 1 (and *i past it), 0 at the
 * end, -1 when malformed or of an unknown identifier. */
int mb_wire_prop_next(const unsigned char *p, size_t n, size_t *i,
                      mb_wire_prop *out);

#endif
