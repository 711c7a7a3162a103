/* The ack gate: a loopback relay between the source's MQTT client
 * (libmosquitto, mqtt_pub.h) and the broker that holds the source's
 * acknowledgements (PUBACK at QoS 1, PUBREC at QoS 2) until the host has
 * made the message durable.
 *
 * Why: libmosquitto (like paho.mqtt.c before it) acknowledges an incoming
 * QoS 1 PUBLISH itself while it hands it to on_message, and has no
 * manual-ack API. The gate splits both byte streams into packets with the
 * plugin's frame parser (mqtt_frame.h), forwards every packet except the
 * held acknowledgements, and releases those in arrival order once
 * mqtt_gate_release() is called for their packet id. A connection that ends
 * drops what it held, so the broker redelivers (persistent session).
 *
 * QoS 2: the client hands an inbound QoS 2 message over only after the
 * broker's PUBREL, which needs our PUBREC, which must wait for durability.
 * So the gate forwards a QoS 2 PUBLISH to the client as QoS 1 (same packet
 * id), sends the broker a PUBREC where the client's released PUBACK for that
 * id would go, and answers every PUBREL with PUBCOMP itself (PUBREL is not
 * forwarded).
 *
 * TLS to the broker is done here (OpenSSL); the client talks plain TCP to
 * 127.0.0.1 only.
 *
 * Threading: one relay thread per gate. mqtt_gate_release, _reset, _held and
 * _generation are callable from any thread. */
#ifndef CEB_MQTT_GATE_H
#define CEB_MQTT_GATE_H

#include <stdint.h>

#include "mqtt_conf.h"

typedef struct mqtt_gate mqtt_gate;

/* Listens on 127.0.0.1 (ephemeral port) and starts the relay thread. Each
 * accepted connection is bridged to conf's broker (TLS per conf).
 * CEB_OK or < 0 with a log line. conf is borrowed until mqtt_gate_free. */
int mqtt_gate_new(const ceb_host *host, ceb_instance *inst,
                  const mqtt_conf *conf, mqtt_gate **out);
/* The loopback port the client must connect to. */
int mqtt_gate_port(const mqtt_gate *g);
/* Identifies the current relayed connection; releases name it so that an
 * acknowledgement never leaks into a later connection by mistake. */
uint64_t mqtt_gate_generation(mqtt_gate *g);
/* The message with this packet id (read at messageArrived time with gen) is
 * durable: let its acknowledgement through. */
void mqtt_gate_release(mqtt_gate *g, uint64_t gen, int packet_id);
/* Drops the current connection without sending held acknowledgements, so
 * the broker redelivers them (used when a submit failed for good). */
void mqtt_gate_reset(mqtt_gate *g, const char *why);
/* Acknowledgements currently held (released or not). */
size_t mqtt_gate_held(mqtt_gate *g);
/* Acknowledgements sent to the broker since the gate started. */
uint64_t mqtt_gate_acked(mqtt_gate *g);
/* Sends every released acknowledgement now, out of arrival order if an
 * unreleased one is ahead (used before a planned disconnect), waiting up to
 * timeout_ms. 0 when nothing released is left unsent. */
int mqtt_gate_flush(mqtt_gate *g, int64_t timeout_ms);
/* Stops the thread, closes everything, frees g. */
void mqtt_gate_free(mqtt_gate *g);

#endif
