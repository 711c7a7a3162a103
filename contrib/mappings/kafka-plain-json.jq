# Plain JSON record on Kafka -> CloudEvent.
#
# For a Kafka source whose topic carries plain JSON values (a student
# information system, an internal service), not CloudEvents:
# `map = file:kafka-plain-json.jq`.
#
# Input: the Kafka source's input document (docs/integration-guide.md,
# "Input documents"). Output: one CloudEvent:
#   id       the id_header header when the record has it, else
#            "<topic>-<partition>-<offset>" (stable: the same record read
#            again after a rebalance is a duplicate, not a new event)
#   type     the type_header header when present, else ce_type
#   source   ce_source
#   time     the record's timestamp (ms precision), when it has one
#   partitionkey  the record key, when it has a text key (a Kafka sink
#            keeps records of one key in order)
#   data     the value, as JSON
# A value that is not JSON (text, binary, a tombstone) is refused: the
# record goes to the source's dlq_topic with the reason.
#
# Configure: copy this file next to your bridge.d and set the four below.
def ce_source: "urn:nld:oin:00000001234567890000:systeem:sis";
def ce_type: "nl.example.sis.record";
def id_header: "event-id";
def type_header: "event-type";

# ms since the epoch -> RFC 3339 UTC with milliseconds
def rfc3339_ms: (. / 1000 | floor | strftime("%Y-%m-%dT%H:%M:%S"))
  + "." + ((. % 1000) + 1000 | tostring | .[1:]) + "Z";

if .value_encoding != "json" then
  error("value is not JSON (\(.value_encoding // "tombstone"))")
else . end
| {specversion: "1.0",
   id: (.headers[id_header] // "\(.topic)-\(.partition)-\(.offset)"),
   source: ce_source,
   type: (.headers[type_header] // ce_type)}
  + (if .timestamp then {time: (.timestamp | rfc3339_ms)} else {} end)
  + (if .key_encoding == "text" and .key != "" then {partitionkey: .key}
     else {} end)
  + {datacontenttype: "application/json", data: .value}
