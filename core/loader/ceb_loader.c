#include "loader/ceb_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CEB_PLUGIN_INSTALL_DIR
#define CEB_PLUGIN_INSTALL_DIR "/usr/lib/cebridge/plugins"
#endif

typedef struct loader_entry {
  struct loader_entry *next;
  ceb_loaded_plugin *p;
} loader_entry;

struct ceb_loader {
  char *dir;
  loader_entry *entries;
};

ceb_loader *ceb_loader_new(const char *plugin_dir) {
  ceb_loader *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->dir = strdup(plugin_dir ? plugin_dir : "");
  if (!l->dir) {
    free(l);
    return NULL;
  }
  return l;
}

void ceb_loader_free(ceb_loader *l) {
  if (!l) return;
  for (loader_entry *e = l->entries, *n; e; e = n) {
    n = e->next;
    ceb_loaded_free(e->p);
    free(e);
  }
  free(l->dir);
  free(l);
}

const char *ceb_loader_dir(const ceb_loader *l) {
  return l->dir;
}

static int valid_plugin_name(const char *name) {
  if (!name || !*name || strlen(name) > 64) return 0;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
          *c == '-'))
      return 0;
  return 1;
}

const char *ceb_roles_str(uint32_t roles, char *buf, size_t size) {
  static const char *const names[] = {"source", "sink", "contracts", "topics",
                                      "mappings"};
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < 5; i++)
    if (roles & (1u << i))
      n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s",
                            n ? "," : "", names[i]);
  return buf;
}

#define REQUIRE_CB(field, why)                                                 \
  do {                                                                         \
    if (!desc->field) {                                                        \
      snprintf(err, errlen, "plugin '%s' lacks the mandatory callback '%s'%s", \
               desc->name, #field, why);                                       \
      return CEB_EABI;                                                         \
    }                                                                          \
  } while (0)

int ceb_plugin_check(const ceb_plugin *desc, char *err, size_t errlen) {
  const uint32_t known_roles = CEB_ROLE_SOURCE | CEB_ROLE_SINK |
                               CEB_ROLE_CONTRACTS | CEB_ROLE_TOPICS |
                               CEB_ROLE_MAPPINGS; /* ABI 1.2 */
  /* struct_size first: nothing past it may be read. */
  if (desc->struct_size < offsetof(ceb_plugin, abi_minor) + sizeof(uint32_t)) {
    snprintf(err, errlen,
             "descriptor is %u bytes, too short to carry an ABI "
             "version",
             desc->struct_size);
    return CEB_EABI;
  }
  if (desc->abi_major != CEB_ABI_MAJOR) {
    snprintf(err, errlen,
             "built for ABI %u.%u, this host speaks ABI %d.%d "
             "(major versions must match)",
             desc->abi_major, desc->abi_minor, CEB_ABI_MAJOR, CEB_ABI_MINOR);
    return CEB_EABI;
  }
  if (desc->abi_minor > CEB_ABI_MINOR) {
    snprintf(err, errlen,
             "needs ABI %u.%u, newer than this host's %d.%d "
             "(upgrade cebridge)",
             desc->abi_major, desc->abi_minor, CEB_ABI_MAJOR, CEB_ABI_MINOR);
    return CEB_EABI;
  }
  if (desc->struct_size < CEB_PLUGIN_SIZE_1_0) {
    snprintf(err, errlen,
             "descriptor is %u bytes, ABI 1.0 needs at least %zu "
             "(short struct)",
             desc->struct_size, (size_t)CEB_PLUGIN_SIZE_1_0);
    return CEB_EABI;
  }
  if (!desc->name || !valid_plugin_name(desc->name)) {
    snprintf(err, errlen, "descriptor has no valid name");
    return CEB_EABI;
  }
  if (!(desc->roles & (CEB_ROLE_SOURCE | CEB_ROLE_SINK | CEB_ROLE_CONTRACTS)) ||
      (desc->roles & ~known_roles)) {
    snprintf(err, errlen, "plugin '%s' declares unknown or no roles (0x%x)",
             desc->name, desc->roles);
    return CEB_EABI;
  }
  REQUIRE_CB(init, "");
  REQUIRE_CB(start, "");
  REQUIRE_CB(drain, "");
  REQUIRE_CB(destroy, "");
  if (desc->roles & CEB_ROLE_SINK)
    REQUIRE_CB(deliver, " (required by the sink role)");
  if (desc->roles & CEB_ROLE_CONTRACTS)
    REQUIRE_CB(sync, " (required by the contracts role)");
  return CEB_OK;
}

void ceb_loaded_free(ceb_loaded_plugin *p) {
  if (!p) return;
  if (p->handle) dlclose(p->handle);
  free(p->name);
  free(p->path);
  free(p);
}

int ceb_loaded_open(const char *path, const char *expect_name,
                    ceb_loaded_plugin **out, char *err, size_t errlen) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "plugin file %s not found", path);
    return CEB_ENOTFOUND;
  }
  /* RTLD_LOCAL: plugins cannot see each other's symbols; RTLD_NOW: an
   * unresolved symbol fails here, not in the middle of a delivery. */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    snprintf(err, errlen, "cannot load %s: %s", path, why ? why : "?");
    return CEB_EABI;
  }
  dlerror();
  ceb_plugin_query_fn query;
  *(void **)&query = dlsym(h, CEB_PLUGIN_QUERY_SYMBOL);
  if (!query) {
    snprintf(err, errlen, "%s does not export %s", path,
             CEB_PLUGIN_QUERY_SYMBOL);
    dlclose(h);
    return CEB_EABI;
  }
  const ceb_plugin *desc = query(CEB_ABI_MAJOR, CEB_ABI_MINOR);
  if (!desc) {
    snprintf(err, errlen, "%s declined ABI %d.%d", path, CEB_ABI_MAJOR,
             CEB_ABI_MINOR);
    dlclose(h);
    return CEB_EABI;
  }
  char why[256];
  if (ceb_plugin_check(desc, why, sizeof why) != CEB_OK) {
    snprintf(err, errlen, "%s rejected: %s", path, why);
    dlclose(h);
    return CEB_EABI;
  }
  if (expect_name && strcmp(desc->name, expect_name) != 0) {
    snprintf(err, errlen, "%s calls itself '%s', expected '%s'", path,
             desc->name, expect_name);
    dlclose(h);
    return CEB_EABI;
  }
  ceb_loaded_plugin *p = calloc(1, sizeof *p);
  if (!p || !(p->name = strdup(desc->name)) || !(p->path = strdup(path))) {
    if (p) {
      free(p->name);
      free(p);
    }
    dlclose(h);
    snprintf(err, errlen, "out of memory");
    return CEB_ENOMEM;
  }
  p->handle = h;
  p->desc = desc;
  *out = p;
  return CEB_OK;
}

int ceb_loader_load(ceb_loader *l, const char *name, ceb_loaded_plugin **out,
                    char *err, size_t errlen) {
  *out = NULL;
  if (!valid_plugin_name(name)) {
    snprintf(err, errlen, "invalid plugin name '%s' (allowed: a-z 0-9 _ -)",
             name ? name : "");
    return CEB_EINVAL;
  }
  for (loader_entry *e = l->entries; e; e = e->next)
    if (strcmp(e->p->name, name) == 0) {
      *out = e->p;
      return CEB_OK;
    }
  /* The plugin directory may be a search path "a:b": first match wins. */
  char path[PATH_MAX];
  char why[512] = "";
  ceb_loaded_plugin *p = NULL;
  int st = CEB_ENOTFOUND;
  const char *dir = l->dir;
  for (;;) {
    const char *colon = strchr(dir, ':');
    size_t dlen = colon ? (size_t)(colon - dir) : strlen(dir);
    if (snprintf(path, sizeof path, "%.*s/%s.so", (int)dlen, dir, name) >=
        (int)sizeof path) {
      snprintf(err, errlen, "plugin path too long");
      return CEB_EINVAL;
    }
    struct stat stt;
    if (stat(path, &stt) == 0) {
      st = ceb_loaded_open(path, name, &p, why, sizeof why);
      break;
    }
    if (!colon) break;
    dir = colon + 1;
  }
  if (st == CEB_ENOTFOUND && !why[0])
    snprintf(why, sizeof why, "%s.so not found in %s", name, l->dir);
  if (st != CEB_OK) {
    snprintf(err, errlen, "plugin '%s': %s", name, why);
    return st;
  }
  loader_entry *e = calloc(1, sizeof *e);
  if (!e) {
    ceb_loaded_free(p);
    snprintf(err, errlen, "out of memory");
    return CEB_ENOMEM;
  }
  e->p = p;
  e->next = l->entries;
  l->entries = e;
  *out = p;
  return CEB_OK;
}

const char *ceb_plugin_dir_default(char *buf, size_t size) {
  const char *env = getenv("CEBRIDGE_PLUGIN_DIR");
  if (env && *env) {
    snprintf(buf, size, "%s", env);
    return buf;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      char cand[PATH_MAX + 64];
      snprintf(cand, sizeof cand, "%s/../lib/cebridge/plugins", exe);
      struct stat st;
      if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode)) {
        char *real = realpath(cand, NULL);
        snprintf(buf, size, "%s", real ? real : cand);
        free(real);
        return buf;
      }
    }
  }
  snprintf(buf, size, "%s", CEB_PLUGIN_INSTALL_DIR);
  return buf;
}
