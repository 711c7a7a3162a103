/* The asyncapi plugin: one [contracts NAME] section = one contract source
 * (a URL, a file, or an Apicurio v3 style registry artifact), fetched on a
 * schedule on the instance's own thread and on demand (sync), bundled into
 * one self-contained JSON document and offered to the host's immutable
 * register under NAME and info.version. The register never overwrites: a
 * changed document under a held version is a conflict, logged and counted;
 * pins never move by themselves. */
#include <ceb/plugin.h>
#include <ceb/semver.h>
#include <ceb/tls.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aa_auth.h"
#include "aa_doc.h"
#include "aa_fetch.h"
#include "http_oauth.h"

#define MiB (1024 * 1024)

static const ceb_config_spec k_spec[] = {
    {"url", CEB_CFG_URL, 0, NULL, 0, 0, NULL,
     "The AsyncAPI document's URL (https; http only with "
     "allow_insecure_http)."},
    {"file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "The AsyncAPI document as a local file (YAML or JSON)."},
    {"registry.url", CEB_CFG_URL, 0, NULL, 0, 0, NULL,
     "Base URL of an Apicurio v3 style registry API (every version of the "
     "artifact is fetched)."},
    {"registry.group", CEB_CFG_STRING, 0, "default", 0, 0, NULL,
     "Registry group id."},
    {"registry.artifact", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Registry artifact id (default: the section name)."},
    {"interval", CEB_CFG_DURATION, 0, "1h", 0, 7LL * 24 * 3600 * 1000, NULL,
     "How often to sync; 0 = only on demand (cebridge contracts sync)."},
    {"timeout", CEB_CFG_DURATION, 0, "30s", 100, 600000, NULL,
     "Timeout of one HTTP request."},
    {"max_size", CEB_CFG_SIZE, 0, "8MiB", 1024, 256LL * MiB, NULL,
     "Largest document (or referenced document) read."},
    {"max_documents", CEB_CFG_INT, 0, "64", 1, 10000, NULL,
     "Most documents a contract may reference ($ref to other files/URLs)."},
    {"allow_insecure_http", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "Allow plain http URLs (tests and loopback registries only)."},
    CEB_TLS_CLIENT_POLICY_SPEC(""),
    CEB_TLS_CLIENT_FILES_SPEC(""),
    {"bearer_token", CEB_CFG_STRING, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "Bearer token sent to the origin of url / registry.url (not to "
     "documents a $ref fetches elsewhere)."},
    HTTP_OAUTH_CLIENT_SPEC,
    {"types.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL,
     "types.<message> = <CloudEvents type>: the type a message carries when "
     "the document does not say it (payload or header const)."},
    CEB_CONFIG_SPEC_END};

typedef struct etag_entry {
  char *url;
  char etag[256]; /* "" until a response carried one */
  char *doc;      /* the bundled document that ETag gave */
  char *version;
  int conflict; /* the register refused doc as a conflict */
} etag_entry;

typedef struct aa_state {
  const ceb_host *host;
  ceb_instance *inst;
  char *name;
  char *data_dir; /* ETag cache; NULL: memory only */
  const char *url, *file, *reg_url, *reg_group, *reg_artifact;
  int64_t interval_ms;
  aa_http_opts http;
  size_t max_docs;
  pthread_mutex_t sync_lock; /* one sync at a time (thread vs on demand) */
  etag_entry *etags;         /* under sync_lock */
  size_t netags;
  char *known_max;  /* highest version seen held so far */
  json_t *pass_new; /* versions stored as new in the running sync */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stop;
  int thread_running;
  pthread_t thread;
} aa_state;

#define LOG(st, lvl, ...) CEB_LOG((st)->host, (st)->inst, lvl, __VA_ARGS__)

static void metric(aa_state *st, const char *name) {
  st->host->metric(st->inst, CEB_METRIC_COUNTER, name, NULL, 1);
}

static void cache_load(aa_state *st, etag_entry *e);

static etag_entry *etag_of(aa_state *st, const char *url) {
  for (size_t i = 0; i < st->netags; i++)
    if (strcmp(st->etags[i].url, url) == 0) return &st->etags[i];
  etag_entry *n = realloc(st->etags, (st->netags + 1) * sizeof *n);
  if (!n) return NULL;
  st->etags = n;
  etag_entry *e = &st->etags[st->netags];
  memset(e, 0, sizeof *e);
  e->url = strdup(url);
  if (!e->url) return NULL;
  st->netags++;
  cache_load(st, e);
  return e;
}

typedef struct fetch_ctx {
  aa_state *st;
  int root_is_url;
} fetch_ctx;

/* Reads a referenced document: URLs over http(s), files only when the root
 * itself is a file (a fetched document may not read local files). */
static char *fetch_ref(void *arg, const char *uri, size_t *len, char *err,
                       size_t errlen) {
  fetch_ctx *fc = arg;
  if (strstr(uri, "://")) {
    aa_http_result r;
    if (aa_http_get(uri, NULL, &fc->st->http, &r, err, errlen) != 0)
      return NULL;
    if (!r.body) {
      snprintf(err, errlen, "%s: HTTP %ld", uri, r.status);
      return NULL;
    }
    *len = r.len;
    return r.body;
  }
  if (fc->root_is_url) {
    snprintf(err, errlen,
             "%s: a fetched document may not reference local "
             "files",
             uri);
    return NULL;
  }
  return aa_file_read(uri, fc->st->http.max_size, len, err, errlen);
}

/* *max = the higher of *max and v (copied). */
static void raise_max(char **max, const char *v) {
  if (*max && ceb_semver_cmp_text(v, *max) <= 0) return;
  char *copy = strdup(v);
  if (!copy) return;
  free(*max);
  *max = copy;
}

/* After a pass: versions stored as new that are above every version held
 * before (including those the register already had) are announced. */
static void announce_new(aa_state *st) {
  char *held = st->known_max ? strdup(st->known_max) : NULL;
  size_t i;
  json_t *v;
  json_array_foreach(st->pass_new, i, v) {
    const char *ver = json_string_value(v);
    if (!held || ceb_semver_cmp_text(ver, held) > 0) {
      LOG(st, CEB_LOG_INFO,
          "new version %s of %s available; pins do not change until you "
          "change them",
          ver, st->name);
      metric(st, "contracts_new_versions_total");
    }
    raise_max(&st->known_max, ver);
  }
  free(held);
  json_array_clear(st->pass_new);
}

/* Parses and bundles one document into *out (sorted-key JSON, malloc'd)
 * and *version (malloc'd). 0 or -1 (logged). */
static int bundle_text(aa_state *st, const char *text, size_t len,
                       const char *base, const char *provenance, char **out,
                       char **version, size_t *ndocs) {
  char err[512] = "";
  json_t *doc = aa_parse(text, len, err, sizeof err);
  if (!doc) {
    LOG(st, CEB_LOG_ERROR, "%s: not YAML or JSON: %s", provenance, err);
    return -1;
  }
  fetch_ctx fc = {st, strstr(base, "://") != NULL};
  aa_bundle_stats bs;
  if (aa_bundle(doc, base, fetch_ref, &fc, st->max_docs, &bs, err,
                sizeof err) != 0) {
    LOG(st, CEB_LOG_ERROR, "%s: resolving $ref failed: %s", provenance, err);
    json_decref(doc);
    return -1;
  }
  *ndocs = bs.documents;
  json_t *info_version =
      json_object_get(json_object_get(doc, "info"), "version");
  const char *aa = json_string_value(json_object_get(doc, "asyncapi"));
  const char *ver = json_string_value(info_version);
  if (aa && json_is_number(info_version)) {
    LOG(st, CEB_LOG_ERROR,
        "%s: info.version is a number; quote it in the YAML (version: "
        "'1.0') so it stays a version string",
        provenance);
    json_decref(doc);
    return -1;
  }
  if (!aa || !ver || (aa[0] != '2' && aa[0] != '3')) {
    LOG(st, CEB_LOG_ERROR, "%s: not an AsyncAPI 2.x/3.x document (%s)",
        provenance,
        !aa    ? "no asyncapi field"
        : !ver ? "no info.version"
               : aa);
    json_decref(doc);
    return -1;
  }
  /* Sorted keys: the same document always gives the same bytes (and
   * sha256), whatever order a registry serves it in. */
  *out = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
  *version = strdup(ver);
  json_decref(doc);
  if (!*out || !*version) {
    free(*out);
    free(*version);
    LOG(st, CEB_LOG_ERROR, "out of memory");
    return -1;
  }
  return 0;
}

/* Offers a bundled document to the register. 0 (stored, identical copy
 * held, or conflict flagged) or -1 (logged). */
static int put_doc(aa_state *st, const char *ver, const char *doc,
                   const char *provenance, size_t ndocs, int *conflict) {
  int rc = st->host->contract_put(st->inst, st->name, ver, doc, strlen(doc),
                                  provenance);
  if (conflict) *conflict = rc == CEB_ECONFLICT;
  if (rc == CEB_OK) {
    LOG(st, CEB_LOG_INFO,
        "stored %s@%s from %s (%zu referenced documents bundled)", st->name,
        ver, provenance, ndocs);
    json_array_append_new(st->pass_new, json_string(ver));
  } else if (rc == CEB_EDUPLICATE) {
    LOG(st, CEB_LOG_DEBUG, "%s@%s unchanged", st->name, ver);
    raise_max(&st->known_max, ver);
  } else if (rc == CEB_ECONFLICT) {
    raise_max(&st->known_max, ver);
    LOG(st, CEB_LOG_ERROR,
        "%s@%s from %s differs from the document held under that version: "
        "flagged as a conflict, the held document stays",
        st->name, ver, provenance);
    metric(st, "contracts_conflicts_total");
  } else {
    LOG(st, CEB_LOG_ERROR, "storing %s@%s failed: %s", st->name, ver,
        ceb_strerror(rc));
    return -1;
  }
  return 0;
}

static int offer(aa_state *st, const char *text, size_t len, const char *base,
                 const char *provenance) {
  char *doc = NULL, *ver = NULL;
  size_t ndocs = 0;
  if (bundle_text(st, text, len, base, provenance, &doc, &ver, &ndocs) != 0)
    return -1;
  int rc = put_doc(st, ver, doc, provenance, ndocs, NULL);
  free(doc);
  free(ver);
  return rc;
}

/* ---- the ETag cache: per URL the last ETag with the document it gave,
 * in memory and, when the instance has a data directory, in
 * <data_dir>/etag-<hash>.json so that `cebridge contracts sync` runs and
 * restarts send If-None-Match too. A 304 re-offers the cached document, so
 * a register that lost it gets it back. */

static unsigned long long fnv1a(const char *s) {
  unsigned long long h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void cache_path(aa_state *st, const char *url, char *buf, size_t size) {
  snprintf(buf, size, "%s/etag-%016llx.json", st->data_dir, fnv1a(url));
}

static void cache_load(aa_state *st, etag_entry *e) {
  if (!st->data_dir) return;
  char path[4096];
  cache_path(st, e->url, path, sizeof path);
  json_t *j = json_load_file(path, 0, NULL);
  const char *url = json_string_value(json_object_get(j, "url"));
  const char *etag = json_string_value(json_object_get(j, "etag"));
  const char *ver = json_string_value(json_object_get(j, "version"));
  const char *doc = json_string_value(json_object_get(j, "document"));
  if (url && etag && ver && doc && strcmp(url, e->url) == 0 &&
      strlen(etag) < sizeof e->etag) {
    e->version = strdup(ver);
    e->doc = strdup(doc);
    e->conflict = json_is_true(json_object_get(j, "conflict"));
    if (e->version && e->doc) snprintf(e->etag, sizeof e->etag, "%s", etag);
  }
  json_decref(j);
}

static void cache_store(aa_state *st, etag_entry *e) {
  if (!st->data_dir) return;
  char path[4096], tmp[4200];
  cache_path(st, e->url, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
  json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:b}", "url", e->url, "etag", e->etag,
                        "version", e->version, "document", e->doc, "conflict",
                        e->conflict);
  /* Written aside (per process: run and contracts sync may share the
   * directory) and renamed: a crash leaves the old entry or the new. */
  if (!j || json_dump_file(j, tmp, JSON_COMPACT) != 0 ||
      rename(tmp, path) != 0) {
    LOG(st, CEB_LOG_WARN, "cannot write the ETag cache %s: %s", path,
        strerror(errno));
    unlink(tmp);
  }
  json_decref(j);
}

static int sync_url(aa_state *st, const char *url) {
  char err[512] = "";
  etag_entry *e = etag_of(st, url);
  if (!e) {
    LOG(st, CEB_LOG_ERROR, "out of memory");
    return -1;
  }
  aa_http_result r;
  if (aa_http_get(url, e->etag, &st->http, &r, err, sizeof err) != 0) {
    LOG(st, CEB_LOG_ERROR, "fetching failed: %s", err);
    return -1;
  }
  if (r.status == 304 && e->doc) {
    /* A conflict was reported when the document arrived; the same
     * document again is not a new one. */
    LOG(st, CEB_LOG_DEBUG, "%s not modified%s", url,
        e->conflict ? " (still conflicting with the held version)" : "");
    return e->conflict ? 0 : put_doc(st, e->version, e->doc, url, 0, NULL);
  }
  if (!r.body) {
    LOG(st, CEB_LOG_ERROR, "fetching %s failed: HTTP %ld", url, r.status);
    return -1;
  }
  char *doc = NULL, *ver = NULL;
  size_t ndocs = 0;
  int rc = bundle_text(st, r.body, r.len, url, url, &doc, &ver, &ndocs);
  free(r.body);
  int conflict = 0;
  if (rc == 0) rc = put_doc(st, ver, doc, url, ndocs, &conflict);
  /* Remember it only once the document was taken (or flagged). */
  if (rc == 0 && r.etag[0]) {
    free(e->doc);
    free(e->version);
    e->doc = doc;
    e->version = ver;
    e->conflict = conflict;
    snprintf(e->etag, sizeof e->etag, "%s", r.etag);
    cache_store(st, e);
  } else {
    free(doc);
    free(ver);
  }
  return rc;
}

static int sync_file(aa_state *st) {
  char err[512] = "";
  size_t len = 0;
  char *text = aa_file_read(st->file, st->http.max_size, &len, err, sizeof err);
  if (!text) {
    LOG(st, CEB_LOG_ERROR, "reading failed: %s", err);
    return -1;
  }
  int rc = offer(st, text, len, st->file, st->file);
  free(text);
  return rc;
}

static char *escape(const char *s) {
  char *e = curl_easy_escape(NULL, s, 0);
  char *out = e ? strdup(e) : NULL;
  curl_free(e);
  return out;
}

#define REG_PAGE 100
#define REG_MAX_PAGES 100

/* Appends the versions of one page of the list to out; *got = entries on
 * the page, *total = "count" (0 when absent). 0 or -1 (logged). */
static int list_page(aa_state *st, const char *base, size_t offset, json_t *out,
                     size_t *got, size_t *total) {
  char url[2600], err[512] = "";
  snprintf(url, sizeof url, "%s/versions?offset=%zu&limit=%d", base, offset,
           REG_PAGE);
  aa_http_result r;
  if (aa_http_get(url, NULL, &st->http, &r, err, sizeof err) != 0) {
    LOG(st, CEB_LOG_ERROR, "listing versions failed: %s", err);
    return -1;
  }
  if (!r.body) {
    LOG(st, CEB_LOG_ERROR, "listing versions at %s failed: HTTP %ld", url,
        r.status);
    return -1;
  }
  json_t *list = json_loadb(r.body, r.len, 0, NULL);
  free(r.body);
  json_t *versions =
      json_is_array(list) ? list : json_object_get(list, "versions");
  if (!json_is_array(versions)) {
    LOG(st, CEB_LOG_ERROR, "%s: not a version list", url);
    json_decref(list);
    return -1;
  }
  *got = json_array_size(versions);
  json_int_t count = json_integer_value(json_object_get(list, "count"));
  *total = count > 0 ? (size_t)count : 0;
  size_t i;
  json_t *v;
  json_array_foreach(versions, i, v) {
    const char *ver = json_is_string(v)
                          ? json_string_value(v)
                          : json_string_value(json_object_get(v, "version"));
    const char *state = json_string_value(json_object_get(v, "state"));
    if (ver && !(state && strcmp(state, "DISABLED") == 0))
      json_array_append_new(out, json_string(ver));
  }
  json_decref(list);
  return 0;
}

/* Apicurio v3: GET .../versions (paged) lists {"count":N,"versions":
 * [{"version":..,"state":..}]}; every enabled version's content is
 * fetched conditionally and offered. */
static int sync_registry(aa_state *st) {
  char *g = escape(st->reg_group), *a = escape(st->reg_artifact);
  json_t *all = json_array();
  char base[2048], url[2400];
  int rc = -1;
  const char *root = st->reg_url;
  size_t rl = strlen(root);
  while (rl && root[rl - 1] == '/')
    rl--;
  if (!g || !a || !all) goto out;
  snprintf(base, sizeof base, "%.*s/groups/%s/artifacts/%s", (int)rl, root, g,
           a);
  size_t offset = 0, got = 0, total = 0;
  for (int page = 0; page < REG_MAX_PAGES; page++) {
    if (list_page(st, base, offset, all, &got, &total) != 0) goto out;
    offset += got;
    if (got < REG_PAGE || (total && offset >= total)) break;
  }
  rc = 0;
  size_t i;
  json_t *v;
  json_array_foreach(all, i, v) {
    char *ev = escape(json_string_value(v));
    if (!ev) {
      rc = -1;
      break;
    }
    snprintf(url, sizeof url, "%s/versions/%s/content", base, ev);
    free(ev);
    if (sync_url(st, url) != 0)
      rc = -1; /* the other versions are still worth a try */
  }
out:
  json_decref(all);
  free(g);
  free(a);
  return rc;
}

static int sync_now(aa_state *st) {
  pthread_mutex_lock(&st->sync_lock);
  int rc = st->file  ? sync_file(st)
           : st->url ? sync_url(st, st->url)
                     : sync_registry(st);
  announce_new(st);
  pthread_mutex_unlock(&st->sync_lock);
  if (rc != 0)
    metric(st, "contracts_sync_failures_total");
  else
    metric(st, "contracts_syncs_total");
  return rc;
}

static void *run(void *arg) {
  aa_state *st = arg;
  pthread_mutex_lock(&st->lock);
  int leader = -1;
  while (!st->stop) {
    pthread_mutex_unlock(&st->lock);
    /* bridges sharing one store sync on one of them at a time (the
     * register is shared; an on-demand sync runs wherever it is asked) */
    int lead =
        !CEB_HOST_HAS(st->host, lead) || st->host->lead(st->inst, "sync");
    if (lead != leader && leader >= 0)
      LOG(st, CEB_LOG_INFO, "%s",
          lead ? "this bridge runs the scheduled sync now"
               : "another bridge runs the scheduled sync now");
    leader = lead;
    if (lead) sync_now(st);
    pthread_mutex_lock(&st->lock);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += st->interval_ms / 1000;
    until.tv_nsec += (st->interval_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    while (!st->stop &&
           pthread_cond_timedwait(&st->cond, &st->lock, &until) != ETIMEDOUT)
      ;
  }
  pthread_mutex_unlock(&st->lock);
  return NULL;
}

static void stop_thread(aa_state *st) {
  if (!st->thread_running) return;
  pthread_mutex_lock(&st->lock);
  st->stop = 1;
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->thread, NULL);
  st->thread_running = 0;
}

static void aa_destroy(void *state) {
  aa_state *st = state;
  if (!st) return;
  stop_thread(st);
  for (size_t i = 0; i < st->netags; i++) {
    free(st->etags[i].url);
    free(st->etags[i].doc);
    free(st->etags[i].version);
  }
  free(st->data_dir);
  free(st->etags);
  free(st->known_max);
  json_decref(st->pass_new);
  free(st->name);
  aa_auth_free(st->http.auth);
  pthread_mutex_destroy(&st->sync_lock);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->cond);
  free(st);
  curl_global_cleanup();
}

static int aa_init(const ceb_host *host, ceb_instance *inst,
                   const ceb_instance_info *info, const ceb_config *cfg,
                   void **state) {
  /* Reference-counted and thread-safe in libcurl >= 7.84; paired with the
   * cleanup in destroy. */
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return CEB_EINTERNAL;
  aa_state *st = calloc(1, sizeof *st);
  if (!st) {
    curl_global_cleanup();
    return CEB_ENOMEM;
  }
  st->host = host;
  st->inst = inst;
  st->name = strdup(info->name);
  if (info->data_dir && *info->data_dir) st->data_dir = strdup(info->data_dir);
  st->pass_new = json_array();
  st->url = ceb_config_str(cfg, "url");
  st->file = ceb_config_str(cfg, "file");
  st->reg_url = ceb_config_str(cfg, "registry.url");
  st->reg_group = ceb_config_str(cfg, "registry.group");
  st->reg_artifact = ceb_config_str(cfg, "registry.artifact");
  if (!st->reg_artifact) st->reg_artifact = info->name;
  st->interval_ms = ceb_config_duration_ms(cfg, "interval", 3600000);
  st->http.timeout_ms = ceb_config_duration_ms(cfg, "timeout", 30000);
  st->http.max_size = (size_t)ceb_config_size(cfg, "max_size", 8 * MiB);
  st->http.allow_http = ceb_config_bool(cfg, "allow_insecure_http", 0);
  st->http.tls_min_version = ceb_tls_min_version(cfg, "");
  st->http.tls_ciphers = ceb_config_str(cfg, "tls.ciphers");
  st->http.tls_ciphersuites = ceb_config_str(cfg, "tls.ciphersuites");
  st->http.tls_ca_file = ceb_config_str(cfg, "tls.ca_file");
  st->http.tls_client_cert = ceb_config_str(cfg, "tls.client_cert");
  st->http.tls_client_key = ceb_config_str(cfg, "tls.client_key");
  st->max_docs = (size_t)ceb_config_int(cfg, "max_documents", 64);
  pthread_mutex_init(&st->sync_lock, NULL);
  pthread_mutex_init(&st->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&st->cond, &ca);
  pthread_condattr_destroy(&ca);
  int sources = !!st->url + !!st->file + !!st->reg_url;
  const char *why = !st->name || !st->pass_new ? "out of memory"
                    : sources != 1 ? "set exactly one of url, file and "
                                     "registry.url"
                                   : NULL;
  const char *insecure = st->url ? st->url : st->reg_url;
  if (!why && insecure && strncmp(insecure, "https://", 8) != 0 &&
      !st->http.allow_http)
    why = "plain http needs allow_insecure_http = true";
  char auth_err[200] = "";
  int rc = why ? CEB_OK
               : aa_auth_new(host, inst, cfg, insecure, st->http.allow_http,
                             &st->http.auth, auth_err, sizeof auth_err);
  if (rc == CEB_ECONFIG) why = auth_err;
  if (why || rc != CEB_OK) {
    if (rc == CEB_OK) rc = st->name && st->pass_new ? CEB_ECONFIG : CEB_ENOMEM;
    CEB_LOG(host, inst, CEB_LOG_ERROR, "%s", why ? why : "out of memory");
    aa_destroy(st);
    return rc;
  }
  *state = st;
  return CEB_OK;
}

static int aa_start(void *state) {
  aa_state *st = state;
  if (st->interval_ms <= 0) return CEB_OK; /* on demand only */
  st->stop = 0;
  if (pthread_create(&st->thread, NULL, run, st) != 0) {
    LOG(st, CEB_LOG_ERROR, "cannot start the sync thread");
    return CEB_EINTERNAL;
  }
  pthread_setname_np(st->thread, "asyncapi-sync");
  st->thread_running = 1;
  return CEB_OK;
}

static int aa_drain(void *state, int64_t deadline_ms) {
  (void)deadline_ms; /* a sync in flight ends within its HTTP timeout */
  stop_thread(state);
  return CEB_OK;
}

static int aa_sync(void *state, const char *name) {
  aa_state *st = state;
  if (name && strcmp(name, st->name) != 0) return CEB_ENOTFOUND;
  return sync_now(st) == 0 ? CEB_OK : CEB_EIO;
}

static const ceb_plugin k_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "asyncapi",
    .version = "1.0.0",
    .description = "AsyncAPI 2.6/3.0 contract fetcher (URL, file, Apicurio "
                   "v3 registry) into the immutable register",
    .roles = CEB_ROLE_CONTRACTS,
    .config_contracts = k_spec,
    .init = aa_init,
    .start = aa_start,
    .drain = aa_drain,
    .destroy = aa_destroy,
    .sync = aa_sync,
};

CEB_PLUGIN_DEFINE(k_plugin)
