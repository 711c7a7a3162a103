/* The intermediary's route table (http_in_routes, the one its request
 * handling dispatches on) and plugins/http/openapi.json list the same
 * operations, both ways; and http_in_route matches as the document's
 * path templates and parameter patterns say (every route found, a
 * segment outside its pattern or an extra segment not, 405 with the
 * path's methods, routes turned off not found). */
#include <jansson.h>
#include <string.h>

#include "ceb_test.h"
#include "http_in_int.h"
#include "http_in_publish.h"

static int has_route(const char *method, const char *path) {
  for (const http_route *r = http_in_routes; r->id != HTTP_ROUTE_NONE; r++)
    if (strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0) return 1;
  return 0;
}

int main(void) {
  json_error_t err;
  json_t *doc =
      json_load_file(CEB_SOURCE_DIR "/plugins/http/openapi.json", 0, &err);
  CHECK_MSG(doc != NULL, "openapi.json: %s", err.text);
  if (!doc) return ceb_test_done("unit_http_in_routes");
  size_t documented = 0;
  const char *path;
  json_t *item;
  json_object_foreach(json_object_get(doc, "paths"), path, item) {
    const char *m;
    json_t *op;
    json_object_foreach(item, m, op) {
      char upper[16];
      size_t k = 0;
      for (; m[k] && k < sizeof upper - 1; k++)
        upper[k] = (char)(m[k] & ~0x20);
      upper[k] = '\0';
      CHECK_MSG(has_route(upper, path), "%s %s is documented, not routed",
                upper, path);
      documented++;
    }
  }
  size_t routed = 0;
  for (const http_route *r = http_in_routes; r->id != HTTP_ROUTE_NONE; r++) {
    char lower[16];
    size_t k = 0;
    for (; r->method[k] && k < sizeof lower - 1; k++)
      lower[k] = (char)(r->method[k] | 0x20);
    lower[k] = '\0';
    CHECK_MSG(
        json_object_get(json_object_get(json_object_get(doc, "paths"), r->path),
                        lower),
        "%s %s is routed, not documented", r->method, r->path);
    routed++;
  }
  CHECK_INT(documented, routed);
  json_decref(doc);

  http_source s = {.path = "/events", .serve_openapi = 1, .serve_contracts = 1};
  const char *allow = NULL;
  CHECK_INT(http_in_route(&s, "POST", "/events", &allow), HTTP_ROUTE_EVENTS);
  CHECK_INT(http_in_route(&s, "OPTIONS", "/events", &allow),
            HTTP_ROUTE_HANDSHAKE);
  CHECK_INT(http_in_route(&s, "GET", "/events", &allow), HTTP_ROUTE_NONE);
  CHECK_STR(allow, "POST, OPTIONS");
  CHECK_INT(http_in_route(&s, "GET", "/openapi.json", &allow),
            HTTP_ROUTE_OPENAPI);
  CHECK_INT(http_in_route(&s, "POST", "/openapi.json", &allow),
            HTTP_ROUTE_NONE);
  CHECK_STR(allow, "GET");
  CHECK_INT(http_in_route(&s, "GET", "/v1/contracts", &allow),
            HTTP_ROUTE_CONTRACTS);
  CHECK_INT(http_in_route(&s, "GET", "/v1/contracts/duo.enrol-x_1", &allow),
            HTTP_ROUTE_CONTRACT_VERSIONS);
  CHECK_INT(
      http_in_route(&s, "GET", "/v1/contracts/enrol/1.2.3-rc.1+b7", &allow),
      HTTP_ROUTE_CONTRACT);
  static const char *const bad[] = {"/v1/contracts/",
                                    "/v1/contracts//1.0.0",
                                    "/v1/contracts/enrol/",
                                    "/v1/contracts/enrol/1.0.0/x",
                                    "/v1/contracts/en rol/1.0.0",
                                    "/v1/contracts/enrol/1_0",
                                    "/v1/contractsx",
                                    "/v1/contracts/../admin",
                                    NULL};
  for (int i = 0; bad[i]; i++) {
    CHECK_MSG(http_in_route(&s, "GET", bad[i], &allow) == HTTP_ROUTE_NONE &&
                  allow == NULL,
              "%s matched", bad[i]);
  }
  s.serve_contracts = 0;
  s.serve_openapi = 0;
  CHECK_INT(http_in_route(&s, "GET", "/v1/contracts", &allow), HTTP_ROUTE_NONE);
  CHECK(allow == NULL);
  CHECK_INT(http_in_route(&s, "GET", "/openapi.json", &allow), HTTP_ROUTE_NONE);
  CHECK(allow == NULL);
  return ceb_test_done("unit_http_in_routes");
}
