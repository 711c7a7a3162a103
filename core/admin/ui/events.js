// Event lookup: where is event X? (GET /v1/events/{id}/timeline): each
// accepted event with that id, its routes' delivery state and the timeline
// from reception through every recorded attempt to settled, dead-lettered
// or replayed.
import { api, ApiError, enc } from './api.js';
import { $, el, badge, when, announce } from './dom.js';

const WHAT = {
  received: 'Received and stored',
  attempt: 'Attempt',
  dead_lettered: 'Dead-lettered',
  replayed: 'Replayed from the dead-letter queue',
  delivered: 'Delivered',
  in_flight: 'Attempt in flight',
  next_attempt: 'Next attempt due',
  settled: 'Settled on every route',
};

const OUTCOME = {
  retrying: 'failed, to be retried',
  dead: 'failed, dead-lettered',
  delivered: 'delivered',
};

function describe(t) {
  const parts = [WHAT[t.what] || t.what];
  if (t.what === 'attempt') {
    parts[0] = `Attempt ${t.n}`;
    const out = [t.status ? `HTTP ${t.status}` : null, t.reason].filter(Boolean).join(', ');
    if (out) parts.push(`(${out})`);
    if (t.outcome) parts.push(`→ ${OUTCOME[t.outcome] || t.outcome}`);
    if (typeof t.duration_ms === 'number') parts.push(`in ${t.duration_ms} ms`);
  }
  if (t.what === 'dead_lettered')
    parts.push(`(${t.reason} after ${t.attempts} attempts; dead letter ${t.dlq_id})`);
  if (t.what === 'replayed') parts.push(`(dead letter ${t.dlq_id})`);
  if (t.route) parts.push(`— route ${t.route}`);
  return parts.join(' ');
}

function card(ev) {
  const routes = el('table', {},
    el('caption', { class: 'visually-hidden' }, 'Delivery per route'),
    el('thead', {}, el('tr', {}, ['Route', 'State', 'Attempts', 'Last outcome']
      .map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, (ev.routes || []).map((r) => el('tr', {},
      el('th', { scope: 'row' }, r.route), el('td', {}, badge(r.state)),
      el('td', { class: 'num' }, String(r.attempts)),
      el('td', {}, [r.last_status ? `HTTP ${r.last_status}` : null, r.last_reason]
        .filter(Boolean).join(', ') || '—')))));
  return el('article', { class: 'event-card', 'data-seq': ev.seq },
    el('h2', {}, `${ev.type}`),
    el('dl', { class: 'meta' },
      el('dt', {}, 'Source'), el('dd', {}, ev.source),
      el('dt', {}, 'Journal sequence'), el('dd', {}, String(ev.seq)),
      el('dt', {}, 'Received'), el('dd', {}, when(ev.received_at)),
      el('dt', {}, 'Settled'), el('dd', {}, ev.settled_at ? when(ev.settled_at) : 'not yet')),
    el('h3', {}, 'Routes'),
    el('div', { class: 'scroll' }, routes),
    el('h3', {}, 'Timeline'),
    el('ol', { class: 'timeline' }, ev.timeline.map((t) =>
      el('li', { 'data-what': t.what, 'data-outcome': t.outcome }, when(t.at), describe(t)))));
}

export async function lookup(id, source) {
  const out = $('#event-result');
  const msg = $('#event-msg');
  msg.textContent = '';
  out.replaceChildren();
  if (!id) {
    msg.textContent = 'Enter an event id.';
    $('#ev-id').focus();
    return;
  }
  try {
    const r = await api('/events/' + enc(id) + '/timeline', { source });
    out.replaceChildren(...r.events.map(card));
    announce(`Event ${id}: ${r.events.length} match${r.events.length === 1 ? '' : 'es'}`);
  } catch (e) {
    msg.textContent = e instanceof ApiError && e.status === 404
      ? `No event with id "${id}" was accepted (or it has expired).`
      : `Lookup failed: ${e.message}`;
  }
}

export function show(id) {
  if (id) {
    $('#ev-id').value = id;
    return lookup(id, $('#ev-source').value.trim());
  }
  return null;
}

export function init() {
  $('#event-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = $('#ev-id').value.trim();
    const want = '#/events/' + enc(id);
    if (id && location.hash !== want) location.hash = want; // the router looks it up
    else lookup(id, $('#ev-source').value.trim());
  });
}
