/* cebridge public plugin ABI.
 *
 * A plugin is a shared object exporting exactly one symbol:
 *
 *   const ceb_plugin *ceb_plugin_query(uint32_t host_abi_major,
 *                                      uint32_t host_abi_minor);
 *
 * It returns a static, const descriptor (or NULL to decline). The host
 * rejects the plugin, logs one line with the reason and dlclose()s it when:
 * the major differs, the plugin's minor is newer than the host's, struct_size
 * is shorter than the ABI 1.0 descriptor, or a callback its roles require is
 * missing. Plugins are loaded RTLD_NOW | RTLD_LOCAL and built with
 * -fvisibility=hidden; they reach the host only through the ceb_host table
 * given to init (the executable exports nothing), and link the SDK library
 * libceb (event model, codecs, validation, config accessors).
 *
 * Versioning (Redis-module style): every struct crossing the boundary starts
 * with struct_size. New members are only ever appended and bump the minor;
 * a reader checks struct_size before touching a member added after 1.0.
 *
 * Instances, not singletons: each configured section ([source x], [sink y],
 * [contracts z]) is one instance with its own state pointer. Plugins keep no
 * mutable globals.
 *
 * Threading:
 *  - init, start, drain, destroy and sync run on the host's control thread,
 *    never concurrently for one instance.
 *  - deliver runs on a host worker thread and must not block: enqueue the
 *    work and return; settle later from any thread.
 *  - every ceb_host function may be called from any thread, including
 *    threads the plugin or its libraries create, unless noted.
 */
#ifndef CEB_PLUGIN_H
#define CEB_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "event.h"
#include "status.h"
#include "validate.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CEB_ABI_MAJOR 1
/* 1.1: ceb_config_bind (include/ceb/config.h); ceb_delivery.encoded and
 * ceb_delivery_encoded (below); ceb_event_checked (include/ceb/validate.h);
 * ceb_kafka_visit (include/ceb/codec.h). A plugin that calls one of these
 * functions does not load in a 1.0 host (the loader binds every symbol at
 * dlopen), as the minor check would refuse it anyway. */
/* 1.2: mappings (jq programs, docs/integration-guide.md "Mappings"):
 * CEB_ROLE_MAPPINGS; ceb_instance_info.mapped and ceb_instance_mapped();
 * ceb_host.submit_mapped
 * and CEB_EMAPPING (status.h); ceb_delivery.mapped (an egress mapping's
 * result: ceb_mapped_out) and ceb_delivery_mapped(); ceb_json_valid
 * (codec.h), which the sources' input documents use.
 * 1.2 also: queues in the host's store (ceb_host.queue_append, queue_fetch,
 * queue_commit, queue_stats: the pull sink's queue, shared by every bridge
 * on one database) and ceb_host.lead (a task run by one bridge at a time);
 * ceb_host.contract_get and contract_list (the contract register,
 * read-only, for any role). ceb_submit_opts.key_limited (a key's
 * max_open_per_key refused the submit). */
/* 1.3: ceb_host.submit_mapped_batch and ceb_mapped_doc (several input
 * documents through one mapping round trip and one journal op). */
/* 1.3: callbacks (docs/integration-guide.md "Callbacks"):
 * ceb_submit_opts.callback (the client's callback URL for the events of a
 * submit) and ceb_host.callbacks (whether a route sends the source's
 * callbacks). */
/* 1.4: ceb_host.submit_mapped_async (the ingress mapping without holding
 * the caller's thread: requests of many connections share one mapping
 * round trip) and the refusal members of ceb_submit_result (refused,
 * key_limited, reason, violations, failed_index), set by its callback. */
#define CEB_ABI_MINOR 4

#if defined(__GNUC__)
#define CEB_EXPORT __attribute__((visibility("default")))
#define CEB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CEB_EXPORT
#define CEB_PRINTF(f, a)
#endif

#define CEB_PLUGIN_QUERY_SYMBOL "ceb_plugin_query"

/* Roles a plugin offers; an instance has exactly one of the first three. */
enum {
  CEB_ROLE_SOURCE = 1u << 0,    /* submits events into the bridge */
  CEB_ROLE_SINK = 1u << 1,      /* delivers events out of the bridge */
  CEB_ROLE_CONTRACTS = 1u << 2, /* fetches contracts into the register */
  CEB_ROLE_TOPICS = 1u << 3, /* sink honours ceb_delivery.topic (DLQ topics) */
  /* ABI 1.2: honours mappings: as a source it hands each message's input
   * document to submit_mapped when ceb_instance_mapped(info); as a sink it
   * sends ceb_delivery_mapped(d) when set. The host refuses `map` on a
   * section (or a route to a sink) whose plugin lacks it, rather than have
   * the program ignored. */
  CEB_ROLE_MAPPINGS = 1u << 4
};

typedef enum ceb_log_level {
  CEB_LOG_ERROR = 0,
  CEB_LOG_WARN = 1,
  CEB_LOG_INFO = 2,
  CEB_LOG_DEBUG = 3
} ceb_log_level;

/* The host's handle for one configured instance. Opaque; valid from init
 * until destroy returns. */
typedef struct ceb_instance ceb_instance;

typedef struct ceb_instance_info {
  uint32_t struct_size;
  const char *name;     /* section name, e.g. "intermediary" */
  uint32_t role;        /* exactly one of SOURCE, SINK, CONTRACTS */
  const char *data_dir; /* a directory this instance may keep files in */
  /* ABI 1.2 (read it through ceb_instance_mapped(), which checks
   * struct_size). 1 when a jq mapping applies to this instance:
   *  - a SOURCE whose section has `map`: the plugin accepts messages that
   *    are not CloudEvents (the HTTP intermediary no longer answers 415 to
   *    them), builds the transport's input document for each message (a
   *    JSON text, described per transport in the plugin's README) and hands
   *    it to host->submit_mapped instead of decoding and calling submit.
   *  - a SINK whose section has `map`, or that a route with `map` delivers
   *    to: some deliveries carry d->mapped (ceb_delivery_mapped()); the
   *    sink sends that instead of the CloudEvent.
   * 0 otherwise, and always 0 from a 1.0 / 1.1 host. */
  int mapped;
} ceb_instance_info;

/* ABI 1.2: info->mapped, or 0 when info is NULL or older than 1.2. */
int ceb_instance_mapped(const ceb_instance_info *info);

/* ---- sources: submit ---- */

typedef struct ceb_submit_result {
  uint32_t struct_size;
  int status;        /* CEB_OK: every event is durable (or was already held) */
  size_t accepted;   /* events newly journaled */
  size_t duplicates; /* events already held under (client, source, id) */
  /* ABI 1.4, set only by the callback of host->submit_mapped_async (0 /
   * NULL from every other call; a 1.3 host's result ends above: read them
   * only after submit_mapped_async, which a 1.3 host does not have).
   * refused = 1: nothing was taken; status is what submit_mapped would
   * have returned (CEB_EMAPPING, CEB_EVALIDATION, CEB_ETOOLARGE, CEB_EBUSY,
   * CEB_ESHUTDOWN, CEB_EIO, ...) and the members below say why. refused =
   * 0 with status != CEB_OK: taken, then failed for good (as submit's
   * callback). */
  int refused;
  int key_limited;    /* refused with CEB_EBUSY: a key's max_open_per_key */
  const char *reason; /* refused: one line (jq's message for CEB_EMAPPING),
                         borrowed for the call */
  /* refused with CEB_EVALIDATION: the violations of the failing event,
   * borrowed for the call, and its index among the mapping's outputs;
   * else NULL / 0 */
  const ceb_violations *violations;
  size_t failed_index;
} ceb_submit_result;

/* Called exactly once per successful submit(), from a host thread, after the
 * batch holding the events committed (status CEB_OK) or failed for good
 * (CEB_EIO, CEB_ESHUTDOWN). The result is borrowed for the call. Settle the
 * upstream (HTTP 202, offset commit, PUBACK) only on CEB_OK. Must not block. */
typedef void (*ceb_submit_cb)(void *arg, const ceb_submit_result *result);

typedef struct ceb_submit_opts {
  uint32_t struct_size;
  const char *client;      /* authenticated client identity, or NULL */
  const char *traceparent; /* W3C trace context of the request, or NULL */
  /* Out, optional: on CEB_EVALIDATION, the violations of the first failing
   * event and its index in the batch. */
  ceb_violations *violations;
  size_t *failed_index;
  /* ABI 1.2, out, optional: set to 1 when submit answers CEB_EBUSY because
   * an event's ordering key has max_open_per_key open events on a route
   * (HTTP: 429 with Retry-After; 0 for general backpressure: 503). A
   * plugin built before 1.2 gets a plain CEB_EBUSY. */
  int *key_limited;
  /* ABI 1.3, in, optional: a URL the host posts each event's final job
   * status to (done, error, time-out: the document ceb_host.event_status
   * gives), through the route with callbacks = true that takes this
   * source's callbacks. The source checks its form (https, or http to a
   * loopback address; bounded length); the host copies it. Set only when
   * CEB_HOST_HAS(host, callbacks) and callbacks(inst) is 1: a host without
   * such a route answers CEB_EUNSUPPORTED (HTTP 400), and a 1.2 host
   * ignores it. Events no route takes get no callback. */
  const char *callback;
} ceb_submit_opts;

/* ---- sinks: deliver and settle ---- */

typedef enum ceb_outcome {
  CEB_ACK = 0,   /* delivered: done */
  CEB_RETRY = 1, /* transient failure: try again per the route's policy */
  CEB_REJECT = 2 /* permanent failure: dead-letter now */
} ceb_outcome;

/* One delivery attempt. Owned by the host; the plugin may read every member
 * and use sink_data until it calls settle(), exactly once; after that the
 * pointer is dead. */
typedef struct ceb_delivery {
  uint32_t struct_size;
  const ceb_event *event;      /* borrowed until settle */
  const char *route;           /* route name */
  const char *topic;           /* NULL: the sink's own destination; else a
                                  topic override (DLQ, receipts) */
  const char *idempotency_key; /* stable across retries of this event+route */
  uint32_t attempt;            /* 1 for the first */
  int64_t deadline_ms;         /* host clock: settle RETRY by then at latest */
  void *sink_data;             /* the plugin's, until settle */
  /* ABI 1.1: the event in the JSON format (application/cloudevents+json)
   * exactly as the host journaled it, which is what ceb_json_encode(event)
   * writes: a structured-mode sink sends these bytes instead of encoding
   * the event again. NUL-terminated (encoded_len does not count the NUL).
   * Borrowed until settle; NULL (and 0) when the host has
   * no such bytes (dead-letter forwards, receipts). Read it through
   * ceb_delivery_encoded(), which checks struct_size: a 1.0 host's
   * delivery is shorter. */
  const char *encoded;
  size_t encoded_len;
  /* ABI 1.2: the egress mapping's result when the route (else the sink)
   * has `map`, NULL otherwise (no mapping; dead-letter forwards and
   * receipts are never mapped). Borrowed until settle. Read it through
   * ceb_delivery_mapped(), which checks struct_size. */
  const struct ceb_mapped_out *mapped;
} ceb_delivery;

/* Size of the ABI 1.0 delivery (what a 1.0 host passes). */
#define CEB_DELIVERY_SIZE_1_0                                                  \
  (offsetof(ceb_delivery, sink_data) + sizeof(void *))

/* The delivery's journaled JSON-format bytes (ABI 1.1) and their length, or
 * NULL when the host did not give any (a 1.0 host, or none for this
 * delivery): then encode d->event. */
const char *ceb_delivery_encoded(const ceb_delivery *d, size_t *len);

/* Size of the ABI 1.1 delivery (what a 1.1 host passes). */
#define CEB_DELIVERY_SIZE_1_1                                                  \
  (offsetof(ceb_delivery, encoded_len) + sizeof(size_t))

/* ---- egress mappings (ABI 1.2) ----
 *
 * A route or sink with `map = <jq program>` (the route's wins when both
 * have one) runs the program once per delivery attempt, in the engine,
 * before deliver. The program gets the CloudEvent in its JSON format
 * (what ceb_delivery_encoded holds, parsed) and must output exactly one
 * object of this shape (any other output, none, several, or an error
 * dead-letters the delivery with reason "mapping", without calling
 * deliver):
 *
 *   {"body": <any JSON>,              required
 *    "content_type": "<media type>",  optional
 *    "headers": {"<name>": "<value>", ...},  optional, string values
 *    "key": "<string>" | null,        optional (Kafka record key)
 *    "topic": "<string>"}             optional (MQTT topic, Kafka topic)
 *
 * body: a JSON string is sent as its bytes (UTF-8, no quotes; default
 * content type "text/plain; charset=utf-8"); any other value is sent as
 * its compact JSON text (default content type "application/json").
 * Other members are refused (a typo must not silently vanish).
 *
 * What the sink does with it: it sends body as the message body / record
 * value / payload with content_type, instead of the CloudEvent; adds the
 * headers (HTTP request headers, Kafka record headers; MQTT v5 user
 * properties) to the ones it always sends; uses key and topic where its
 * transport has them. Its own protocol headers stay and win on a clash:
 * the Idempotency-Key / webhook-id is still d->idempotency_key (stable:
 * it comes from the event and route, never from the body), Standard
 * Webhooks signatures are computed over the mapped body. ce-* binding
 * headers are not added to a mapped body (it is not a CloudEvent). */
typedef struct ceb_mapped_header {
  const char *name;  /* NUL-terminated, no control characters */
  const char *value; /* NUL-terminated UTF-8, no control characters */
} ceb_mapped_header;

typedef struct ceb_mapped_out {
  uint32_t struct_size;
  const char *body; /* never NULL; NUL-terminated (body_len excludes it) */
  size_t body_len;
  const char *content_type;         /* never NULL */
  const ceb_mapped_header *headers; /* nheaders of them, in program order */
  size_t nheaders;
  const char *key;   /* NULL: the sink's usual key (not set / null) */
  const char *topic; /* NULL: the sink's own destination */
} ceb_mapped_out;

/* The delivery's egress mapping result (ABI 1.2), or NULL when there is
 * none (no mapping applies, or a host older than 1.2). */
const ceb_mapped_out *ceb_delivery_mapped(const ceb_delivery *d);

enum {
  CEB_SETTLE_OPEN_CIRCUIT = 1u << 0, /* the peer is gone (HTTP 410): open the
                                        sink's circuit and alert */
  /* The outcome concerns one destination of a sink that sends to several
   * (a URL template per institution) and keeps a circuit per destination
   * itself: the host does not count it as a failure of the whole sink (it
   * only shows the sink is alive). A host that predates the flag ignores it
   * and counts the outcome for the sink's circuit, as for any sink: a bit
   * of an existing field, no new member, so the ABI minor is unchanged. */
  CEB_SETTLE_DESTINATION = 1u << 1
};

typedef struct ceb_settle_info {
  uint32_t struct_size;
  ceb_outcome outcome;
  int64_t retry_after_ms; /* RETRY: minimum wait the peer asked for; -1 none */
  int status_code;        /* protocol status (HTTP 503, Kafka err), 0 none */
  const char *reason;     /* stable reason code: "http.503", "timeout" ...;
                             copied by the host */
  const char *detail;     /* free text for the DLQ/log; copied, truncated */
  unsigned flags;         /* CEB_SETTLE_* */
  /* ABI 1.2: ACK: what the peer answered (its response body, or a bounded
   * excerpt of it), for the job status a client reads (GET /v1/events/{id}
   * of the http source). Borrowed for the call: the host copies up to
   * CEB_SETTLE_BODY_MAX bytes. NULL / 0: none. A host older than 1.2 never
   * reads these; a plugin older than 1.2 sends the shorter struct
   * (CEB_SETTLE_INFO_SIZE_1_0) and the host takes it as no body. */
  const char *body;
  size_t body_len;
} ceb_settle_info;

/* Size of the ABI 1.0 settle info: the host accepts anything this long. */
#define CEB_SETTLE_INFO_SIZE_1_0                                               \
  (offsetof(ceb_settle_info, flags) + sizeof(unsigned))
/* The most of a response body the host keeps for a job status. */
#define CEB_SETTLE_BODY_MAX 65536

/* ---- idempotency (HTTP-style Idempotency-Key) ---- */

typedef enum ceb_idem_state {
  CEB_IDEM_NEW = 0,       /* key reserved for this request: process it */
  CEB_IDEM_REPLAY = 1,    /* completed before: replay the stored response */
  CEB_IDEM_IN_FLIGHT = 2, /* the first request is still running: 409 */
  CEB_IDEM_MISMATCH = 3   /* same key, other request fingerprint: 422 */
} ceb_idem_state;

typedef struct ceb_idem_record {
  uint32_t struct_size;
  ceb_idem_state state;
  int http_status;    /* REPLAY: stored status */
  char *content_type; /* REPLAY: stored Content-Type; free with ceb_free */
  char *body;         /* REPLAY: stored body bytes; free with ceb_free */
  size_t body_len;
} ceb_idem_record;

/* ---- metrics ---- */

typedef enum ceb_metric_kind {
  CEB_METRIC_COUNTER = 0,  /* value is added */
  CEB_METRIC_GAUGE = 1,    /* value is set */
  CEB_METRIC_HISTOGRAM = 2 /* value (seconds) is observed */
} ceb_metric_kind;

/* ---- the host table ---- */

/* ABI 1.3: one message of host->submit_mapped_batch. struct_size first:
 * the host reads and writes only what it covers (a later minor may append
 * members). */
typedef struct ceb_mapped_doc {
  uint32_t struct_size; /* sizeof(ceb_mapped_doc) as the plugin was built */
  const char *doc;      /* in: the input document, a JSON text */
  size_t len;           /* in: its length in bytes */
  int status;           /* out: CEB_OK, CEB_EMAPPING, CEB_EVALIDATION, ... */
  size_t nevents;       /* out: events the document became (CEB_OK) */
  char reason[400];     /* out: one line, when status != CEB_OK */
} ceb_mapped_doc;

typedef struct ceb_host {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* Logs one line prefixed "[role:plugin:name]". Never pass secrets. */
  void (*log)(ceb_instance *inst, ceb_log_level level, const char *fmt, ...)
      CEB_PRINTF(3, 4);

  /* Submits count events as one unit (a batch is accepted or refused whole).
   * The host validates (CloudEvents, profile, contracts of matching routes),
   * dedupes on (client, source, id) and journals them.
   * Returns CEB_OK: the host took over the caller's references and will call
   *   cb exactly once when durable (or failed).
   * Returns < 0 (CEB_EVALIDATION, CEB_ETOOLARGE, CEB_EBUSY backpressure,
   *   CEB_ESHUTDOWN draining, CEB_EINVAL): nothing was taken, the caller
   *   still owns its references, and cb is never called. */
  int (*submit)(ceb_instance *inst, ceb_event *const *events, size_t count,
                const ceb_submit_opts *opts, ceb_submit_cb cb, void *cb_arg);

  /* 1 when submit would currently be accepted (no backpressure, not
   * draining). Sources that paused on CEB_EBUSY poll this to resume. */
  int (*accepting)(ceb_instance *inst);

  /* Settles a delivery exactly once. info is copied. A second settle of the
   * same delivery is a bug: it is logged and ignored. */
  void (*settle)(ceb_instance *inst, ceb_delivery *d,
                 const ceb_settle_info *info);

  /* Records a metric "cebridge_<name>" with the instance's labels plus
   * `labels` ("code=\"503\"", may be NULL). */
  void (*metric)(ceb_instance *inst, ceb_metric_kind kind, const char *name,
                 const char *labels, double value);

  /* The host clock in ms since the epoch (tests inject it). */
  int64_t (*now_ms)(ceb_instance *inst);

  /* Idempotency-Key support, keys scoped per client. begin reserves the key
   * or reports its state (record->body etc. are the caller's to free); finish
   * stores the final response durably and ends the reservation; abort drops a
   * reservation whose request ended without a response worth replaying.
   * Blocking (a store round trip): call from a request thread, not deliver. */
  int (*idem_begin)(ceb_instance *inst, const char *client, const char *key,
                    const char *fingerprint, ceb_idem_record *record);
  int (*idem_finish)(ceb_instance *inst, const char *client, const char *key,
                     int http_status, const char *content_type,
                     const char *body, size_t body_len);
  void (*idem_abort)(ceb_instance *inst, const char *client, const char *key);

  /* Contracts role: offers a fetched document to the immutable register.
   * Returns CEB_OK (stored as new), CEB_EDUPLICATE (identical copy held) or
   * CEB_ECONFLICT (a different document under a held version: flagged, not
   * stored). provenance is the URL or path it came from. */
  int (*contract_put)(ceb_instance *inst, const char *name, const char *version,
                      const char *document, size_t len, const char *provenance);

  /* ABI 1.2: ingress mapping. Check CEB_HOST_HAS(host, submit_mapped)
   * before calling (a 1.1 host's table ends before it).
   *
   * For a source whose section has `map` (ceb_instance_mapped(info)): doc
   * is the transport's input document for one message, a JSON text of len
   * bytes (UTF-8, need not be NUL-terminated), borrowed for the call. The
   * host runs the section's jq program on it (in a mapping worker process,
   * bounded by [bridge] mapping.timeout and mapping.memory_max; this call
   * blocks the calling thread until the program has finished, at most
   * about the timeout plus the wait for a free worker); the program
   * outputs one CloudEvent as a JSON object in the JSON format (what
   * application/cloudevents+json carries), or an array of them (a batch),
   * or several objects (a batch, in output order). The host builds the
   * events and continues exactly as submit() with them: validated once
   * (CloudEvents, profile level, contracts of matching routes, route
   * filters), deduplicated, journaled as one unit.
   *
   * Returns what submit returns (CEB_OK: cb is called exactly once later;
   * CEB_EVALIDATION with opts->violations / failed_index; CEB_ETOOLARGE;
   * CEB_EBUSY; CEB_ESHUTDOWN; CEB_EIO), and also:
   *   CEB_EMAPPING: the program failed (a jq error, "mapping timed out
   *     after 200 ms", "mapping exceeded its memory limit"), output no
   *     value, or output something that is not a CloudEvent object (not an
   *     object, an attribute of the wrong JSON type, data_base64 not
   *     base64). err gets one line with the reason (jq's message
   *     included), truncated to errlen. At HTTP: 400 problem+json;
   *     Kafka/MQTT: the message's DLQ topic with the reason.
   *   CEB_EINVAL: the section has no `map`, doc is not one JSON text, or
   *     a NULL argument (err says which).
   * On any status but CEB_OK nothing was taken and cb is never called.
   * err (errlen bytes, may be NULL / 0) is also set on CEB_EVALIDATION
   * and CEB_ETOOLARGE to a one-line summary. Any thread; thread-safe. */
  int (*submit_mapped)(ceb_instance *inst, const char *doc, size_t len,
                       const ceb_submit_opts *opts, ceb_submit_cb cb,
                       void *cb_arg, char *err, size_t errlen);

  /* ABI 1.2: a queue of events in the host's store for a sink whose
   * consumers fetch instead of being pushed to (the pull sink). One queue
   * per sink instance, named after it; every bridge sharing the store
   * (several instances on one PostgreSQL) sees the same queue, so a
   * consumer may fetch and commit on any of them. Check
   * CEB_HOST_HAS(host, queue_append) before calling. Any thread.
   *
   * queue_append: stores json (len bytes, borrowed for the call) under key
   * (a stable key per delivery: d->idempotency_key; a key the queue still
   * holds is not stored twice). Returns CEB_OK and calls cb(arg, status)
   * exactly once, from a host thread, once the event is durable (CEB_OK:
   * settle the delivery ACK now) or not stored: CEB_EBUSY when the queue
   * already holds max events not committed, CEB_EIO / CEB_ESHUTDOWN. Or
   * returns < 0 and never calls cb. cb must not block. */
  int (*queue_append)(ceb_instance *inst, const char *key, const char *json,
                      size_t len, size_t max, void (*cb)(void *arg, int status),
                      void *arg);
  /* queue_fetch: calls visit(arg, seq, json, len) (borrowed for the call)
   * for up to max events after `after` and after the committed cursor, in
   * order; visit returns non-zero to stop. With wait_ms > 0 and nothing to
   * return it first waits up to wait_ms (real time) for an append on any
   * bridge, or until queue_wake. *last gets the sequence of the last event
   * visited, or max(after, committed). CEB_OK or < 0. Blocks: call from
   * the plugin's own (request) threads. */
  int (*queue_fetch)(ceb_instance *inst, int64_t after, size_t max,
                     int64_t wait_ms,
                     int (*visit)(void *arg, int64_t seq, const char *json,
                                  size_t len),
                     void *arg, int64_t *last);
  /* queue_commit: removes every event up to cursor, for every consumer on
   * every bridge (durable on return). CEB_OK with *committed the queue's
   * cursor (never lower than before), CEB_EINVAL beyond the last event
   * ever appended. Blocks. */
  int (*queue_commit)(ceb_instance *inst, int64_t cursor, int64_t *committed);
  /* queue_stats: events held, last sequence appended, committed cursor
   * (pointers may be NULL). Blocks (a store read). */
  int (*queue_stats)(ceb_instance *inst, int64_t *depth, int64_t *last,
                     int64_t *committed);
  /* queue_wake: ends every queue_fetch of inst waiting (before drain). */
  void (*queue_wake)(ceb_instance *inst);

  /* ABI 1.2: 1 when this bridge runs task now, 0 when another bridge on
   * the same store does (or on error). For work that must run on one
   * bridge at a time (a contracts plugin's scheduled sync): ask before each
   * round; the answer can change (the leader stopped, lost its database
   * connection). task is the plugin's own name for it; the host scopes it
   * by the instance. A bridge alone on its store always leads. Blocks (a
   * store round trip). */
  int (*lead)(ceb_instance *inst, const char *task);

  /* ABI 1.2: reading the contract register (what contracts plugins put),
   * for any role: a source that publishes it to partners (the http
   * intermediary's GET /v1/contracts). Check CEB_HOST_HAS(host,
   * contract_get) / (host, contract_list) before calling. Blocking (a
   * store read): call from a request thread, never from deliver. Any
   * thread.
   *
   * contract_get: the document held under (name, version), as stored (one
   * self-contained JSON text), into *doc (malloc'd, NUL-terminated, *len
   * bytes without the NUL; the caller frees it with free()). CEB_OK,
   * CEB_ENOTFOUND (no such name or version), CEB_EINVAL, CEB_ENOMEM.
   *
   * contract_list: the register's entries for name (NULL: every name) as
   * a JSON array text into *json (malloc'd, NUL-terminated, caller frees):
   * [{"name":..,"version":..,"sha256":..,"fetched_at":<ms since the
   * epoch>}, ...], only what a partner may see (no provenance URL, no
   * conflict record). CEB_OK (an empty register is "[]"), CEB_ENOMEM,
   * CEB_EIO. */
  int (*contract_get)(ceb_instance *inst, const char *name, const char *version,
                      char **doc, size_t *len);
  int (*contract_list)(ceb_instance *inst, const char *name, char **json,
                       size_t *len);

  /* ABI 1.2: the job status of event id as the client that sent it sees
   * it (the RIO Mapper job model, docs/integration-guide.md "Job status"):
   * a JSON object text into *json (malloc'd, NUL-terminated, *len bytes
   * without the NUL; the caller frees it with free()):
   *   {"id","source","type","received_at","status":"pending"|
   *    "in-progress"|"done"|"error"|"time-out", ...}
   * "error" adds "phase" and "message"; "done" adds "response" (the
   * partner's status and body excerpt). client is the identity the event
   * was submitted under (NULL: ""): another client's event is
   * CEB_ENOTFOUND, as an unknown id. CEB_OK, CEB_ENOTFOUND, CEB_EINVAL,
   * CEB_ENOMEM, CEB_EIO. Blocking (a store read): call from a request
   * thread, never from deliver. Any thread. Check CEB_HOST_HAS(host,
   * event_status) before calling. */
  int (*event_status)(ceb_instance *inst, const char *client, const char *id,
                      char **json, size_t *len);

  /* ---- ABI 1.3 additions (appended: a 1.2 host's table ends above) ---- */

  /* ABI 1.3: submit_mapped for n messages at once (a Kafka read, an MQTT
   * burst). Check CEB_HOST_HAS(host, submit_mapped_batch) before calling;
   * without it, call submit_mapped per message.
   *
   * docs[i].doc / len are message i's input document (borrowed for the
   * call). The host runs the section's program on all of them in one
   * round trip to a mapping worker (same bounds as submit_mapped: time
   * and memory per document), then submits the events of every document
   * the program mapped to valid events as ONE unit, in document order
   * (one journal op, one cb), so the order of a key across the batch is
   * the order of docs. Each document gets its own outcome in
   * docs[i].status (and .reason, one line, when it is not CEB_OK):
   *   CEB_OK: its events are in the unit (docs[i].nevents of them; 0 is
   *     never OK: a program that outputs no event is CEB_EMAPPING).
   *   CEB_EMAPPING: the program failed on it, timed out, ran out of
   *     memory, its worker died, or it output something that is not a
   *     CloudEvent ("mapping: <why>").
   *   CEB_EVALIDATION / CEB_ETOOLARGE: one of its events was refused
   *     (validation, profile, contracts, a route filter that failed):
   *     "refused: <code>: <message>".
   * A document refused this way costs only itself: the others are taken.
   *
   * Returns CEB_OK: every docs[i].status is set; cb is called exactly once
   * (for the unit: durable or failed together) when at least one document
   * is CEB_OK, and never when none is. Returns < 0 (CEB_EBUSY backpressure
   * or a key's max_open_per_key with opts->key_limited set, CEB_ESHUTDOWN,
   * CEB_EIO: the store cannot write or no mapping worker could start,
   * CEB_ENOMEM, CEB_EINVAL: bad arguments or the section has no `map`):
   * nothing was taken, cb is never called, every docs[i].status is that
   * code. opts->violations / failed_index are not used. Blocks the calling
   * thread while the programs run (about n documents' mapping time, each
   * bounded by mapping.timeout). Any thread; thread-safe. */
  int (*submit_mapped_batch)(ceb_instance *inst, struct ceb_mapped_doc *docs,
                             size_t n, const ceb_submit_opts *opts,
                             ceb_submit_cb cb, void *cb_arg);

  /* ABI 1.3: 1 when a route with callbacks = true sends the callbacks of inst's
   * events (ceb_submit_opts.callback is honoured), else 0. Fixed for the
   * life of the configuration; a source may ask once at start. Check
   * CEB_HOST_HAS(host, callbacks) before calling. Any thread. */
  int (*callbacks)(ceb_instance *inst);

  /* ---- ABI 1.4 additions (appended: a 1.3 host's table ends above) ---- */

  /* ABI 1.4: submit_mapped without holding the calling thread. Check
   * CEB_HOST_HAS(host, submit_mapped_async) before calling; without it,
   * call submit_mapped.
   *
   * doc / len as submit_mapped's (borrowed for the call: the host copies
   * it); opts' inputs (client, traceparent, callback) are copied too, its
   * out members (violations, failed_index, key_limited) are not used: the
   * outcome comes in the callback. The host queues the document; its
   * mapping threads send every document queued by then, from any number
   * of callers, to a mapping worker in one round trip, then continue with
   * each document's events exactly as submit_mapped does (one unit per
   * document, validated once, journaled).
   *
   * Returns CEB_OK: cb is called exactly once, from a host thread (it may
   * run before this call returns): with status CEB_OK once the events are
   * durable; with refused = 1 and the reason when the document was not
   * taken (the program failed or timed out, its output was not a valid
   * event, backpressure, shutdown: every refusal submit_mapped returns);
   * with refused = 0 and CEB_EIO / CEB_ESHUTDOWN when taken and then not
   * stored. Returns < 0 (CEB_EINVAL: a NULL argument or the section has no
   * `map`; CEB_EBUSY, CEB_ESHUTDOWN, CEB_EIO: not accepting now;
   * CEB_ENOMEM): nothing was queued and cb is never called. cb must not
   * block. Any thread; thread-safe. */
  int (*submit_mapped_async)(ceb_instance *inst, const char *doc, size_t len,
                             const ceb_submit_opts *opts, ceb_submit_cb cb,
                             void *cb_arg);
} ceb_host;

/* 1 when the host table has member m (an ABI 1.2+ member in a newer
 * host) and it is set. */
#define CEB_HOST_HAS(host, m)                                                  \
  ((host) &&                                                                   \
   (host)->struct_size >= offsetof(ceb_host, m) + sizeof((host)->m) &&         \
   (host)->m != NULL)

/* ---- the plugin descriptor ---- */

typedef struct ceb_plugin {
  uint32_t struct_size; /* sizeof(ceb_plugin) as the plugin was built */
  uint32_t abi_major;   /* CEB_ABI_MAJOR */
  uint32_t abi_minor;   /* CEB_ABI_MINOR */
  const char *name;     /* "kafka": matches plugin = kafka */
  const char *version;  /* the plugin's own version */
  const char *description;
  uint32_t roles; /* CEB_ROLE_* */

  /* Typed config per role, CEB_CONFIG_SPEC_END-terminated; NULL when the
   * plugin lacks the role. Keys common to every section (plugin) are the
   * host's and must not be listed. */
  const ceb_config_spec *config_source;
  const ceb_config_spec *config_sink;
  const ceb_config_spec *config_contracts;

  /* Mandatory. Creates an instance from its checked config (borrowed, valid
   * until destroy). *state is the plugin's. Do not start threads or
   * connections that deliver or submit yet. CEB_OK or < 0 with a log line;
   * on failure the plugin has freed everything itself and the host calls
   * nothing else for this instance. */
  int (*init)(const ceb_host *host, ceb_instance *inst,
              const ceb_instance_info *info, const ceb_config *cfg,
              void **state);
  /* Mandatory. Begins work: listen, connect, consume. */
  int (*start)(void *state);
  /* Mandatory. Stops taking new work (sources answer 503 / pause) and
   * finishes or settles what is in flight by deadline_ms (host clock).
   * CEB_OK when nothing is left, CEB_ETIMEOUT otherwise. */
  int (*drain)(void *state, int64_t deadline_ms);
  /* Mandatory. Frees everything; no callback into the host after return. */
  void (*destroy)(void *state);

  /* Mandatory for SINK. Starts one delivery; must not block. Returns CEB_OK
   * and settles later (possibly before returning, from this thread), or
   * returns < 0 without settling (treated as RETRY with the status), or
   * CEB_EBUSY without settling for backpressure: not an attempt; the host
   * re-queues the delivery and pauses the sink briefly (20 ms .. 1 s). A
   * dead-letter forward or receipt refused so is not retried (the dead
   * letter stays in the store DLQ); neither counts against the circuit. */
  int (*deliver)(void *state, ceb_delivery *d);

  /* Mandatory for CONTRACTS. Fetches now: every source, or the one named. */
  int (*sync)(void *state, const char *name);
} ceb_plugin;

/* Size of the ABI 1.0 descriptor: the host refuses anything shorter. */
#define CEB_PLUGIN_SIZE_1_0 (offsetof(ceb_plugin, sync) + sizeof(void *))

typedef const ceb_plugin *(*ceb_plugin_query_fn)(uint32_t host_abi_major,
                                                 uint32_t host_abi_minor);

/* Defines the exported query function for a descriptor. */
#define CEB_PLUGIN_DEFINE(descriptor)                                          \
  CEB_EXPORT const ceb_plugin *ceb_plugin_query(uint32_t host_abi_major,       \
                                                uint32_t host_abi_minor);      \
  CEB_EXPORT const ceb_plugin *ceb_plugin_query(uint32_t host_abi_major,       \
                                                uint32_t host_abi_minor) {     \
    (void)host_abi_minor;                                                      \
    return host_abi_major == CEB_ABI_MAJOR ? &(descriptor) : NULL;             \
  }

/* Logs through the host with printf checking. */
#define CEB_LOG(host, inst, level, ...)                                        \
  (host)->log((inst), (level), __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
