# CDC change record (Debezium envelope) on Kafka -> CloudEvent.
#
# For a Kafka source reading a Debezium topic (JSON converter, with or
# without schemas): `map = file:debezium-cdc.jq`.
#
# Input: the Kafka source's input document (docs/integration-guide.md,
# "Input documents"); the value is Debezium's {"before", "after", "source",
# "op", "ts_ms"} (or {"schema", "payload": that}).
# Output: one CloudEvent per change:
#   id       "<topic>-<partition>-<offset>": the record's place, stable
#            when it is read again
#   type     type_prefix + the table + "." + created | updated | deleted |
#            read (op c, u, d, r: r is a snapshot read)
#   source   ce_source
#   subject  the row's key: the record key's fields joined with ","
#            (Debezium keys are JSON objects of the primary key)
#   time     source.ts_ms: when the change was made in the database
#   data     {"op", "before", "after", "db", "table"}
# A tombstone (the null value Debezium writes after a delete, for log
# compaction) is not a change: it is refused like anything else that is
# not a change record, to the source's dlq_topic (a mapping must output an
# event); set the connector's tombstones.on.delete = false to not have them.
#
# Configure: copy this file next to your bridge.d and set the two below.
def ce_source: "urn:nld:oin:00000001234567890000:systeem:cdc";
def type_prefix: "nl.example.cdc.";

def rfc3339_ms: (. / 1000 | floor | strftime("%Y-%m-%dT%H:%M:%S"))
  + "." + ((. % 1000) + 1000 | tostring | .[1:]) + "Z";
def opname: {c: "created", u: "updated", d: "deleted", r: "read"}[.]
  // error("unknown Debezium op \(tojson)");
# the key's fields joined (a JSON object key), or the key text as it is
def subject_of: (fromjson? // .)
  | (if type == "object" and has("payload") and has("schema") then .payload
     else . end)
  | if type == "object" then [.[] | tostring] | join(",") else tostring end;

if .value_encoding == null then
  error("a tombstone, not a change record")
elif .value_encoding != "json" or (.value | type) != "object" then
  error("not a Debezium change record: the value is not a JSON object")
else . end
| . as $rec
| (.value | if has("payload") and has("schema") then .payload else . end)
| if (.op | type) != "string" or (.source | type) != "object" then
    error("not a Debezium change record: op or source missing")
  else . end
| {specversion: "1.0",
   id: "\($rec.topic)-\($rec.partition)-\($rec.offset)",
   source: ce_source,
   type: (type_prefix + (.source.table // "table") + "." + (.op | opname))}
  + (if $rec.key_encoding == "text" then {subject: ($rec.key | subject_of)}
     else {} end)
  + (if (.source.ts_ms | type) == "number"
     then {time: (.source.ts_ms | rfc3339_ms)} else {} end)
  + {datacontenttype: "application/json",
     data: {op, before, after, db: .source.db, table: .source.table}}
