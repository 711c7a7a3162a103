/* cebridge public SDK: typed configuration.
 *
 * A plugin declares what it accepts as a ceb_config_spec array; the host
 * parses bridge.d/, rejects unknown keys, duplicates, missing required keys
 * and out-of-range values with file:line before the plugin's init runs, and
 * hands the plugin a read-only ceb_config holding the checked values.
 * docs/config-reference.md is generated from these specs.
 *
 * A ceb_config is immutable once handed to a plugin and may be read from any
 * thread. Returned strings are borrowed and live as long as the config. */
#ifndef CEB_CONFIG_H
#define CEB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ceb_cfg_type {
  CEB_CFG_STRING = 0,
  CEB_CFG_INT = 1,      /* decimal integer within [min, max] */
  CEB_CFG_BOOL = 2,     /* true/false, yes/no, on/off, 1/0 */
  CEB_CFG_DURATION = 3, /* "250ms", "5s", "2h", "1h30m", "0s"; [min, max] in ms */
  CEB_CFG_SIZE = 4,     /* "512", "64KiB", "1MiB", "2GiB", "1kB"; [min, max] bytes */
  CEB_CFG_RATE = 5,     /* "200/s", "1000/min", "10/h"; [min, max] per second */
  CEB_CFG_LIST = 6,     /* comma- or space-separated items */
  CEB_CFG_ENUM = 7,     /* one of `choices` ("a|b|c") */
  CEB_CFG_ADDRESS = 8,  /* "host:port", "[v6]:port"; port 0 = ephemeral */
  CEB_CFG_URL = 9,      /* absolute http(s) URL */
  CEB_CFG_PATH = 10     /* file-system path */
} ceb_cfg_type;

enum {
  CEB_CFG_REQUIRED = 1u << 0, /* must be set */
  CEB_CFG_SECRET = 1u << 1,   /* may be ${ENV} or file:/path; never logged */
  CEB_CFG_PREFIX = 1u << 2,   /* key ends in '.': accepts any key with that
                                 prefix as a string (e.g. "rdkafka.") */
  CEB_CFG_MULTI = 1u << 3     /* may repeat; values append (lists) */
};

typedef struct ceb_config_spec {
  const char *key;           /* "listen", "tls.cert", "rdkafka." */
  ceb_cfg_type type;
  unsigned flags;
  const char *default_value; /* in config syntax; NULL = no default */
  int64_t min, max;          /* range for INT/DURATION(ms)/SIZE/RATE; 0,0 = none */
  const char *choices;       /* ENUM: "a|b|c" */
  const char *description;   /* one sentence for the reference */
} ceb_config_spec;

/* Terminates a spec array. */
#define CEB_CONFIG_SPEC_END {0, CEB_CFG_STRING, 0, 0, 0, 0, 0, 0}

typedef struct ceb_config ceb_config;

/* Value of key, or its default, or NULL. Secrets are resolved. */
const char *ceb_config_str(const ceb_config *cfg, const char *key);
int64_t ceb_config_int(const ceb_config *cfg, const char *key, int64_t dflt);
int ceb_config_bool(const ceb_config *cfg, const char *key, int dflt);
int64_t ceb_config_duration_ms(const ceb_config *cfg, const char *key,
                               int64_t dflt);
uint64_t ceb_config_size(const ceb_config *cfg, const char *key,
                         uint64_t dflt);
double ceb_config_rate(const ceb_config *cfg, const char *key, double dflt);
/* Items of a LIST key: *items is borrowed (NULL-terminated array). */
size_t ceb_config_list(const ceb_config *cfg, const char *key,
                       const char *const **items);
/* Calls fn for every set key starting with prefix, in file order; stops and
 * returns fn's value when it is non-zero. */
int ceb_config_foreach(const ceb_config *cfg, const char *prefix,
                       int (*fn)(const char *key, const char *value, void *arg),
                       void *arg);
/* "file:line" where key was set, or "default". Borrowed. */
const char *ceb_config_origin(const ceb_config *cfg, const char *key);
/* The section name ("intermediary" of [source intermediary]). */
const char *ceb_config_name(const ceb_config *cfg);

/* ---- bound fields (ABI 1.1) ----
 *
 * Instead of reading keys back by name, a plugin (and the host, for its own
 * sections) describes where each key goes in its own struct and lets
 * ceb_config_bind write the parsed, typed values there once, at init:
 *
 *   typedef struct my_conf { const char *topic; int64_t timeout_ms; } my_conf;
 *   static const ceb_config_binding my_bind[] = {
 *       CEB_BIND("topic", my_conf, topic),
 *       CEB_BIND("timeout", my_conf, timeout_ms), CEB_CONFIG_BINDING_END};
 *   my_conf c;
 *   if (ceb_config_bind(cfg, my_bind, &c, err, sizeof err) != CEB_OK) ...
 *
 * The bindings are a table of their own rather than a member appended to
 * ceb_config_spec: a longer spec entry would change the stride of the spec
 * arrays every ABI 1.0 plugin already ships.
 *
 * The field a key is bound to has the C type of its spec type:
 *   STRING, ENUM, ADDRESS, URL, PATH  const char * (NULL when unset without
 *                                     default; secrets resolved)
 *   INT, DURATION (ms)                int64_t
 *   BOOL                              int (0/1)
 *   SIZE (bytes)                      uint64_t
 *   RATE (per second)                 double
 *   LIST                              ceb_config_items
 * An unset key gets its spec default; a value that does not parse (the host
 * has already reported it with file:line) gets the default as well, and 0 /
 * NULL when there is none. CEB_BIND_ORIGIN_OF binds the key's origin
 * ("file:line", or "default") to a const char * field instead. Strings and
 * items are borrowed from cfg and live as long as it. */
typedef struct ceb_config_items {
  const char *const *items; /* NULL-terminated */
  size_t count;
} ceb_config_items;

enum { CEB_BIND_VALUE = 0, CEB_BIND_ORIGIN = 1 };

typedef struct ceb_config_binding {
  const char *key; /* a key of the section's spec (not a PREFIX entry) */
  size_t offset;   /* offsetof(struct, field) */
  unsigned what;   /* CEB_BIND_VALUE or CEB_BIND_ORIGIN */
} ceb_config_binding;

#define CEB_BIND(key, type, field)                                             \
  { (key), offsetof(type, field), CEB_BIND_VALUE }
#define CEB_BIND_ORIGIN_OF(key, type, field)                                   \
  { (key), offsetof(type, field), CEB_BIND_ORIGIN }
/* Terminates a binding array. */
#define CEB_CONFIG_BINDING_END                                                 \
  { 0, 0, 0 }

/* Writes every bound key of cfg into base (see above). CEB_OK; CEB_EINVAL
 * (err says which binding) when a key is not in cfg's spec or is a PREFIX
 * entry - a bug in the binding table, not in the operator's file. Fields of
 * bindings before the failing one are written. Reentrant; needs a host of
 * ABI 1.1 or later. */
int ceb_config_bind(const ceb_config *cfg, const ceb_config_binding *bindings,
                    void *base, char *err, size_t errlen);

/* Value parsers shared by the host and plugins. CEB_OK or CEB_EINVAL. */
int ceb_parse_duration_ms(const char *text, int64_t *ms);
int ceb_parse_size(const char *text, uint64_t *bytes);
int ceb_parse_rate(const char *text, double *per_second);
int ceb_parse_bool(const char *text, int *value);
int ceb_parse_int(const char *text, int64_t *value);
/* Splits "host:port" / "[v6]:port" into host (caller buffer) and port. */
int ceb_parse_address(const char *text, char *host, size_t host_size,
                      int *port);

/* ---- secret references ---- */

/* What ceb_secret_resolve found. */
typedef enum ceb_secret_kind {
  CEB_SECRET_LITERAL = 0,  /* no reference: *out is NULL, use the value */
  CEB_SECRET_RESOLVED = 1, /* *out is the secret: free with ceb_secret_free */
  CEB_SECRET_ERROR = -1    /* err says why; it never holds the secret */
} ceb_secret_kind;

/* Resolves a secret reference the way the host resolves SECRET keys
 * (plugins use it for values the host cannot type, e.g. pass-through
 * keys): "file:PATH" is the content of a regular file of at most 64 KiB
 * without NUL bytes, one trailing newline removed (a relative PATH is taken
 * from base_dir, NULL: the working directory); otherwise every "${NAME}" in
 * the value is replaced by the environment variable NAME, the text around
 * kept ("${OLD} ${NEW}" for a list of two secrets). A value with neither is
 * a literal. Reentrant. */
ceb_secret_kind ceb_secret_resolve(const char *value, const char *base_dir,
                                   char **out, char *err, size_t errlen);
/* Overwrites and frees a resolved secret; NULL is ignored. */
void ceb_secret_free(char *secret);

#ifdef __cplusplus
}
#endif
#endif
