#include "swh_interop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ceb_test.h"

#define NPM_TIMEOUT "300"
#define NODE_TIMEOUT "120"

int swh_npm_ci(const char *npm_dir) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && timeout " NPM_TIMEOUT
           " npm ci --no-audit --no-fund --loglevel=error >&2",
           npm_dir);
  int rc = system(cmd);
  if (rc != 0)
    fprintf(stderr, "npm ci failed (%d): is the npm registry reachable?\n", rc);
  return rc;
}

void swh_answer_204(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 204;
}

int swh_save_requests(rx_server *rx, const char *path) {
  json_t *all = json_array();
  for (size_t i = 0; i < rx_count(rx); i++) {
    const rx_request *r = rx_get(rx, i);
    json_t *h = json_object();
    static const char *names[] = {"webhook-id", "webhook-timestamp",
                                  "webhook-signature"};
    for (size_t k = 0; k < 3; k++) {
      const char *v = ceb_headers_get(&r->headers, names[k]);
      json_object_set_new(h, names[k], json_string(v ? v : ""));
    }
    json_array_append_new(
        all, json_pack("{s:o,s:s%}", "headers", h, "body", r->body, r->len));
  }
  int rc = json_dump_file(all, path, JSON_COMPACT);
  json_decref(all);
  return rc;
}

int swh_node_check(const char *npm_dir, const char *file, const char *secrets,
                   long *verified, long *rejected) {
  *verified = *rejected = -1;
  char cmd[2048];
  /* the secrets are test constants (whsec_ base64): no quoting needed
   * beyond the word splitting that makes each its own argument */
  snprintf(cmd, sizeof cmd,
           "cd '%s' && timeout " NODE_TIMEOUT " node verify.js check '%s' %s",
           npm_dir, file, secrets);
  FILE *pp = popen(cmd, "r");
  CHECK(pp != NULL);
  if (!pp) return -1;
  char line[256] = "";
  if (!fgets(line, sizeof line, pp)) line[0] = '\0';
  int rc = pclose(pp);
  CHECK_MSG(rc == 0, "verify.js check exited %d", rc);
  json_t *res = json_loads(line, 0, NULL);
  CHECK_MSG(res != NULL, "verify.js output: %s", line);
  if (res) {
    *verified = (long)json_integer_value(json_object_get(res, "verified"));
    *rejected = (long)json_integer_value(json_object_get(res, "rejected"));
  }
  json_decref(res);
  return rc == 0 && res ? 0 : -1;
}
