/* A map function for the fake host (ceb_fake_set_map): a stand-in, in C,
 * for a source's jq program in plugin tests, so that a plugin's mapped path
 * (its input document, submit_mapped, the refusal) is tested without the
 * host's mapping runtime. It reads the document's payload member (its name
 * is the arg: "body", "value" or "payload") and:
 *   - an object with a string "fail": refuses, CEB_EMAPPING with
 *     "mapping: <fail>" (the host's reason for a program's error(<fail>));
 *   - an object with a string "id": one event with that id, type
 *     nl.edu.mapped, data the object (JSON);
 *   - an array of such objects: one event each (a batch);
 *   - anything else (text, base64, a number): one event with id
 *     "mapped-<document length>" and the payload as text data.
 * Reentrant. */
#ifndef CEB_FAKE_MAP_H
#define CEB_FAKE_MAP_H

#include <stddef.h>

#include <ceb/ceb.h>

#define CEB_FAKE_MAP_SOURCE "urn:nld:oin:00000001234567890000:systeem:mapped"

int ceb_fake_map_payload(void *arg, const char *doc, size_t len,
                         ceb_event **out, size_t max, size_t *n, char *err,
                         size_t errlen);

#endif
