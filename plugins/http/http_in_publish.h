/* What the intermediary publishes besides taking events: its own OpenAPI
 * document (GET /openapi.json, plugins/http/openapi.json embedded at build)
 * and the contract register as AsyncAPI documents (GET /v1/contracts,
 * /v1/contracts/{name}, /v1/contracts/{name}/{version}, through the host's
 * contract_get / contract_list of ABI 1.2), and the job status of an
 * event for the client that sent it (GET /v1/events/{id}, the host's
 * event_status of ABI 1.2).
 *
 * http_in_routes is the intermediary's route table: http_in_request.c
 * dispatches on it, and plugin test test_http_in_publish checks it against
 * openapi.json in both directions. */
#ifndef HTTP_IN_PUBLISH_H
#define HTTP_IN_PUBLISH_H

#include <stddef.h>

typedef enum http_route_id {
  HTTP_ROUTE_NONE = 0,
  HTTP_ROUTE_EVENTS,            /* POST {path} */
  HTTP_ROUTE_HANDSHAKE,         /* OPTIONS {path} */
  HTTP_ROUTE_OPENAPI,           /* GET /openapi.json */
  HTTP_ROUTE_CONTRACTS,         /* GET /v1/contracts */
  HTTP_ROUTE_CONTRACT_VERSIONS, /* GET /v1/contracts/{name} */
  HTTP_ROUTE_CONTRACT,          /* GET /v1/contracts/{name}/{version} */
  HTTP_ROUTE_EVENT_STATUS       /* GET /v1/events/{id} */
} http_route_id;

typedef struct http_route {
  http_route_id id;
  const char *method;
  const char *path; /* as in openapi.json; "/events" stands for `path` */
} http_route;

/* The table, ended by an entry with id HTTP_ROUTE_NONE. */
extern const http_route http_in_routes[];

struct http_source;
struct http_req;

/* The route of (method, url): events_path is the configured `path`;
 * routes turned off (serve.openapi, serve.contracts) do not match. On
 * HTTP_ROUTE_NONE, *allow is the Allow value when the path exists with
 * other methods (405), else NULL (404). */
http_route_id http_in_route(const struct http_source *s, const char *method,
                            const char *url, const char **allow);

/* Reads serve.openapi / serve.contracts / serve.status and prepares the OpenAPI
 * document for this configuration (the events path, the security requirements
 * of `auth`). CEB_OK, CEB_ECONFIG (logged: `path` collides with a published
 * route), CEB_ENOMEM. */
int http_in_publish_init(struct http_source *s);
void http_in_publish_free(struct http_source *s);

/* Answers a published GET (r->reply) once the request may be served
 * (authenticated as configured, within its rate). url is the decoded
 * target. MHD thread; blocks on a store read for the contract and status
 * routes. */
void http_in_publish_serve(struct http_req *r, http_route_id id,
                           const char *url);

#endif
