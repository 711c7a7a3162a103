# meemoo webhook (Standard Webhooks) -> CloudEvent.
#
# For the HTTP intermediary (`plugin = http` source) that receives meemoo's
# signed webhooks (the meemoo webhook guide for SIP status events): set
# `webhook.secret` on the source so the intermediary verifies
# webhook-signature (and the timestamp tolerance, and webhook-id replays)
# BEFORE this program runs, then `map = file:meemoo-webhook.jq`.
#
# Input: the intermediary's input document (docs/integration-guide.md,
# "Input documents"); the body is meemoo's {"type", "timestamp", "data"}.
# Output: one CloudEvent:
#   id     the webhook-id header (stable across meemoo's retries, so a
#          retried webhook is a duplicate of the first, not a new event)
#   time   the payload's timestamp (when it happened, not when it was sent)
#   type   type_prefix + the payload's type
#   source ce_source
#   subject the SIP's correlation_id, when the payload has one
#   data   the payload's data, as JSON
# A body that is not such a payload is refused (HTTP 400 with the reason).
# The intermediary answers 202 as soon as the event is durable: well
# within the guide's 15 s.
#
# Configure: copy this file next to your bridge.d and set the two below.
def ce_source: "urn:nld:oin:00000001234567890000:systeem:meemoo";
def type_prefix: "nl.example.";

def need(f; what): f // error("not a meemoo webhook: \(what) missing");

if .body_encoding != "json" or (.body | type) != "object" then
  error("not a meemoo webhook: the body is not a JSON object")
else . end
| need(.headers["webhook-id"]; "webhook-id header") as $id
| .body
| need(.type | strings; "payload type") as $type
| need(.timestamp | strings; "payload timestamp") as $time
| {specversion: "1.0", id: $id, source: ce_source,
   type: (type_prefix + $type), time: $time}
  + (if (.data.correlation_id | type) == "string"
     then {subject: .data.correlation_id} else {} end)
  + {datacontenttype: "application/json", data: .data}
