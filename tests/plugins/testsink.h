/* In-tree scripted sink for core tests. As a plugin (testsink.so) it acks,
 * retries or rejects every delivery per its `mode` key and can append one
 * line per delivery to `record` ("route id attempt topic"). Linked into a
 * test, the test also drives it directly: it can hold deliveries and settle
 * them itself, or script each outcome with a callback.
 *
 * Thread-safety: every testsink_* function is thread-safe. */
#ifndef CEB_TESTSINK_H
#define CEB_TESTSINK_H

#include <ceb/plugin.h>

extern const ceb_plugin ceb_testsink_plugin;

typedef struct testsink testsink;

/* One recorded delivery (copied when it arrived). */
typedef struct testsink_seen {
  char route[64];
  char id[128];
  char topic[128];
  char idem_key[80];
  uint32_t attempt;
  char deadreason[32]; /* the deadreason extension, "" when absent */
  /* ABI 1.2: the egress mapping's result (ceb_delivery_mapped) */
  int mapped; /* 0: none */
  char body[512];
  char content_type[64];
  char headers[256]; /* "name: value\n" per header */
  char key[64];      /* "" when NULL */
  char map_topic[64];
} testsink_seen;

/* Returns the outcome of d and may fill info (reason, retry_after...). */
typedef ceb_outcome (*testsink_script_fn)(void *arg, const ceb_delivery *d,
                                          ceb_settle_info *info);

/* Scripts outcomes (NULL: back to the configured mode). */
void testsink_script(testsink *s, testsink_script_fn fn, void *arg);
/* The next n deliver calls return CEB_EBUSY (backpressure) without
 * recording anything; busy_count: how many did so far. */
void testsink_busy(testsink *s, int n);
size_t testsink_busy_count(testsink *s);
/* hold 1: keep deliveries unsettled until testsink_settle_held. */
void testsink_hold(testsink *s, int hold);
/* Settles the oldest held delivery with outcome; 0 when none is held. */
int testsink_settle_held(testsink *s, ceb_outcome outcome, const char *reason);
/* Settles a held delivery twice (a buggy sink); 0 when none is held. */
int testsink_settle_held_twice(testsink *s);
size_t testsink_held(testsink *s);
/* Deliveries seen so far; copy of the i-th (0 when absent). */
size_t testsink_count(testsink *s);
int testsink_get(testsink *s, size_t i, testsink_seen *out);
/* How many deliveries of event id were seen. */
size_t testsink_count_id(testsink *s, const char *id);

#endif
