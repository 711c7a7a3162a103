/* Config keys of [source NAME] with plugin = http. */
#include "http_in.h"
#include "http_jwt.h"

#define MS(x) ((int64_t)(x)*1000)

const ceb_config_spec http_source_spec[] = {
    {"listen", CEB_CFG_ADDRESS, 0, "127.0.0.1:8443", 0, 0, NULL,
     "Address the intermediary listens on; port 0 picks a free port."},
    {"port_file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "File the bound port is written to at start (useful with port 0)."},
    {"path", CEB_CFG_STRING, 0, "/events", 0, 0, NULL,
     "Request path events are POSTed to."},
    {"serve.openapi", CEB_CFG_BOOL, 0, "true", 0, 0, NULL,
     "Serve this endpoint's OpenAPI document at GET /openapi.json "
     "(public: it describes the endpoint)."},
    {"serve.status", CEB_CFG_BOOL, 0, "true", 0, 0, NULL,
     "Serve the job status of an event to the client that sent it at GET "
     "/v1/events/{id} (pending, in-progress, done with the partner's "
     "answer, error, time-out), under this endpoint's authentication and "
     "rate_limit; a client sees only its own events."},
    {"serve.contracts", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "Serve the contract register as AsyncAPI documents at GET "
     "/v1/contracts[/{name}[/{version}]], under this endpoint's "
     "authentication (auth, tls.client_ca) and rate_limit."},
    {"threads", CEB_CFG_INT, 0, "2", 1, 64, NULL,
     "Listener threads: one libmicrohttpd poll daemon each, on its own "
     "SO_REUSEPORT socket of the same address (the kernel spreads "
     "connections over them)."},
    {"tls.cert", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "PEM server certificate (chain); set with tls.key to serve HTTPS."},
    {"tls.key", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "PEM private key of tls.cert (unencrypted; keep the file private)."},
    {"tls.client_ca", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "PEM CA bundle: when set, clients must present a certificate it signed "
     "(mTLS)."},
    CEB_TLS_LISTENER_POLICY_SPEC(""),
    {"max_body", CEB_CFG_SIZE, 0, "1MiB", 1, 256 * 1024 * 1024, NULL,
     "Largest request body; larger ones get 413 without being buffered."},
    {"max_connections", CEB_CFG_INT, 0, "1024", 1, 1000000, NULL,
     "Most concurrent connections."},
    {"max_connections_per_ip", CEB_CFG_INT, 0, "64", 1, 1000000, NULL,
     "Most concurrent connections from one IP address."},
    {"connection_timeout", CEB_CFG_DURATION, 0, "30s", MS(1), MS(3600), NULL,
     "Inactivity limit: a connection with no traffic for this long is "
     "closed. Also the time a kept-alive connection has to send its next "
     "complete request head."},
    {"request_head_timeout", CEB_CFG_DURATION, 0, "10s", MS(1), MS(3600), NULL,
     "A new connection's request head (TLS handshake, request line and "
     "headers) must be complete within this, however steadily its bytes "
     "come; otherwise the connection is closed (slow senders, slowloris)."},
    {"request_body_timeout", CEB_CFG_DURATION, 0, "60s", MS(1), MS(3600), NULL,
     "A request body must be complete within this after its head; "
     "otherwise the connection is closed."},
    {"request_body_min_rate", CEB_CFG_SIZE, 0, "1KiB", 0, 1024 * 1024 * 1024,
     NULL,
     "Bytes per second a request body must average, judged from 5 s after "
     "its head; a slower sender is cut off. 0: no minimum."},
    {"connection_reserve", CEB_CFG_INT, 0, "64", 0, 1000000, NULL,
     "Connection slots kept for new clients: once max_connections minus "
     "this many are open, each new connection closes the one that has "
     "waited longest (1 s at least) for its request head and takes its "
     "place (not from an address holding half of max_connections_per_ip). "
     "At most half of max_connections."},
    {"connection_memory", CEB_CFG_SIZE, 0, "32KiB", 8192, 16 * 1024 * 1024,
     NULL,
     "Per-connection memory for request headers and read buffers; "
     "bounds the header size (a larger request head gets 431). "
     "libmicrohttpd clears all of it after every request: more costs CPU "
     "per request."},
    {"retry_after", CEB_CFG_DURATION, 0, "5s", MS(1), MS(3600), NULL,
     "Retry-After sent with 503 (draining, backpressure)."},
    {"auth", CEB_CFG_ENUM, 0, "oauth2", 0, 0, "oauth2|none",
     "Client authentication: OAuth2 bearer JWT, or none (loopback only)."},
    HTTP_OAUTH2_SPEC_ENTRIES{
        "clients.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL,
        "clients.CLIENT.types = nl.edu.*|nl.duo.x: event types CLIENT may "
        "send (exact, prefix*, *suffix, *). Once any is set, unlisted clients "
        "are refused. clients.CLIENT.callback = URL: the callback URL of "
        "CLIENT's events when a request has no X-Callback (https, or http to "
        "a loopback address; needs a route with callbacks = true)."},
    {"callback_allow", CEB_CFG_LIST, 0, NULL, 0, 0, NULL,
     "URL prefixes a callback must lie under (X-Callback and "
     "clients.CLIENT.callback), e.g. https://rio.example.nl/callbacks/: the "
     "same scheme, host and port, and a path that equals the prefix's or "
     "continues it at a '/' (compared after libcurl's normalisation, dot "
     "segments removed; a path with a percent-encoded '.', '/', '\\' or "
     "'%', a '\\' or a '..;' segment is refused, as its meaning depends "
     "on the receiving server). Unset: any https URL (or http to a loopback "
     "address). Set it when the clients are known: a client's URL is a "
     "request the bridge makes on its behalf."},
    {"idempotency", CEB_CFG_ENUM, 0, "optional", 0, 0, "off|optional|required",
     "Idempotency-Key (UUID v4) handling: ignored, honoured when sent, or "
     "required."},
    {"rate_limit", CEB_CFG_RATE, 0, NULL, 0, 1000000000, NULL,
     "Requests per second per client (token bucket); unset: no limit."},
    {"rate_limit.burst", CEB_CFG_INT, 0, "0", 0, 1000000, NULL,
     "Token bucket size (0: one second's worth, at least 1)."},
    {"webhook.allowed_origins", CEB_CFG_LIST, 0, NULL, 0, 0, NULL,
     "Origins granted by the CloudEvents webhook validation handshake "
     "(OPTIONS): host names or patterns (*.example.org); * grants all. "
     "Unset: the handshake is refused."},
    {"webhook.secrets", CEB_CFG_LIST, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "Standard Webhooks secrets (whsec_ + base64 of at least 24 random "
     "bytes): when set, every POST must carry a valid webhook-signature "
     "(several secrets for rotation)."},
    {"webhook.tolerance", CEB_CFG_DURATION, 0, "5m", MS(1), MS(86400), NULL,
     "Largest accepted webhook-timestamp skew; webhook-ids are remembered "
     "this long to reject replays."},
    {"webhook.replay_cache", CEB_CFG_INT, 0, "100000", 16, 10000000, NULL,
     "Most webhook-ids remembered for replay rejection."},
    CEB_CONFIG_SPEC_END};
