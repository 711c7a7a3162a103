/* fuzz_mqtt_frame: the MQTT frame parser (plugins/mqtt/mqtt_frame.h) that
 * the ack gate runs on every byte between the broker and the source, and
 * the bench clients on what the broker sends them. The input is a byte
 * stream as read from a socket: it is split into packets and every packet
 * is read as each type it could be, in both protocol versions, walking any
 * property block. Whatever is returned must lie inside the input (checked
 * here, besides ASan's own checks). */
#include <stdint.h>
#include <stdlib.h>

#include "mqtt_frame.h"

static void inside(const uint8_t *data, size_t size, const unsigned char *p,
                   size_t n) {
  if (n && (p < data || p + n > data + size)) abort();
}

static void walk_props(const uint8_t *data, size_t size, const unsigned char *p,
                       size_t n) {
  inside(data, size, p, n);
  size_t i = 0;
  mqtt_prop pr;
  int r;
  while ((r = mqtt_prop_next(p, n, &i, &pr)) == 1) {
    if (i > n) abort();
    inside(data, size, pr.s1, pr.l1);
    inside(data, size, pr.s2, pr.l2);
  }
}

static void read_frame(const uint8_t *data, size_t size, const mqtt_frame *f) {
  inside(data, size, f->body, f->len);
  for (int v5 = 0; v5 <= 1; v5++) {
    mqtt_publish pub;
    if (mqtt_frame_publish(f, v5, &pub) == 0) {
      inside(data, size, pub.topic, pub.topic_len);
      inside(data, size, pub.payload, pub.payload_len);
      if ((pub.qos > 0) != (pub.packet_id != 0)) abort();
      if (v5) walk_props(data, size, pub.props, pub.props_len);
    }
    int sp, reason;
    const unsigned char *props, *codes;
    size_t plen, ncodes;
    if (mqtt_frame_connack(f, v5, &sp, &reason, &props, &plen) == 0)
      walk_props(data, size, props, plen);
    unsigned id;
    if (mqtt_frame_suback(f, v5, &id, &codes, &ncodes) == 0)
      inside(data, size, codes, ncodes);
  }
  unsigned id;
  int reason;
  if (mqtt_frame_ack(f, &id, &reason) == 0 && (id == 0 || reason > 255))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t off = 0;
  mqtt_frame f;
  while (mqtt_frame_next(data + off, size - off, MQTT_FRAME_MAX, &f) == 1) {
    if (f.total > size - off || f.total < 2) abort();
    read_frame(data, size, &f);
    off += f.total;
  }
  /* The encoder round-trips through the decoder. */
  if (size >= 4) {
    uint32_t v = ((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
                  (uint32_t)data[2] << 8 | data[3]) &
                 0x0fffffff;
    unsigned char b[4];
    size_t n = mqtt_put_varint(b, v), used;
    uint32_t back;
    if (mqtt_varint(b, n, &back, &used) != 1 || back != v || used != n) abort();
  }
  return 0;
}
