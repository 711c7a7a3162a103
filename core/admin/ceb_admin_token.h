/* The admin API's bearer token: [bridge] admin.token when set (it may be
 * ${ENV} or file:/path), else the token file admin.token in the data
 * directory (the store's directory), which the first `cebridge run`
 * creates with 32 random bytes (hex), mode 0600, and every later run and
 * the CLI read. The token itself is never logged. */
#ifndef CEB_ADMIN_TOKEN_H
#define CEB_ADMIN_TOKEN_H

#include <stddef.h>

#include <ceb/config.h>

#include "config/ceb_host_cfg.h"

/* Longest token accepted (a configured or file token). */
#define CEB_ADMIN_TOKEN_MAX 512

/* <dir of [bridge] store>/admin.token into buf. CEB_OK or CEB_EINVAL when
 * it does not fit. */
int ceb_admin_token_path(const ceb_bridge_cfg *bridge, char *buf, size_t size);

/* The token: admin.token when set, else the token file (created when
 * absent and create is 1). *out is malloc'd. *source (may be NULL) is set
 * to "config", "file" or "generated". The file is refused when it is not a
 * regular file, when group or others may read it, or when it is empty or
 * holds anything but one printable word. CEB_ENOTFOUND: no file and
 * create is 0. Thread: any (creation is safe against a concurrent
 * creator: the first file written wins). */
int ceb_admin_token_get(const ceb_bridge_cfg *bridge, int create, char **out,
                        const char **source, char *err, size_t errlen);

#endif
