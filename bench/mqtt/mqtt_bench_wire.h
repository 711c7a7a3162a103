/* MQTT 5 wire helpers for the bench's own plain-socket clients
 * (mqtt_bench_rawsub.h, mqtt_bench_pub.h): connect with CONNECT/CONNACK,
 * read one packet, encode strings. Packets are split and read with the
 * plugin's frame parser (plugins/mqtt/mqtt_frame.h, the ceb_mqtt_frame
 * library the ack gate uses).
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

#include "mqtt_frame.h"

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
/* Reads one whole packet (blocking) into buf (cap bytes, header
 * included) and splits it with mqtt_frame_next into *f. 0, or -1 on error,
 * a closed connection, a malformed header or a packet larger than cap. */
int mb_wire_read_packet(int fd, unsigned char *buf, size_t cap, mqtt_frame *f);
/* Writes a 2-byte length and the n bytes of s; returns n + 2. */
size_t mb_wire_put_str(unsigned char *p, const char *s, size_t n);

#endif
