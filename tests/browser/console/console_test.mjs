// The operator console in a real browser (Debian's chromium, headless,
// driven by puppeteer-core), against the real cebridge binary: an HTTP
// intermediary source, a webhook sink and a receiver in this process, all
// on 127.0.0.1 ephemeral ports.
//   - the CSP and the other security headers of the page; no request leaves
//     loopback (request interception); no CSP violation happens;
//   - a wrong token gets the sign-in again with a clear message, and so
//     does one that stops working (it is forgotten);
//   - the overview lists this bridge among the store's instances;
//   - posted events show in the overview's queue depth (receiver holding
//     the requests), the depth falls to 0 once it answers, and the event's
//     timeline changes from "in flight" to "delivered" and "settled";
//   - a failing receiver (500) fills the dead letters; one letter shows its
//     event and error; replaying it from the console reaches the receiver
//     exactly once; purge shows the count, does nothing when cancelled and
//     empties the list when confirmed;
//   - an event id holding '/' and '%' is found as typed;
//   - a receiver answering 410 disables the sink (shown with its reason);
//     Enable, confirmed with the waiting count, lets the event through;
//   - the contract register, a version's document and the diff of two
//     versions (BREAKING called out);
//   - a hidden tab stops the overview's polling;
//   - axe-core finds no serious or critical violation on any view.
// Every wait has a deadline. argv: the cebridge binary. Screenshots go to
// $CEB_CONSOLE_SHOTS when set (docs/img/console-shots.sh).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import puppeteer from 'puppeteer-core';

const require = createRequire(import.meta.url);
const BIN = process.argv[2];
const CHROMIUM = process.env.CEB_CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.CEB_CONSOLE_SHOTS || '';
const TOKEN = 'console-test-token-0123456789abcdef';
const SRC = 'urn:nld:oin:00000001234567890000:systeem:console';

let failures = 0;
function check(cond, what) {
  if (cond) return;
  failures++;
  console.error('FAIL: ' + what);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(fn, ms, what) {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`timed out (${ms} ms) waiting for ${what}` +
    (last instanceof Error ? `: ${last.message}` : ''));
}

// ---- the receiver: hold | ok | fail ----
let mode = 'hold';
const held = [];
const got = []; // {id, status}
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let id = req.headers['ce-id'];
    if (!id) {
      try { id = JSON.parse(Buffer.concat(chunks).toString()).id; } catch (e) { id = '?'; }
    }
    const answer = (status) => {
      got.push({ id, status });
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(status >= 400 ? '{"error":"receiver told to fail"}' : '');
    };
    if (mode === 'hold') held.push(answer);
    else answer(mode === 'ok' ? 204 : mode === 'gone' ? 410 : 500);
  });
});
function release() {
  mode = 'ok';
  while (held.length) held.shift()(204);
}

// ---- the bridge ----
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ceb-console-'));
const conf = path.join(dir, 'conf');
fs.mkdirSync(conf);
fs.mkdirSync(path.join(dir, 'var'));
const docV = (v, extra) => `asyncapi: 2.6.0
info:
  title: Enrolment
  version: ${v}
channels:
  nl.edu.enrolment:
    publish:
      message:
        $ref: '#/components/messages/enrolled'
components:
  messages:
    enrolled:
      contentType: application/json
      payload:
        $ref: '#/components/schemas/Enrolment'
  schemas:
    Enrolment:
      type: object
      properties:
        student: {type: string}
${extra}`;

function writeConf(recvPort) {
  fs.writeFileSync(path.join(conf, 'bridge.conf'), `[bridge]
store = ${dir}/var/store.db
admin.listen = 127.0.0.1:0
admin.port_file = ${dir}/admin.port
admin.token = ${TOKEN}
log.format = text
drain_timeout = 5s
[source intermediary]
plugin = http
listen = 127.0.0.1:0
port_file = ${dir}/in.port
auth = none
[sink partner]
plugin = http
url = http://127.0.0.1:${recvPort}/hook
allow_insecure_http = true
[contracts enrol]
plugin = asyncapi
file = ${dir}/enrol.yaml
interval = 0
[route to-partner]
from = intermediary
to = partner
retry.max_attempts = 1
contract = enrol@^1
contract.mode = warn
`);
}

function sync(doc) {
  fs.writeFileSync(path.join(dir, 'enrol.yaml'), doc);
  const r = spawnSync(BIN, ['contracts', 'sync', '-c', conf], { timeout: 60000, encoding: 'utf8' });
  if (r.status !== 0) throw new Error('contracts sync failed: ' + r.stdout + r.stderr);
}

async function readPort(file) {
  return Number(await waitFor(() => {
    const t = fs.existsSync(file) && fs.readFileSync(file, 'utf8').trim();
    return t && Number(t) > 0 ? t : null;
  }, 30000, file));
}

async function post(port, id) {
  const res = await fetch(`http://127.0.0.1:${port}/events`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', id, source: SRC, type: 'nl.edu.console.test',
      datacontenttype: 'application/json', data: { n: id } }),
    signal: AbortSignal.timeout(15000),
  });
  check(res.status === 202, `POST ${id}: 202 (got ${res.status})`);
}

// ---- the page ----
const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const visible = (page, sel) => page.$eval(sel, (e) => !e.closest('[hidden]'));

async function shot(page, name) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + '.png') });
}

const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
async function axe(page, view) {
  // Runtime.evaluate (devtools), not a <script>: the page's CSP stays as is.
  await page.evaluate(axeSource);
  const r = await page.evaluate(async () => {
    const out = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return out.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  const bad = r.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of bad) console.error(`axe ${view}: ${v.impact} ${v.id}: ${v.help} at ${v.nodes.join(', ')}`);
  check(bad.length === 0, `axe-core: no serious or critical violation on ${view}`);
}

async function main() {
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  writeConf(receiver.address().port);
  sync(docV('1.0.0', '        level: {type: string, enum: [mbo, hbo, wo]}\n'));
  sync(docV('1.1.0', '        level: {type: string, enum: [hbo, wo]}\n'));
  const log = fs.openSync(path.join(dir, 'bridge.log'), 'w');
  const bridge = spawn(BIN, ['run', '-c', conf], { stdio: ['ignore', log, log] });
  let browser;
  try {
    const admin = await readPort(path.join(dir, 'admin.port'));
    const inPort = await readPort(path.join(dir, 'in.port'));
    const base = `http://127.0.0.1:${admin}`;
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions',
        '--disable-background-networking', '--disable-component-update',
        '--disable-sync', '--metrics-recording-only', '--no-default-browser-check'],
      defaultViewport: { width: 1366, height: 768 },
      protocolTimeout: 60000,
    });
    const page = await browser.newPage();
    page.setDefaultTimeout(20000);
    const requests = [];
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      const u = req.url();
      requests.push(u);
      if (u.startsWith(base + '/') || u.startsWith('data:')) req.continue();
      else req.abort();
    });
    const consoleErrors = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) consoleErrors.push(m.text()); });
    await page.evaluateOnNewDocument(() => {
      window.__csp = [];
      document.addEventListener('securitypolicyviolation', (e) =>
        window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
    });

    // ---- headers ----
    const res = await page.goto(base + '/ui/', { waitUntil: 'load' });
    const h = res.headers();
    const csp = h['content-security-policy'] || '';
    for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'",
      "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"])
      check(csp.includes(d), `CSP has ${d} (${csp})`);
    check(!/unsafe-inline|unsafe-eval/.test(csp), 'CSP allows no inline script or eval');
    check(h['x-content-type-options'] === 'nosniff', 'X-Content-Type-Options: nosniff');
    check(h['referrer-policy'] === 'no-referrer', 'Referrer-Policy: no-referrer');
    check(!h['set-cookie'], 'no cookie is set');

    // ---- sign-in: the keyboard starts at the skip link; a wrong token ----
    await page.waitForSelector('#view-login:not([hidden])');
    await shot(page, 'console-login');
    await axe(page, 'sign-in');
    check(await page.evaluate(() => {
      const tabbable = [...document.querySelectorAll('a[href], button, input, select, [tabindex="0"]')]
        .filter((e) => !e.closest('[hidden]') && !e.disabled);
      return tabbable[0] && tabbable[0].classList.contains('skip');
    }), 'the skip link comes first in the focus order');
    check(await page.evaluate(() => document.activeElement.id) === 'token',
      'the sign-in puts the focus in the token field');
    await page.keyboard.press('Tab');
    check(await page.evaluate(() => {
      const e = document.activeElement;
      return e.matches('#login-form button[type=submit]') &&
        getComputedStyle(e).outlineStyle !== 'none';
    }), 'Tab moves to the sign-in button, with a visible focus ring');
    await page.type('#token', 'wrong-token');
    await page.click('#login-form button[type=submit]');
    await waitFor(async () => /refused the token/.test(await text(page, '#login-msg')), 10000,
      'the wrong-token message');
    check(await visible(page, '#view-login'), 'a wrong token stays at the sign-in');
    check(await page.evaluate(() => sessionStorage.length === 0), 'a wrong token is not kept');
    check(await page.$eval('#nav', (e) => e.hidden), 'no view is offered without a token');

    // ---- sign in, then the overview follows posted events ----
    await page.type('#token', TOKEN);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#view-overview:not([hidden]) #routes tr[data-route="to-partner"]');
    check(await page.evaluate(() => document.cookie === ''), 'no cookie after sign-in');
    await page.select('#refresh', '2');
    for (const id of ['ev-1', 'ev-2', 'ev-3']) await post(inPort, id);
    const depthOf = () => text(page, 'tr[data-route="to-partner"] td[data-col=depth]');
    await waitFor(async () => (await depthOf()) === '3', 20000, 'queue depth 3 in the overview');
    check(/^[1-9]\d* \/ \d+$/.test(await text(page, 'tr[data-route="to-partner"] td[data-col=inflight]')),
      'attempts in flight are shown');
    // the bridges on the store (GET /v1/cluster): this one, live
    await page.waitForSelector('#instances-block:not([hidden]) #instances tbody tr[data-instance]');
    check(/\(this bridge\)/.test(await text(page, '#instances tbody tr')) &&
      /live/.test(await text(page, '#instances tbody tr')), 'the instances table lists this bridge, live');
    await shot(page, 'console-overview');
    await axe(page, 'overview');

    // the timeline while the receiver holds the request
    await page.goto(base + '/ui/#/events/ev-1');
    await page.waitForSelector('#event-result li[data-what=received]');
    check(await page.$('#event-result li[data-what=delivered]') === null,
      'no delivery in the timeline while the receiver holds it');
    check(await page.$('#event-result li[data-what=in_flight]') !== null,
      'the timeline shows the attempt in flight');
    release();
    await page.goto(base + '/ui/#/overview');
    await waitFor(async () => (await depthOf()) === '0', 20000, 'queue depth back to 0');
    check(/^\d+\.\d\d$/.test(await text(page, 'tr[data-route="to-partner"] td[data-col=throughput]')),
      'throughput shown');
    await page.goto(base + '/ui/#/events/ev-1');
    await page.waitForSelector('#event-result li[data-what=delivered]');
    check(await page.$('#event-result li[data-what=settled]') !== null, 'the timeline ends settled');
    await axe(page, 'event lookup');

    // ---- a failing receiver fills the dead letters ----
    mode = 'fail';
    for (const id of ['ev-4', 'ev-5', 'ev-6']) await post(inPort, id);
    await page.goto(base + '/ui/#/dlq?route=to-partner');
    await waitFor(async () => {
      await page.click('#dlq-filter button[type=submit]');
      await sleep(300);
      return (await page.$$('#dlq tbody tr[data-id]')).length === 3;
    }, 30000, 'three dead letters in the list');
    check(await page.$eval('#f-route', (e) => e.value) === 'to-partner', 'the route filter is set');
    // one letter's event and error
    const ev4 = await page.$$eval('#dlq tbody tr[data-id]', (rows) =>
      rows.find((r) => r.textContent.includes('ev-4')).dataset.id);
    await page.click(`#dlq tbody tr[data-id="${ev4}"] button.link`);
    await page.waitForSelector('#dlq-detail:not([hidden])');
    check((await text(page, '#dlq-event')).includes('"ev-4"'), 'the dead letter shows its event');
    check((await text(page, '#dlq-meta')).includes('500'), 'the dead letter shows the HTTP status');
    check(await page.evaluate(() => document.activeElement.id) === 'dlq-detail-h',
      'focus moves to the opened dead letter');
    await shot(page, 'console-dlq');
    await axe(page, 'dead letters');

    // replay one: the receiver gets it exactly once
    mode = 'ok';
    const before = got.filter((g) => g.id === 'ev-4' && g.status < 300).length;
    check(before === 0, 'ev-4 was never delivered before the replay');
    await page.click(`#dlq tbody tr[data-id="${ev4}"] input[type=checkbox]`);
    await page.click('#dlq-replay-sel');
    await page.waitForSelector('#confirm[open]');
    check(/Replay 1 selected/.test(await text(page, '#confirm-text')), 'the replay shows its count first');
    await page.click('#confirm-ok');
    await waitFor(() => got.some((g) => g.id === 'ev-4' && g.status < 300), 20000,
      'the receiver gets the replayed event');
    await page.goto(base + '/ui/#/events/ev-4');
    await page.waitForSelector('#event-result li[data-what=replayed]');
    await page.waitForSelector('#event-result li[data-what=delivered]');
    // every attempt with its outcome, in order: failed, dead-lettered,
    // replayed, delivered
    const steps = await page.$$eval('#event-result li', (li) =>
      li.map((e) => e.dataset.what + (e.dataset.outcome ? ':' + e.dataset.outcome : '')));
    check(JSON.stringify(steps) === JSON.stringify(['received', 'attempt:dead', 'dead_lettered',
      'replayed', 'attempt:delivered', 'delivered', 'settled']),
    'the replayed event\'s timeline: ' + steps.join(' '));
    check(/HTTP 500.*failed, dead-lettered in \d+ ms/.test(await text(page, '#event-result li[data-outcome=dead]')),
      'the failed attempt shows its answer, outcome and duration');
    await shot(page, 'console-event');
    check(got.filter((g) => g.id === 'ev-4' && g.status < 300).length === 1,
      'the replayed event reached the receiver exactly once');
    check(got.filter((g) => g.id === 'ev-5' || g.id === 'ev-6').every((g) => g.status === 500),
      'the others were not replayed');

    // purge: the count first; cancel does nothing; confirm empties
    await page.goto(base + '/ui/#/dlq?route=to-partner');
    await page.waitForSelector('#dlq tbody tr[data-id]');
    await page.click('#dlq-purge');
    await page.waitForSelector('#confirm[open]');
    check(/Delete 3 dead letters of route to-partner/.test(await text(page, '#confirm-text')),
      'the purge shows its count first');
    await shot(page, 'console-purge-confirm');
    await page.click('#confirm-cancel');
    await page.waitForSelector('#confirm:not([open])');
    await sleep(200);
    check((await page.$$('#dlq tbody tr[data-id]')).length === 3, 'a cancelled purge deletes nothing');
    await page.click('#dlq-purge');
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await waitFor(async () => (await page.$$('#dlq tbody tr[data-id]')).length === 0, 15000,
      'an empty list after the purge');
    check(/Purged 3/.test(await text(page, '#dlq-count')), 'the purge says how many');

    // ---- an id with '/' and '%' is looked up as typed (decoded once) ----
    const odd = 'ev-7/100%25 done';
    await post(inPort, odd);
    await page.goto(base + '/ui/#/events');
    await page.waitForSelector('#view-events:not([hidden])');
    await page.$eval('#ev-id', (e) => { e.value = ''; });
    await page.type('#ev-id', odd);
    await page.click('#event-form button[type=submit]');
    await waitFor(async () => {
      if (await page.$('#event-result li[data-what=delivered]')) return true;
      await page.click('#event-form button[type=submit]'); // until delivered
      await sleep(300);
      return false;
    }, 20000, `the timeline of "${odd}"`);

    // ---- a receiver answering 410 Gone disables the sink; Enable ----
    mode = 'gone';
    await post(inPort, 'ev-8');
    await page.goto(base + '/ui/#/overview');
    const sinkState = () => text(page, 'tr[data-sink="partner"] td[data-col=state]');
    await waitFor(async () => /disabled/.test(await sinkState()), 30000, 'the sink shown disabled');
    check(/gone/.test(await sinkState()), 'the disabled sink shows why');
    await shot(page, 'console-sink-disabled');
    mode = 'ok';
    await page.click('tr[data-sink="partner"] td[data-col=state] button');
    await page.waitForSelector('#confirm[open]');
    check(/Its 1 waiting event /.test(await text(page, '#confirm-text')),
      'enabling shows the waiting events first');
    await page.click('#confirm-ok');
    await waitFor(() => got.some((g) => g.id === 'ev-8' && g.status < 300), 20000,
      'the waiting event delivered after the enable');
    await waitFor(async () => /enabled/.test(await sinkState()), 20000, 'the sink shown enabled');

    // ---- contracts ----
    await page.goto(base + '/ui/#/contracts');
    await page.waitForSelector('#register tbody tr th');
    check((await text(page, '#pins tbody')).includes('enrol@^1'), 'the route pin is shown');
    await page.click('#diff-form button[type=submit]');
    await page.waitForSelector('#contract-out:not([hidden])');
    check(/1 breaking change|\d+ breaking changes/.test(await text(page, '#contract-summary')),
      'the diff calls out breaking changes');
    check((await text(page, '#contract-text')).includes('BREAKING'), 'the diff text marks BREAKING');
    await shot(page, 'console-contracts');
    await axe(page, 'contracts');
    await page.click('#register tbody tr button.link');
    await waitFor(async () => (await text(page, '#contract-text')).includes('asyncapi'), 10000,
      'a version document');

    // ---- a hidden tab does not poll ----
    await page.goto(base + '/ui/#/overview');
    await page.waitForSelector('#view-overview:not([hidden])');
    await page.select('#refresh', '2');
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    // a refresh already under way when the tab was hidden may still show
    // up; after it, nothing more may be asked
    await sleep(1000);
    const n0 = requests.filter((u) => u.includes('/v1/routes')).length;
    await sleep(4500); // over two refresh intervals: none may happen
    check(requests.filter((u) => u.includes('/v1/routes')).length === n0,
      'a hidden tab makes no refresh requests');
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => false });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await waitFor(() => requests.filter((u) => u.includes('/v1/routes')).length > n0, 10000,
      'polling again once visible');

    // ---- a token that stops working (rotated) brings the sign-in back ----
    await page.evaluate(() => sessionStorage.setItem('cebridge.admin.token', 'rotated-away'));
    await page.goto(base + '/ui/#/dlq');
    await page.waitForSelector('#view-login:not([hidden])');
    await waitFor(async () => /refused the token \(401\)/.test(await text(page, '#login-msg')), 10000,
      'the sign-in after a refused token');
    check(await page.evaluate(() => sessionStorage.getItem('cebridge.admin.token')) === null,
      'the refused token is forgotten');
    check(await page.$eval('#view-dlq', (e) => e.hidden), 'no view stays open without a valid token');

    // ---- nothing left loopback, nothing broke the CSP ----
    const foreign = requests.filter((u) => !u.startsWith(base + '/') && !u.startsWith('data:'));
    check(foreign.length === 0, 'every request goes to the admin API on 127.0.0.1: ' + foreign.join(' '));
    const violations = await page.evaluate(() => window.__csp);
    check(violations.length === 0 && consoleErrors.length === 0,
      'no CSP violation: ' + violations.concat(consoleErrors).join('; '));
  } finally {
    if (browser) await browser.close().catch(() => {});
    bridge.kill('SIGTERM');
    await waitFor(() => bridge.exitCode !== null || bridge.signalCode !== null, 30000, 'the bridge to stop')
      .catch(() => bridge.kill('SIGKILL'));
    // 0 after a drain; a sanitizer report would make it non-zero
    check(bridge.exitCode === 0, `the bridge stops cleanly (exit ${bridge.exitCode}, signal ${bridge.signalCode})`);
    receiver.close();
  }
  if (failures) {
    console.error(`${failures} check(s) failed; bridge log: ${dir}/bridge.log`);
    process.exit(1);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  console.log('browser_console: ok');
}

const deadline = setTimeout(() => {
  console.error('browser_console: over the 240 s budget');
  process.exit(1);
}, 240000);
deadline.unref();
main().catch((e) => {
  console.error('browser_console: ' + (e && e.stack || e));
  console.error(`bridge log: ${dir}/bridge.log`);
  process.exit(1);
});
