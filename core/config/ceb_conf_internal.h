/* Helpers shared by the ceb_conf_*.c files of the config part (host-only,
 * not part of the SDK). */
#ifndef CEB_CONF_INTERNAL_H
#define CEB_CONF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "config/ceb_conf.h"
#include "config/ceb_config_build.h"

/* Levenshtein distance between a and b (bounded inputs: keys and names). */
size_t ceb_conf_edit_distance(const char *a, const char *b);

/* Collects the closest candidate to a misspelt word. Feed every candidate
 * to ceb_conf_suggest_add; best is NULL when none is close enough. */
typedef struct ceb_conf_suggest {
  const char *word;
  const char *best; /* borrowed candidate */
  size_t best_dist;
} ceb_conf_suggest;
void ceb_conf_suggest_init(ceb_conf_suggest *s, const char *word);
void ceb_conf_suggest_add(ceb_conf_suggest *s, const char *candidate);

/* Checks one value against its spec entry. On error returns CEB_EINVAL and
 * writes a message (never containing the value when the spec is SECRET)
 * and a hint. label names the place, e.g. "'timeout' in [route r]". */
int ceb_conf_value_check(const ceb_config_spec *spec, const char *value,
                         const char *label, char *msg, size_t msg_size,
                         char *hint, size_t hint_size);

/* "1h30m", "250ms", "0s": the shortest exact spelling of ms. */
void ceb_conf_format_duration(int64_t ms, char *buf, size_t size);
/* "64KiB", "10kB", "512B": the shortest exact spelling of bytes. */
void ceb_conf_format_size(uint64_t bytes, char *buf, size_t size);

/* The display name of a spec type ("duration", ...). */
const char *ceb_conf_type_name(int type);

/* Route references (from, to, dlq, receipts) and route value forms
 * (match.<attr>, retry.schedule, contract, order_by). */
void ceb_conf_check_routes(const ceb_conf *conf, ceb_conf_errors *errs);

/* Binds the host's typed fields from the values as loaded (see
 * ceb_conf_load). */
void ceb_conf_bind_raw(ceb_conf *conf);

/* Whether text is a valid section or attribute name. */
int ceb_conf_name_ok(const char *text);
int ceb_conf_attr_ok(const char *text);

/* Contract pin: NAME@1.2.0, NAME@^1, NAME@^1.2, NAME@~1.2. */
int ceb_conf_contract_pin_ok(const char *text);

#endif
