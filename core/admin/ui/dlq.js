// Dead letters: the list with filters (GET /v1/dlq), one letter's event and
// error (GET /v1/dlq/{id}), replay of a selection or of the filter and purge
// of the filter (POST /v1/dlq/replay, /v1/dlq/purge). Every replay and purge
// first asks the API how many it would touch (dry_run=true) and shows that
// count in a confirmation; nothing happens unless the operator confirms.
import { api, enc } from './api.js';
import { $, el, fillRows, badge, when, announce, confirmAction } from './dom.js';

const selected = new Set();
let rows = [];

// The filter as query parameters: datetime-local values are local times,
// sent as RFC 3339 UTC.
function filter() {
  const f = new FormData($('#dlq-filter'));
  const p = {};
  for (const k of ['route', 'reason', 'type', 'source']) p[k] = (f.get(k) || '').trim();
  for (const k of ['since', 'until']) {
    const v = f.get(k);
    if (v) p[k] = new Date(v).toISOString();
  }
  return p;
}

function message(text, error = false) {
  const m = $('#dlq-count');
  m.textContent = text;
  m.className = error ? 'error' : 'muted';
  if (!error) announce(text);
}

function updateButtons() {
  const b = $('#dlq-replay-sel');
  b.disabled = selected.size === 0;
  b.textContent = selected.size ? `Replay selected (${selected.size})` : 'Replay selected';
}

function row(d) {
  const box = el('input', {
    type: 'checkbox', 'aria-label': `Select dead letter ${d.id}`,
    checked: selected.has(d.id),
    onchange: (e) => {
      if (e.target.checked) selected.add(d.id); else selected.delete(d.id);
      e.target.closest('tr').classList.toggle('selected', e.target.checked);
      updateButtons();
    },
  });
  const open = el('button', {
    type: 'button', class: 'link', 'aria-label': `Show dead letter ${d.id}`,
    onclick: () => detail(d.id),
  }, String(d.id));
  return el('tr', { class: selected.has(d.id) ? 'selected' : null, 'data-id': d.id },
    el('td', {}, box),
    el('td', { class: 'num' }, open),
    el('td', {}, when(d.created_at)),
    el('td', {}, d.route),
    el('td', {}, badge(d.reason)),
    el('td', { class: 'num' }, d.status === null || d.status === undefined ? '—' : String(d.status)),
    el('td', { class: 'num' }, String(d.attempts)),
    el('td', {}, el('a', { href: '#/events/' + enc(d.event_id) }, d.event_id)),
    el('td', {}, d.type),
    el('td', {}, d.replayed_at ? when(d.replayed_at) : 'no'));
}

export async function load() {
  const f = new FormData($('#dlq-filter'));
  try {
    rows = await api('/dlq', { ...filter(), limit: f.get('limit') || 100 });
  } catch (e) {
    message('Cannot list dead letters: ' + e.message, true);
    return;
  }
  const ids = new Set(rows.map((d) => d.id));
  for (const id of [...selected]) if (!ids.has(id)) selected.delete(id);
  fillRows($('#dlq tbody'), rows.map(row), 10, 'No dead letters match.');
  updateButtons();
  message(`${rows.length} dead letter${rows.length === 1 ? '' : 's'} shown` +
    (rows.length >= Number(f.get('limit') || 100) ? ' (limit reached: narrow the filter)' : ''));
}

function meta(d) {
  const items = [
    ['Id', d.id], ['Route', d.route], ['Sink', d.sink], ['Reason', d.reason],
    ['Last outcome', d.last_reason], ['Last HTTP status', d.status],
    ['Attempts', d.attempts], ['First attempt', when(d.first_attempt_at)],
    ['Last attempt', when(d.last_attempt_at)], ['Dead since', when(d.created_at)],
    ['Event id', d.event_id], ['Source', d.source], ['Type', d.type],
    ['Replays', d.replays], ['Last replayed', when(d.replayed_at)],
    ['Forwarded', when(d.forwarded_at)],
  ];
  return items.flatMap(([k, v]) => [el('dt', {}, k),
    el('dd', {}, v === null || v === undefined || v === '' ? '—' : v)]);
}

async function detail(id) {
  let d;
  try {
    d = await api('/dlq/' + enc(id));
  } catch (e) {
    message(`Cannot show dead letter ${id}: ${e.message}`, true);
    return;
  }
  $('#dlq-detail-h').textContent = `Dead letter ${d.id}`;
  $('#dlq-meta').replaceChildren(...meta(d));
  $('#dlq-error').textContent = d.error || '(no error text)';
  $('#dlq-event').textContent = JSON.stringify(d.event, null, 2);
  $('#dlq-detail').hidden = false;
  $('#dlq-detail-h').focus();
}

// Replays ids one by one (each a dry run first is not needed: the count
// shown is the selection; letters already replayed are skipped by the API).
async function replaySelected() {
  const ids = [...selected];
  let still = 0;
  for (const id of ids) {
    const r = await api('/dlq/replay', { id, dry_run: true }, 'POST');
    still += r.replayed;
  }
  const skipped = ids.length - still;
  if (!still) {
    message('None of the selected dead letters can be replayed (already replayed).', true);
    return;
  }
  const ok = await confirmAction('Replay dead letters',
    `Replay ${still} selected dead letter${still === 1 ? '' : 's'}?` +
    (skipped ? ` (${skipped} already replayed will be skipped.)` : '') +
    ' Each goes back to its route and is delivered again.', `Replay ${still}`);
  if (!ok) { message('Replay cancelled.'); return; }
  let n = 0;
  for (const id of ids) n += (await api('/dlq/replay', { id }, 'POST')).replayed;
  selected.clear();
  await load();
  message(`Replayed ${n} dead letter${n === 1 ? '' : 's'}.`);
}

async function bulk(action) {
  const p = filter();
  if (!p.route) {
    message('Choose a route first: replay and purge of a filter work per route.', true);
    $('#f-route').focus();
    return;
  }
  const dry = await api('/dlq/' + action, { ...p, dry_run: true }, 'POST');
  const n = action === 'replay' ? dry.replayed : dry.purged;
  if (!n) {
    message(`No dead letters of route ${p.route} match: nothing to ${action}.`);
    return;
  }
  const what = `${n} dead letter${n === 1 ? '' : 's'} of route ${p.route}`;
  const ok = action === 'replay'
    ? await confirmAction('Replay dead letters',
      `Replay ${what} matching the filter? Each goes back to its route.`, `Replay ${n}`)
    : await confirmAction('Purge dead letters',
      `Delete ${what} matching the filter for good? This cannot be undone.`, `Purge ${n}`);
  if (!ok) { message(`${action === 'replay' ? 'Replay' : 'Purge'} cancelled.`); return; }
  const r = await api('/dlq/' + action, action === 'replay' ? p : { ...p, confirm: true }, 'POST');
  selected.clear();
  await load();
  message(action === 'replay' ? `Replayed ${r.replayed} dead letters.`
    : `Purged ${r.purged} dead letters.`);
}

function guarded(fn) {
  return async () => {
    try {
      await fn();
    } catch (e) {
      message(e.message, true);
    }
  };
}

// Route names for the filter's select, from the overview's data.
export function setRoutes(names) {
  const s = $('#f-route');
  const cur = s.value;
  s.replaceChildren(el('option', { value: '' }, 'any'),
    ...names.map((n) => el('option', { value: n }, n)));
  if (names.includes(cur)) s.value = cur;
}

export function show(params) {
  if (params && params.get('route') !== null) $('#f-route').value = params.get('route');
  $('#dlq-detail').hidden = true;
  return load();
}

export function init() {
  $('#dlq-filter').addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });
  $('#dlq-replay-sel').addEventListener('click', guarded(replaySelected));
  $('#dlq-replay-all').addEventListener('click', guarded(() => bulk('replay')));
  $('#dlq-purge').addEventListener('click', guarded(() => bulk('purge')));
}
