/* What the two Standard Webhooks interop tests share: the pinned
 * reference library installed with `npm ci` at test time (an unreachable
 * registry fails the test), the received requests saved as the JSON
 * verify.js reads, and `node verify.js check` run over them. Single test
 * thread. */
#ifndef SWH_INTEROP_H
#define SWH_INTEROP_H

#include "ceb_test_rx.h"

/* `npm ci` in npm_dir (its package.json and package-lock.json), 300 s at
 * most. 0 on success; a line on stderr otherwise. */
int swh_npm_ci(const char *npm_dir);

/* A receiver handler answering every request 204. */
void swh_answer_204(void *arg, const rx_request *req, size_t index,
                    rx_response *resp);

/* Saves every request's webhook-id/-timestamp/-signature headers and body
 * to path as the JSON array verify.js reads. 0 on success. */
int swh_save_requests(rx_server *rx, const char *path);

/* `node verify.js check file <secrets>` (secrets: space-separated, each a
 * separate argument), 120 s at most: *verified gets how many (request,
 * secret) pairs the library verified, *rejected how many forgeries
 * (stranger's key, altered body) it refused. 0 when node exited 0 and
 * answered; CHECKs its exit and output. */
int swh_node_check(const char *npm_dir, const char *file, const char *secrets,
                   long *verified, long *rejected);

#endif
