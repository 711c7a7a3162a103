// Partner-side client for the intermediary interop test: emits CloudEvents
// with the official JavaScript SDK (pinned by package-lock.json) over its own
// HTTP transport, in binary and structured mode, plus a batch of
// SDK-serialised events. Exits 0 only when every request was accepted
// (the intermediary's 202 body names the accepted ids).
"use strict";
const { CloudEvent, Mode, emitterFor, httpTransport } = require("cloudevents");
const { randomUUID } = require("crypto");

const url = process.argv[2];
if (!url) {
  console.error("usage: node emit.js URL");
  process.exit(2);
}
const source = "urn:nld:oin:00000001234567890000:interop";

const cases = [
  {
    mode: Mode.BINARY,
    event: new CloudEvent({
      id: "js-bin-1",
      source,
      type: "nl.edu.interop.binary",
      subject: "student-42",
      datacontenttype: "application/json",
      partitionkey: "k1",
      data: { student: 42, name: "Zo\u00eb" },
    }),
  },
  {
    mode: Mode.STRUCTURED,
    event: new CloudEvent({
      id: "js-str-1",
      source,
      type: "nl.edu.interop.structured",
      time: "2024-01-02T03:04:05.678Z",
      datacontenttype: "application/json",
      data: { ok: true, list: [1, 2, 3] },
    }),
  },
  {
    mode: Mode.STRUCTURED,
    event: new CloudEvent({
      id: "js-b64-1",
      source,
      type: "nl.edu.interop.bytes",
      datacontenttype: "application/octet-stream",
      data: new Uint8Array([0, 1, 2, 255]),
    }),
  },
  {
    mode: Mode.BINARY,
    event: new CloudEvent({
      id: "js-txt-1",
      source,
      type: "nl.edu.interop.text",
      datacontenttype: "text/plain",
      data: "hello world",
    }),
  },
];

function check(label, response, ids) {
  let body;
  try {
    body = JSON.parse(response.body);
  } catch (e) {
    throw new Error(`${label}: response is not JSON: ${response.body}`);
  }
  if (body.status !== "accepted" || !ids.every((id) => body.ids.includes(id)))
    throw new Error(`${label}: not accepted: ${response.body}`);
  console.log(`${label}: accepted ${ids.join(",")}`);
}

async function main() {
  const transport = httpTransport(url);
  for (const c of cases) {
    const emit = emitterFor(transport, { mode: c.mode });
    const response = await emit(c.event, {
      headers: { "Idempotency-Key": randomUUID() },
    });
    check(`${c.mode} ${c.event.id}`, response, [c.event.id]);
  }
  const batch = [
    new CloudEvent({ id: "js-batch-1", source, type: "nl.edu.interop.batch",
                     data: { n: 1 } }),
    new CloudEvent({ id: "js-batch-2", source, type: "nl.edu.interop.batch",
                     data: { n: 2 } }),
  ];
  const response = await transport({
    headers: { "content-type": "application/cloudevents-batch+json",
               "idempotency-key": randomUUID() },
    body: JSON.stringify(batch.map((e) => e.toJSON())),
  });
  check("batch", response, ["js-batch-1", "js-batch-2"]);
}

main().catch((err) => {
  console.error(err.message || err);
  process.exit(1);
});
