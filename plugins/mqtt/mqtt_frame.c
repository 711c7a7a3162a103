#include "mqtt_frame.h"

#include <string.h>

int mqtt_varint(const unsigned char *p, size_t n, uint32_t *v, size_t *used) {
  uint32_t x = 0;
  for (size_t i = 0; i < 4; i++) {
    if (i >= n) return 0;
    x |= (uint32_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *v = x;
      *used = i + 1;
      return 1;
    }
  }
  return -1;
}

size_t mqtt_put_varint(unsigned char *p, uint32_t v) {
  size_t n = 0;
  do {
    unsigned char b = v & 0x7f;
    v >>= 7;
    p[n++] = (unsigned char)(b | (v ? 0x80 : 0));
  } while (v && n < 4);
  return n;
}

int mqtt_frame_next(const unsigned char *buf, size_t len, size_t max,
                    mqtt_frame *f) {
  if (len < 2) return 0;
  uint32_t rl;
  size_t used;
  int r = mqtt_varint(buf + 1, len - 1, &rl, &used);
  if (r <= 0) return r;
  size_t total = 1 + used + (size_t)rl;
  if (total > max) return -1;
  if (len < total) return 0;
  f->type = buf[0] >> 4;
  f->flags = buf[0] & 0x0f;
  f->body = buf + 1 + used;
  f->len = rl;
  f->total = total;
  return 1;
}

/* A 2-byte length and that many bytes at *i of p[0..n): 0 and *i past
 * them, or -1. */
static int take_str(const unsigned char *p, size_t n, size_t *i,
                    const unsigned char **s, size_t *l) {
  if (*i > n || n - *i < 2) return -1;
  *l = (size_t)p[*i] << 8 | p[*i + 1];
  if (n - *i - 2 < *l) return -1;
  *s = p + *i + 2;
  *i += 2 + *l;
  return 0;
}

/* A property block (variable byte integer length, then the properties) at
 * *i: 0 with *props / *plen and *i past it, or -1. */
static int take_props(const unsigned char *p, size_t n, size_t *i,
                      const unsigned char **props, size_t *plen) {
  uint32_t pl;
  size_t used;
  if (*i > n || mqtt_varint(p + *i, n - *i, &pl, &used) != 1) return -1;
  if (n - *i - used < pl) return -1;
  *props = p + *i + used;
  *plen = pl;
  *i += used + pl;
  return 0;
}

int mqtt_frame_publish(const mqtt_frame *f, int v5, mqtt_publish *out) {
  memset(out, 0, sizeof *out);
  if (f->type != MQTT_PUBLISH) return -1;
  out->qos = (int)(f->flags >> 1) & 3;
  out->dup = (f->flags >> 3) & 1;
  out->retain = f->flags & 1;
  if (out->qos == 3) return -1;
  const unsigned char *p = f->body;
  size_t n = f->len, i = 0;
  if (take_str(p, n, &i, &out->topic, &out->topic_len) < 0) return -1;
  if (out->qos > 0) {
    if (n - i < 2) return -1;
    out->packet_id = (unsigned)p[i] << 8 | p[i + 1];
    i += 2;
    if (out->packet_id == 0) return -1;
  }
  if (v5 && take_props(p, n, &i, &out->props, &out->props_len) < 0) return -1;
  out->payload = p + i;
  out->payload_len = n - i;
  return 0;
}

int mqtt_frame_ack(const mqtt_frame *f, unsigned *packet_id, int *reason) {
  if (f->type < MQTT_PUBACK || f->type > MQTT_PUBCOMP || f->len < 2) return -1;
  *packet_id = (unsigned)f->body[0] << 8 | f->body[1];
  *reason = f->len >= 3 ? f->body[2] : 0;
  return *packet_id ? 0 : -1;
}

int mqtt_frame_connack(const mqtt_frame *f, int v5, int *session_present,
                       int *reason, const unsigned char **props,
                       size_t *props_len) {
  *props = NULL;
  *props_len = 0;
  if (f->type != MQTT_CONNACK || f->len < 2 || (f->body[0] & 0xfe)) return -1;
  *session_present = f->body[0] & 1;
  *reason = f->body[1];
  size_t i = 2;
  if (v5 && f->len > 2 && take_props(f->body, f->len, &i, props, props_len) < 0)
    return -1;
  return 0;
}

int mqtt_frame_suback(const mqtt_frame *f, int v5, unsigned *packet_id,
                      const unsigned char **codes, size_t *ncodes) {
  if (f->type != MQTT_SUBACK || f->len < 3) return -1;
  *packet_id = (unsigned)f->body[0] << 8 | f->body[1];
  size_t i = 2;
  const unsigned char *props;
  size_t plen;
  if (v5 && take_props(f->body, f->len, &i, &props, &plen) < 0) return -1;
  if (i >= f->len) return -1; /* at least one reason code */
  *codes = f->body + i;
  *ncodes = f->len - i;
  return 0;
}

/* Value sizes by identifier (MQTT 5.0 section 2.2.2.2): 1, 2, 4 bytes, 'v'
 * variable byte integer, 's' string or binary data, 'p' string pair. */
static int prop_kind(unsigned id) {
  switch (id) {
  case 0x01:
  case 0x17:
  case 0x19:
  case 0x24:
  case 0x25:
  case 0x28:
  case 0x29:
  case 0x2a:
    return 1;
  case 0x13:
  case 0x21:
  case 0x22:
  case 0x23:
    return 2;
  case 0x02:
  case 0x11:
  case 0x18:
  case 0x27:
    return 4;
  case 0x0b:
    return 'v';
  case 0x03:
  case 0x08:
  case 0x09:
  case 0x12:
  case 0x15:
  case 0x16:
  case 0x1a:
  case 0x1c:
  case 0x1f:
    return 's';
  case 0x26:
    return 'p';
  default:
    return 0;
  }
}

int mqtt_prop_next(const unsigned char *p, size_t n, size_t *i,
                   mqtt_prop *out) {
  if (*i >= n) return 0;
  memset(out, 0, sizeof *out);
  out->id = p[(*i)++];
  int kind = prop_kind(out->id);
  switch (kind) {
  case 1:
  case 2:
  case 4:
    if (n - *i < (size_t)kind) return -1;
    for (int k = 0; k < kind; k++)
      out->num = out->num << 8 | p[*i + (size_t)k];
    *i += (size_t)kind;
    return 1;
  case 'v': {
    size_t used;
    if (mqtt_varint(p + *i, n - *i, &out->num, &used) != 1) return -1;
    *i += used;
    return 1;
  }
  case 's':
    return take_str(p, n, i, &out->s1, &out->l1) < 0 ? -1 : 1;
  case 'p':
    if (take_str(p, n, i, &out->s1, &out->l1) < 0) return -1;
    return take_str(p, n, i, &out->s2, &out->l2) < 0 ? -1 : 1;
  default:
    return -1;
  }
}
