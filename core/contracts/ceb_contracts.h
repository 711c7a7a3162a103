/* The contracts the running bridge enforces: every route that pins
 * `contract = NAME@SPEC` gets the version of NAME held in the register that
 * the pin resolves to, loaded and compiled once when the bridge starts (and
 * again only when the config is reloaded). A newer version arriving in the
 * register while the bridge runs changes nothing: upgrades happen when the
 * operator changes the pin.
 *
 * ceb_contracts_check is the runtime's contract hook (ceb_contract_check_fn)
 * and may run on any number of threads at once; open and free run on the
 * control thread. */
#ifndef CEB_CONTRACTS_H
#define CEB_CONTRACTS_H

#include <stddef.h>

#include <ceb/event.h>
#include <ceb/validate.h>
#include <jansson.h>

#include "config/ceb_conf.h"
#include "contracts/ceb_contract.h"
#include "store/ceb_store.h"

typedef struct ceb_contracts ceb_contracts;
struct ceb_route;

/* Resolves the pin of every [route] section of conf against the register in
 * st and loads the versions. A pin that resolves to nothing, or a version
 * that does not load, fails with a reason in err (CEB_ECONFIG) unless the
 * route says contract.mode = warn: then it is logged and that route's
 * events are let through with a warning. *out is owned by the caller. */
int ceb_contracts_open(const ceb_conf *conf, ceb_store *st, ceb_contracts **out,
                       char *err, size_t errlen);
void ceb_contracts_free(ceb_contracts *cs);

/* The runtime hook: checks ev against the version route->contract resolved
 * to. CEB_OK or CEB_EVALIDATION with violations. arg is the ceb_contracts.
 * Thread-safe. */
int ceb_contracts_check(void *arg, const struct ceb_route *route,
                        const ceb_event *ev, ceb_violations *v);

/* The version a route's pin resolved to (borrowed), NULL when unresolved. */
const char *ceb_contracts_resolved(const ceb_contracts *cs, const char *route);

/* ---- helpers for the CLI ---- */

/* types.<message> = <type> of [contracts name] in conf, as a new object
 * (empty when conf is NULL or the section is absent). */
json_t *ceb_contracts_types(const ceb_conf *conf, const char *name);

/* Loads (name, version) from the register. CEB_OK, CEB_ENOTFOUND, or
 * CEB_EINVAL with a reason in err. */
int ceb_contracts_load_held(ceb_store *st, const ceb_conf *conf,
                            const char *name, const char *version, int compile,
                            ceb_contract **out, char *err, size_t errlen);

/* The held versions of name that the pin text resolves to (exact or
 * highest in range); NULL when none. Returns malloc'd string. */
char *ceb_contracts_resolve_pin(ceb_store *st, const char *pin, char *err,
                                size_t errlen);

/* Writes the differences between two versions to out: messages added,
 * removed and changed; changes that reject events the old version
 * accepted (property removed, type changed, new required property, enum
 * value removed, narrower range...) are marked BREAKING. Returns the
 * number of breaking changes. */
size_t ceb_contract_diff(const ceb_contract *a, const ceb_contract *b,
                         FILE *out);

#endif
