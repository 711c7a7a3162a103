/* Plugin loader: finds <plugin_dir>/<name>.so, dlopen()s it RTLD_NOW |
 * RTLD_LOCAL, calls ceb_plugin_query and checks the descriptor. Any failure
 * is one line in err and the library is dlclose()d.
 *
 * A loader caches one handle per plugin name (several instances share it)
 * and closes them all in ceb_loader_free. Control thread only. */
#ifndef CEB_LOADER_H
#define CEB_LOADER_H

#include <stddef.h>

#include <ceb/plugin.h>

typedef struct ceb_loaded_plugin {
  char *name;
  char *path;
  void *handle;             /* dlopen handle, owned */
  const ceb_plugin *desc;   /* static in the library */
} ceb_loaded_plugin;

typedef struct ceb_loader ceb_loader;

/* New loader over plugin_dir (copied). NULL on out of memory. */
ceb_loader *ceb_loader_new(const char *plugin_dir);
/* Closes every loaded library. Instances must be destroyed before. */
void ceb_loader_free(ceb_loader *l);
const char *ceb_loader_dir(const ceb_loader *l);

/* Loads plugin `name` (a-z, 0-9, '_', '-') or returns the cached one. The
 * loader's directory may be a search path ("dir1:dir2"): first match wins.
 * *out is owned by the loader. CEB_OK, or < 0 with a reason in err. */
int ceb_loader_load(ceb_loader *l, const char *name, ceb_loaded_plugin **out,
                    char *err, size_t errlen);

/* Loads one file by path, outside any cache (tests, `cebridge plugins
 * FILE`). On success *out is the caller's: free with ceb_loaded_free. */
int ceb_loaded_open(const char *path, const char *expect_name,
                    ceb_loaded_plugin **out, char *err, size_t errlen);
void ceb_loaded_free(ceb_loaded_plugin *p);

/* Checks a descriptor against this host's ABI; pure (no dlopen).
 * CEB_OK or CEB_EABI with the reason in err. */
int ceb_plugin_check(const ceb_plugin *desc, char *err, size_t errlen);

/* "source|sink|contracts|topics" words for a role mask into buf. */
const char *ceb_roles_str(uint32_t roles, char *buf, size_t size);

/* The plugin directory to use when none is configured: $CEBRIDGE_PLUGIN_DIR,
 * else <dir of the running binary>/../lib/cebridge/plugins when it exists,
 * else the install location. Writes into buf. */
const char *ceb_plugin_dir_default(char *buf, size_t size);

#endif
