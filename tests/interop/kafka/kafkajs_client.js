// kafkajs side of the Kafka interop test (driven by test_kafka_interop.c).
//
//   node kafkajs_client.js produce BROKERS TOPIC COUNT
//     produces COUNT binary-mode CloudEvents (ce_ headers, key k-<i>)
//   node kafkajs_client.js consume BROKERS TOPIC COUNT
//     reads COUNT records from the beginning and prints one JSON line each:
//     {"topic","partition","offset","key","headers":{...},"value"}
// Exits non-zero on any error or after 60 s without COUNT records.
'use strict';
const { Kafka, logLevel, Partitioners } = require('kafkajs');

const [mode, brokers, topic, countText] = process.argv.slice(2);
const count = Number(countText);
if (!['produce', 'consume'].includes(mode) || !brokers || !topic ||
    !(count > 0)) {
  console.error('usage: kafkajs_client.js produce|consume BROKERS TOPIC COUNT');
  process.exit(2);
}

const kafka = new Kafka({
  clientId: 'cebridge-interop',
  brokers: brokers.split(','),
  logLevel: logLevel.ERROR,
  retry: { retries: 10 },
});

async function produce() {
  // Not idempotent: kafkajs's idempotent producer looks the controller up
  // for InitProducerId and fails against librdkafka's mock cluster with
  // "Broker 0 not found in the cached metadata" (mock brokers are 1..N).
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) {
    messages.push({
      partition: 0,
      key: `k-${i}`,
      value: JSON.stringify({ n: i, name: 'kafkajs' }),
      headers: {
        ce_specversion: '1.0',
        ce_id: `kjs-${i}`,
        ce_source: 'urn:nld:oin:00000001234567890000:systeem:kafkajs',
        ce_type: 'nl.edu.interop.kafkajs',
        ce_time: '2026-01-02T03:04:05Z',
        ce_subject: 'student ' + i,
        ce_correlationid: `corr-${i}`,
        'content-type': 'application/json',
      },
    });
  }
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();
}

async function consume() {
  const consumer = kafka.consumer({
    groupId: `cebridge-interop-${process.pid}`,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(
        () => reject(new Error(`only ${seen} of ${count} records`)), 60000);
    consumer
        .run({
          eachMessage: async ({ topic: t, partition, message }) => {
            const headers = {};
            for (const [k, v] of Object.entries(message.headers || {}))
              headers[k] = v === null || v === undefined ? null : v.toString();
            console.log(JSON.stringify({
              topic: t,
              partition,
              offset: message.offset,
              key: message.key === null ? null : message.key.toString(),
              headers,
              value: message.value === null ? null : message.value.toString(),
            }));
            if (++seen >= count) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
  });
  await consumer.disconnect();
}

(mode === 'produce' ? produce() : consume())
    .then(() => process.exit(0))
    .catch((e) => {
      console.error(`kafkajs ${mode}: ${e.stack || e}`);
      process.exit(1);
    });
