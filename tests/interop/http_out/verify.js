// Standard Webhooks reference library (npm standardwebhooks, pinned) on both
// sides of cebridge's signatures:
//   node verify.js check <requests.json> <secret>...
//     verifies every captured request with each secret alone (real clock,
//     5 minute tolerance); a tampered body and a stranger's secret must fail.
//     Prints one JSON line {"verified": n, "rejected": m}; exit 1 on mismatch.
//   node verify.js sign <secret> <count>
//     prints JSON lines {id, timestamp, body, signature} signed now, for the
//     C side to verify with http_webhook_verify.
"use strict";
const fs = require("fs");
const { Webhook } = require("standardwebhooks");

const STRANGER = "whsec_c3RyYW5nZXIgc2VjcmV0IGZvciB0aGUgdGVzdA==";

function check(file, secrets) {
  const requests = JSON.parse(fs.readFileSync(file, "utf8"));
  let verified = 0;
  let rejected = 0;
  let failures = 0;
  for (const req of requests) {
    for (const secret of secrets) {
      try {
        new Webhook(secret).verify(req.body, req.headers, { jsonParse: false });
        verified++;
      } catch (e) {
        failures++;
        console.error(`rejected ${req.headers["webhook-id"]}: ${e.message}`);
      }
    }
    for (const [secret, body] of [[STRANGER, req.body], [secrets[0], req.body + " "]]) {
      try {
        new Webhook(secret).verify(body, req.headers, { jsonParse: false });
        failures++;
        console.error(`accepted a forged request ${req.headers["webhook-id"]}`);
      } catch (e) {
        rejected++;
      }
    }
  }
  console.log(JSON.stringify({ verified, rejected }));
  return failures === 0 && requests.length > 0 ? 0 : 1;
}

function sign(secret, count) {
  const wh = new Webhook(secret);
  for (let i = 0; i < count; i++) {
    const id = `msg_node_${i}`;
    const now = new Date();
    const body = JSON.stringify({ n: i, text: "héllo ✓", at: now.toISOString() });
    const signature = wh.sign(id, now, body);
    const timestamp = Math.floor(now.getTime() / 1000).toString();
    console.log(JSON.stringify({ id, timestamp, body, signature }));
  }
  return 0;
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "check" && args.length >= 2) {
  process.exitCode = check(args[0], args.slice(1));
} else if (mode === "sign" && args.length === 2) {
  process.exitCode = sign(args[0], parseInt(args[1], 10));
} else {
  console.error("usage: verify.js check <requests.json> <secret>... | sign <secret> <count>");
  process.exitCode = 2;
}
