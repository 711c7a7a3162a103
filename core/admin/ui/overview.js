// Overview: every route's queue and delivery figures (GET /v1/routes),
// the sinks, and the instances sharing the store (GET /v1/cluster, when the
// bridge has one). Refreshed by polling every 2-30 s while the view is shown
// and the tab is visible; a hidden tab makes no requests.
import { api, ApiError } from './api.js';
import { $, el, fillRows, badge, age, when, announce, confirmAction } from './dom.js';

let timer = null;
let active = false;
let lastDepth = null;

function pct(x) {
  return typeof x === 'number' ? (x * 100).toFixed(1) + ' %' : '—';
}

// GET /v1/routes gives queue_depth and oldest_age_ms null (with the reason
// in queue_unknown) when the store cannot be read, e.g. PostgreSQL is away.
function known(r) {
  return r.queue_depth !== null && r.oldest_age_ms !== null;
}

function routeRow(r) {
  const dl = el('a', { href: '#/dlq?route=' + encodeURIComponent(r.name) }, 'show');
  return el('tr', { 'data-route': r.name },
    el('th', { scope: 'row' }, r.name),
    el('td', {}, `${(r.from || []).join(', ')} → ${r.to}`),
    // null: the store could not say (queue_unknown gives the reason), never 0
    known(r)
      ? el('td', { class: 'num', 'data-col': 'depth' }, String(r.queue_depth ?? 0))
      : el('td', { class: 'num', 'data-col': 'depth', title: r.queue_unknown || '' }, 'unknown'),
    el('td', { class: 'num', 'data-col': 'oldest' }, known(r) ? age(r.oldest_age_ms) : 'unknown'),
    el('td', { class: 'num', 'data-col': 'inflight' },
      r.inflight === undefined ? '—' : `${r.inflight} / ${r.max_inflight}`),
    el('td', { 'data-col': 'circuit' }, r.circuit ? badge(r.circuit) : '—'),
    el('td', { class: 'num', 'data-col': 'throughput' },
      typeof r.throughput_per_s === 'number' ? r.throughput_per_s.toFixed(2) : '—'),
    el('td', { class: 'num', 'data-col': 'failure' }, pct(r.failure_rate)),
    el('td', {}, dl));
}

// A sink's life cycle comes from GET /v1/sinks when the bridge has it:
// [{"sink","disabled","reason","disabled_at","failing_since",
// "disable_after_ms"}]; the circuit is the engine's (per route). A
// disabled sink gets an Enable button, confirmed with the number of events
// waiting for it.
function sinkRows(routes, sinks) {
  const by = new Map();
  for (const s of sinks || []) {
    const name = s.sink || s.name;
    if (name) by.set(name, { ...s, name, routes: [], waiting: 0 });
  }
  for (const r of routes) {
    const name = r.sink || r.to;
    if (!name) continue;
    if (!by.has(name)) by.set(name, { name, routes: [], waiting: 0 });
    const s = by.get(name);
    s.routes.push(r.name);
    if (known(r)) s.waiting += r.queue_depth || 0;
    else s.unknown = true;
    if (!s.circuit && r.circuit) s.circuit = r.circuit;
  }
  return [...by.values()].map((s) => {
    const known = typeof s.disabled === 'boolean';
    const state = el('td', { 'data-col': 'state' },
      known ? badge(s.disabled ? 'disabled' : 'enabled') : 'enabled');
    if (s.disabled) {
      state.append(' ', s.reason ? `(${s.reason}` : '(',
        s.disabled_at ? ', since ' : '', s.disabled_at ? when(s.disabled_at) : '', ') ',
        el('button', {
          type: 'button', class: 'secondary', 'aria-label': `Enable sink ${s.name}`,
          onclick: () => enableSink(s.name, s.unknown ? null : s.waiting),
        }, 'Enable'));
    }
    return el('tr', { 'data-sink': s.name },
      el('th', { scope: 'row' }, s.name), state,
      el('td', {}, s.circuit ? badge(s.circuit) : '—'),
      el('td', {}, s.routes.join(', ')));
  });
}

async function enableSink(name, waiting) {
  const ok = await confirmAction('Enable sink',
    `Enable sink ${name}? Its ` +
    (waiting === null ? 'waiting events (how many is unknown now) '
                      : `${waiting} waiting event${waiting === 1 ? '' : 's'} `) +
    'will be sent to the endpoint again, in order.', 'Enable');
  if (!ok) {
    announce('Enable cancelled.');
    return;
  }
  try {
    await api('/sinks/' + encodeURIComponent(name) + '/enable', {}, 'POST');
    announce(`Sink ${name} enabled.`);
  } catch (e) {
    $('#overview-updated').textContent = `Cannot enable ${name}: ${e.message}`;
  }
  await show();
}

async function optional(path) {
  try {
    return await api(path);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 405)) return null;
    throw e;
  }
}

// GET /v1/cluster: {"instance", "instances":[{"id","hostname","pid",
// "version","started_at","heartbeat_at","stale","leases":{route:n},
// "leads":[task]}], "leases_expired":{route:n}}. Shown when the bridge
// answers it; a store of one bridge lists just this one.
function perRoute(o) {
  const e = Object.entries(o || {});
  return e.length ? e.map(([r, n]) => `${r} ${n}`).join(', ') : '—';
}

function instancesTable(cluster) {
  const block = $('#instances-block');
  const list = cluster && cluster.instances;
  if (!Array.isArray(list) || !list.length) {
    block.hidden = true;
    return;
  }
  const now = Date.now();
  $('#instances thead').replaceChildren(el('tr', {},
    ['Instance', 'Host', 'PID', 'Version', 'Started', 'Last heartbeat', 'State',
      'Leads', 'Claims per route'].map((h) => el('th', { scope: 'col' }, h))));
  $('#instances tbody').replaceChildren(...list.map((i) => el('tr', { 'data-instance': i.id },
    el('th', { scope: 'row' }, i.id, i.id === cluster.instance ? ' (this bridge)' : ''),
    el('td', {}, i.hostname || '—'),
    el('td', { class: 'num' }, i.pid === undefined || i.pid === null ? '—' : String(i.pid)),
    el('td', {}, i.version || '—'),
    el('td', {}, when(i.started_at)),
    el('td', {}, i.heartbeat_at ? `${age(Math.max(0, now - i.heartbeat_at))} ago` : '—'),
    el('td', {}, badge(i.stale ? 'stale' : 'live')),
    el('td', {}, (i.leads || []).join(', ') || '—'),
    el('td', {}, perRoute(i.leases)))));
  $('#instances-expired').textContent =
    `Claims whose lease expired (another bridge takes them over): ${perRoute(cluster.leases_expired)}`;
  block.hidden = false;
}

export async function refresh() {
  const routes = await api('/routes');
  const [sinks, cluster] = await Promise.all([optional('/sinks'), optional('/cluster')]);
  fillRows($('#routes tbody'), routes.map(routeRow), 9, 'No routes are configured.');
  fillRows($('#sinks tbody'), sinkRows(routes, Array.isArray(sinks) ? sinks : null), 4,
    'No sinks.');
  instancesTable(cluster);
  const unknown = routes.find((r) => !known(r));
  const depth = unknown ? null : routes.reduce((n, r) => n + (r.queue_depth || 0), 0);
  const now = new Date();
  $('#overview-updated').textContent = 'Updated ' + now.toLocaleTimeString() +
    (unknown ? ` — queue figures unknown: ${unknown.queue_unknown || 'the store cannot be read'}` : '');
  // Speak only changes, not every poll.
  if (lastDepth !== null && depth !== null && depth !== lastDepth)
    announce(`Queue depth now ${depth} across ${routes.length} routes`);
  else if (unknown && lastDepth !== null)
    announce('Queue figures unknown: the store cannot be read');
  lastDepth = depth;
  return routes;
}

function interval() {
  const s = Number($('#refresh').value);
  return s > 0 ? Math.min(Math.max(s, 2), 30) * 1000 : 0;
}

function schedule() {
  clearTimeout(timer);
  timer = null;
  const ms = interval();
  if (!active || document.hidden || !ms) return;
  timer = setTimeout(async () => {
    try {
      await refresh();
    } catch (e) {
      $('#overview-updated').textContent = 'Refresh failed: ' + e.message;
    }
    schedule();
  }, ms);
}

export async function show() {
  active = true;
  try {
    await refresh();
  } catch (e) {
    $('#overview-updated').textContent = 'Refresh failed: ' + e.message;
  }
  schedule();
}

export function hide() {
  active = false;
  clearTimeout(timer);
  timer = null;
}

export function init() {
  $('#refresh').addEventListener('change', schedule);
  $('#refresh-now').addEventListener('click', () => show());
  document.addEventListener('visibilitychange', () => {
    if (!active) return;
    if (document.hidden) {
      clearTimeout(timer);
      timer = null;
    } else {
      show();
    }
  });
}
