/* The one MQTT frame parser of the tree: splits a byte stream into packets
 * (fixed header + remaining length) and reads the fields the ack gate
 * (mqtt_gate.c) and the bench's plain-socket clients (bench/mqtt) need:
 * PUBLISH (topic, packet id, MQTT 5 properties, payload), the four publish
 * acknowledgements, CONNACK and SUBACK, and MQTT 5 properties. Built as the
 * static library ceb_mqtt_frame, which the plugin, the fuzz target
 * (tests/fuzz/mqtt) and bench_mqtt link.
 *
 * Every function reads only the n bytes it is given and answers malformed
 * input with -1; nothing is allocated. Plain functions, any thread. */
#ifndef CEB_MQTT_FRAME_H
#define CEB_MQTT_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum {
  MQTT_CONNECT = 1,
  MQTT_CONNACK = 2,
  MQTT_PUBLISH = 3,
  MQTT_PUBACK = 4,
  MQTT_PUBREC = 5,
  MQTT_PUBREL = 6,
  MQTT_PUBCOMP = 7,
  MQTT_SUBSCRIBE = 8,
  MQTT_SUBACK = 9,
  MQTT_PINGRESP = 13,
  MQTT_DISCONNECT = 14
};

#define MQTT_FRAME_MAX 268435460u /* 5-byte header + MQTT's largest body */

/* One packet inside a buffer: first byte split into type and flags, the
 * body after the remaining length. */
typedef struct mqtt_frame {
  unsigned type, flags;
  const unsigned char *body;
  size_t len;   /* body length (the remaining length) */
  size_t total; /* header and body */
} mqtt_frame;

/* The packet at buf (len bytes): 1 with *f when it is complete, 0 when more
 * bytes are needed, -1 when the remaining length is malformed or the packet
 * would be longer than max (header included). */
int mqtt_frame_next(const unsigned char *buf, size_t len, size_t max,
                    mqtt_frame *f);

/* Variable byte integer at p (at most n bytes): 1 with *v and *used, 0 when
 * incomplete, -1 when longer than 4 bytes. */
int mqtt_varint(const unsigned char *p, size_t n, uint32_t *v, size_t *used);
/* Writes v (< 2^28) as a variable byte integer; returns its length (1-4). */
size_t mqtt_put_varint(unsigned char *p, uint32_t v);

/* A PUBLISH's fields, pointing into the frame. props/nprops only with
 * MQTT 5. */
typedef struct mqtt_publish {
  int qos, dup, retain;
  unsigned packet_id; /* 0 at QoS 0 */
  const unsigned char *topic, *props, *payload;
  size_t topic_len, props_len, payload_len;
} mqtt_publish;

/* Reads a PUBLISH; v5 says whether a property block follows the packet id.
 * 0, or -1 when malformed (QoS 3, packet id 0, lengths past the end). The
 * topic and packet id do not depend on the version. */
int mqtt_frame_publish(const mqtt_frame *f, int v5, mqtt_publish *out);

/* PUBACK, PUBREC, PUBREL or PUBCOMP: the packet id and the MQTT 5 reason
 * code (0 when absent, as 3.1.1 always). 0, or -1 when malformed. */
int mqtt_frame_ack(const mqtt_frame *f, unsigned *packet_id, int *reason);

/* CONNACK: session present, return code (3.1.1) or reason code (5), and
 * with v5 the property block. 0, or -1 when malformed. */
int mqtt_frame_connack(const mqtt_frame *f, int v5, int *session_present,
                       int *reason, const unsigned char **props,
                       size_t *props_len);

/* SUBACK: the packet id and the reason codes (granted QoS, or >= 0x80 for a
 * refusal), pointing into the frame. 0, or -1 when malformed. */
int mqtt_frame_suback(const mqtt_frame *f, int v5, unsigned *packet_id,
                      const unsigned char **codes, size_t *ncodes);

/* One MQTT 5 property: num for integer types, s1/l1 for a string or binary
 * value, s2/l2 also for a user property's value. */
typedef struct mqtt_prop {
  unsigned id;
  uint32_t num;
  const unsigned char *s1, *s2;
  size_t l1, l2;
} mqtt_prop;

/* The property at *i of the n bytes at p: 1 (and *i past it), 0 at the
 * end, -1 when malformed or of an unknown identifier. */
int mqtt_prop_next(const unsigned char *p, size_t n, size_t *i, mqtt_prop *out);

#endif
