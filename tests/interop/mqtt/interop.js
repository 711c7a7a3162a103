// MQTT.js side of the cebridge mqtt interop test (test_mqtt_interop.c).
// Subscribes to interop/out/#, publishes three MQTT 5 binary-mode
// CloudEvents to interop/in/N, prints "published" once the broker
// acknowledged them, then prints every message it receives as one JSON line
// and exits after argv[3] of them. Exits 1 on any error or after 30 s.
'use strict';
const mqtt = require('mqtt');

const url = process.argv[2];
const expected = parseInt(process.argv[3] || '0', 10);
let received = 0;
let ending = false;

const finish = () => {
  ending = true;
  client.end(false, () => process.exit(0));
};

const fail = (why) => {
  console.error('interop.js: ' + why);
  process.exit(1);
};
setTimeout(() => fail('timed out'), 30000).unref();

const client = mqtt.connect(url, {
  protocolVersion: 5,
  clientId: 'mqttjs-interop',
  clean: true,
  reconnectPeriod: 0,
});
client.on('error', (e) => {
  if (!ending) fail(e.message); // a reset while disconnecting is fine
});

client.on('connect', () => {
  client.subscribe('interop/out/#', { qos: 1 }, (err) => {
    if (err) fail('subscribe: ' + err.message);
    const sends = [1, 2, 3].map((i) => new Promise((resolve, reject) => {
      client.publish('interop/in/' + i, JSON.stringify({ n: i, naam: 'Jan' }), {
        qos: 1,
        properties: {
          contentType: 'application/json',
          userProperties: {
            specversion: '1.0',
            id: 'js-' + i,
            source: 'urn:nld:oin:00000001234567890000:systeem:mqttjs',
            type: 'nl.edu.interop.created',
            subject: 'student ' + i,
          },
        },
      }, (e) => (e ? reject(e) : resolve()));
    }));
    Promise.all(sends).then(() => {
      console.log('published');
      if (expected === 0) finish();
    }, (e) => fail('publish: ' + e.message));
  });
});

client.on('message', (topic, payload, packet) => {
  const p = packet.properties || {};
  console.log(JSON.stringify({
    topic,
    contentType: p.contentType || null,
    userProperties: p.userProperties || {},
    payload: payload.toString('utf8'),
  }));
  if (++received >= expected) finish();
});
