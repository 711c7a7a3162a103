/* The contract register on PostgreSQL: each (name, version) is stored once
 * with its sha256; a different document offered under a held version is
 * flagged as a conflict and never overwrites the held one. Instances
 * syncing at once: the primary key lets one insert; the others see the
 * held row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

static int sha256_hex(const void *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
    return CEB_EINTERNAL;
  for (unsigned i = 0; i < mdlen; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  return CEB_OK;
}

int cebpg_contract_put(ceb_store_impl *s, const char *name, const char *version,
                       const char *document, size_t len, const char *provenance,
                       int64_t now) {
  if (!name || !*name || !version || !*version || !document) return CEB_EINVAL;
  char sha[65];
  if (sha256_hex(document, len, sha) != CEB_OK) return CEB_EINTERNAL;
  char *doc = strndup(document, len); /* text parameter: NUL-terminated */
  if (!doc) return CEB_ENOMEM;
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, name);
  cebpg_p_text(&p, version);
  cebpg_p_text(&p, sha);
  cebpg_p_text(&p, doc);
  cebpg_p_text(&p, provenance);
  cebpg_p_int(&p, now);
  /* one statement: insert, or flag a conflict on the held row when the
   * document differs; says which happened */
  PGresult *r = cebpg_query(
      s, "contract put",
      "WITH ins AS (INSERT INTO contracts (name, version, sha256, document,"
      " provenance, fetched_at) VALUES ($1, $2, $3, $4, $5, $6)"
      " ON CONFLICT (name, version) DO NOTHING RETURNING 1),"
      " flag AS (UPDATE contracts SET conflict = conflict + 1,"
      " conflict_sha256 = $3, conflict_provenance = $5, conflict_at = $6"
      " WHERE name = $1 AND version = $2 AND sha256 <> $3"
      " AND NOT EXISTS (SELECT 1 FROM ins) RETURNING 1)"
      " SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM flag)",
      &p);
  free(doc);
  if (!r) return CEB_EIO;
  int inserted = cebpg_int(r, 0, 0) > 0, flagged = cebpg_int(r, 0, 1) > 0;
  PQclear(r);
  if (inserted) return CEB_OK;
  if (!flagged) return CEB_EDUPLICATE;
  ceb_log_warn("contracts: %s@%s changed upstream (sha256 %s from %s); the "
               "held document is kept and flagged",
               name, version, sha, provenance ? provenance : "?");
  return CEB_ECONFLICT;
}

json_t *cebpg_contract_list(ceb_store_impl *s, const char *name) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, name);
  PGresult *r = cebpg_query(
      s, "contract list",
      "SELECT name, version, sha256, provenance, fetched_at, conflict,"
      " conflict_sha256, conflict_at FROM contracts WHERE $1::text IS NULL"
      " OR name = $1 ORDER BY name COLLATE \"C\", version COLLATE \"C\"",
      &p);
  if (!r) return NULL;
  static const char *const cols[] = {
      "name",       "version",  "sha256",          "provenance",
      "fetched_at", "conflict", "conflict_sha256", "conflict_at"};
  json_t *arr = json_array();
  for (int i = 0; i < PQntuples(r); i++) {
    json_t *o = json_object();
    for (int c = 0; c < 8; c++)
      cebpg_json_col(o, cols[c], r, i, c);
    json_array_append_new(arr, o);
  }
  PQclear(r);
  return arr;
}

char *cebpg_contract_get(ceb_store_impl *s, const char *name,
                         const char *version, size_t *len) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, name);
  cebpg_p_text(&p, version);
  PGresult *r = cebpg_query(s, "contract get",
                            "SELECT document FROM contracts WHERE name = $1"
                            " AND version = $2",
                            &p);
  if (!r) return NULL;
  char *doc = NULL;
  if (PQntuples(r) > 0) {
    doc = cebpg_dup(r, 0, 0);
    if (doc && len) *len = (size_t)PQgetlength(r, 0, 0);
  }
  PQclear(r);
  return doc;
}
