/* The immutable contract register: each (name, version) is stored once
 * with its sha256. A different document offered under a held version is
 * flagged as a conflict and never overwrites the held one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

typedef struct contract_args {
  const char *name, *version, *doc, *provenance;
  size_t len;
  int64_t now;
  char sha[65];
} contract_args;

static int sha256_hex(const void *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
    return CEB_EINTERNAL;
  for (unsigned i = 0; i < mdlen; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  return CEB_OK;
}

static int put_run(sqlite3 *db, void *arg) {
  contract_args *a = arg;
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT sha256 FROM contracts WHERE name = ?1 AND"
                         " version = ?2",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, a->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->version, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  int held = step == SQLITE_ROW;
  int same =
      held && strcmp((const char *)sqlite3_column_text(s, 0), a->sha) == 0;
  sqlite3_finalize(s);
  if (step != SQLITE_ROW && step != SQLITE_DONE) return CEB_EIO;
  if (held && same) return CEB_EDUPLICATE;
  const char *sql =
      held ? "UPDATE contracts SET conflict = conflict + 1,"
             " conflict_sha256 = ?3, conflict_provenance = ?5,"
             " conflict_at = ?6 WHERE name = ?1 AND version = ?2 AND ?4 = ?4"
           : "INSERT INTO contracts (name, version, sha256, document,"
             " provenance, fetched_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) return CEB_EIO;
  sqlite3_bind_text(s, 1, a->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->version, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, a->sha, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 4, a->doc, (int)a->len, SQLITE_STATIC);
  cebs_bind_text(s, 5, a->provenance);
  sqlite3_bind_int64(s, 6, a->now);
  int rc = sqlite3_step(s) == SQLITE_DONE ? CEB_OK : CEB_EIO;
  sqlite3_finalize(s);
  if (rc != CEB_OK) return rc;
  /* The conflict flag must be durable, so the op itself succeeds; the
   * caller learns the outcome from a->sha being marked. */
  return held ? 1 : CEB_OK;
}

int cebs_contract_put(cebs_store *st, const char *name, const char *version,
                      const char *document, size_t len, const char *provenance,
                      int64_t now) {
  if (!name || !*name || !version || !*version || !document) return CEB_EINVAL;
  contract_args a = {.name = name,
                     .version = version,
                     .doc = document,
                     .len = len,
                     .provenance = provenance,
                     .now = now};
  if (sha256_hex(document, len, a.sha) != CEB_OK) return CEB_EINTERNAL;
  int rc = cebs_call(st, put_run, &a);
  if (rc == 1) {
    ceb_log_warn("contracts: %s@%s changed upstream (sha256 %s from %s); the "
                 "held document is kept and flagged",
                 name, version, a.sha, provenance ? provenance : "?");
    return CEB_ECONFLICT;
  }
  return rc;
}

json_t *cebs_contract_list(cebs_store *st, const char *name) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *arr = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT name, version, sha256, provenance,"
                         " fetched_at, conflict, conflict_sha256, conflict_at"
                         " FROM contracts WHERE ?1 IS NULL OR name = ?1"
                         " ORDER BY name, version",
                         -1, &s, NULL) == SQLITE_OK) {
    static const char *const cols[] = {
        "name",       "version",  "sha256",          "provenance",
        "fetched_at", "conflict", "conflict_sha256", "conflict_at"};
    cebs_bind_text(s, 1, name);
    arr = json_array();
    while (sqlite3_step(s) == SQLITE_ROW) {
      json_t *o = json_object();
      for (int i = 0; i < 8; i++)
        cebs_json_col(o, cols[i], s, i);
      json_array_append_new(arr, o);
    }
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return arr;
}

char *cebs_contract_get(cebs_store *st, const char *name, const char *version,
                        size_t *len) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  char *doc = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT document FROM contracts WHERE name = ?1 AND"
                         " version = ?2",
                         -1, &s, NULL) == SQLITE_OK) {
    cebs_bind_text(s, 1, name);
    cebs_bind_text(s, 2, version);
    if (sqlite3_step(s) == SQLITE_ROW) {
      int n = sqlite3_column_bytes(s, 0);
      doc = malloc((size_t)n + 1);
      if (doc) {
        memcpy(doc, sqlite3_column_text(s, 0), (size_t)n);
        doc[n] = '\0';
        if (len) *len = (size_t)n;
      }
    }
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return doc;
}
