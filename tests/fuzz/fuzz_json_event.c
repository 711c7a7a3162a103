/* Fuzz target: the JSON event and batch parsers. A decoded event must
 * validate without crashing and survive encode -> decode -> encode with the
 * same bytes (also through the journal's trusted decoder); the decoder must
 * accept exactly the texts jansson accepts as a whole (its fast path cuts
 * the data member out, this checks the cut never lets bad JSON through);
 * anything else aborts so that libFuzzer reports it. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const ceb_event *ev) {
  ceb_violations v;
  ceb_validate_opts o = {sizeof o, CEB_PROFILE_ENFORCE, 0};
  ceb_event_validate(ev, &o, &v);
  char *a = NULL, *b = NULL;
  size_t alen, blen;
  /* encoding may refuse (invalid UTF-8 text data cannot come from JSON, so
   * it must not) */
  if (ceb_json_encode(ev, &a, &alen) != CEB_OK) abort();
  ceb_event *again = NULL;
  if (ceb_json_decode(a, alen, &again, NULL) != CEB_OK) abort();
  if (ceb_json_encode(again, &b, &blen) != CEB_OK || alen != blen ||
      memcmp(a, b, alen) != 0)
    abort();
  ceb_event_unref(again);
  again = NULL;
  if (ceb_json_decode_trusted(a, alen, &again, NULL) != CEB_OK) abort();
  ceb_free(b);
  b = NULL;
  if (ceb_json_encode(again, &b, &blen) != CEB_OK || alen != blen ||
      memcmp(a, b, alen) != 0)
    abort();
  ceb_event_unref(again);
  ceb_free(a);
  ceb_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ceb_event *ev = NULL;
  ceb_error err;
  if (ceb_json_decode((const char *)data, size, &ev, &err) == CEB_OK) {
    json_t *whole =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!whole) abort();
    json_decref(whole);
    check_round_trip(ev);
    ceb_event_unref(ev);
  } else if (err.code[0] == '\0' || err.message[0] == '\0') {
    abort(); /* every failure explains itself */
  }
  ceb_event **evs = NULL;
  size_t n = 0;
  if (ceb_batch_decode((const char *)data, size, &evs, &n, &err) == CEB_OK) {
    for (size_t i = 0; i < n; i++)
      check_round_trip(evs[i]);
    ceb_events_free(evs, n);
  }
  return 0;
}
