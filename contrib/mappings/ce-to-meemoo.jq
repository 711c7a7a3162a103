# CloudEvent -> meemoo-style webhook body {type, timestamp, data} (egress).
#
# For a webhook sink (or a route to one) whose partner wants the body shape
# of meemoo's webhooks rather than a CloudEvent: `map =
# file:ce-to-meemoo.jq` on the sink or the route. Set `webhook.secrets` on
# the sink: the partner gets Standard Webhooks headers (webhook-id,
# webhook-timestamp, webhook-signature) signed over this body, and the
# Idempotency-Key / webhook-id stays the delivery's (stable across
# retries), as for any delivery.
#
# Input: the CloudEvent in the JSON format (what the journal holds).
# Output: {"body": {"type", "timestamp", "data"}} (include/ceb/plugin.h,
# egress mappings); sent as application/json:
#   type       the event's type, without type_prefix when it starts with it
#   timestamp  the event's time (RFC 3339)
#   data       the event's data (JSON, or a string for text data)
# An event without time, or with binary data (data_base64), has no such
# body: the delivery is dead-lettered (reason "mapping") with the error.
#
# Configure: copy this file next to your bridge.d and set the prefix below
# ("" keeps the type as it is).
def type_prefix: "";

if (.time | type) != "string" then
  error("the event has no time: the body's timestamp is required")
elif has("data_base64") then
  error("binary data (data_base64) cannot be the body's data")
else . end
| {body: {type: (if type_prefix != "" and (.type | startswith(type_prefix))
                 then .type[(type_prefix | length):] else .type end),
          timestamp: .time,
          data: .data}}
