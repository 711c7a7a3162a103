// Contracts: the register (GET /v1/contracts), the routes' pins (from
// GET /v1/routes), one version's document (GET /v1/contracts/{name}/{v})
// and the diff between two versions (GET /v1/contracts/{name}/diff).
import { api, enc } from './api.js';
import { $, el, fillRows, when } from './dom.js';

let register = [];

function out(title, summary, text) {
  $('#contract-out-h').textContent = title;
  $('#contract-summary').textContent = summary;
  $('#contract-text').textContent = text;
  $('#contract-out').hidden = false;
  $('#contract-out-h').focus();
}

async function showDocument(name, version) {
  $('#contract-msg').textContent = '';
  try {
    const d = await api(`/contracts/${enc(name)}/${enc(version)}`);
    out(`${name} ${version}`, `SHA-256 ${d.sha256 || '—'}`, d.document);
  } catch (e) {
    $('#contract-msg').textContent = `Cannot show ${name} ${version}: ${e.message}`;
  }
}

function versionsOf(name) {
  return register.filter((r) => r.name === name).map((r) => r.version);
}

function fillVersions() {
  const vs = versionsOf($('#d-name').value);
  for (const [id, pick] of [['#d-from', vs.length - 2], ['#d-to', vs.length - 1]]) {
    $(id).replaceChildren(...vs.map((v) => el('option', { value: v }, v)));
    if (pick >= 0) $(id).selectedIndex = pick;
  }
}

export async function show(routes) {
  $('#contract-msg').textContent = '';
  try {
    register = await api('/contracts');
  } catch (e) {
    $('#contract-msg').textContent = 'Cannot read the register: ' + e.message;
    return;
  }
  fillRows($('#register tbody'), register.map((r) => el('tr', {},
    el('th', { scope: 'row' }, r.name), el('td', {}, r.version),
    el('td', {}, el('code', { title: r.sha256 }, (r.sha256 || '').slice(0, 12))),
    el('td', {}, when(r.fetched_at)), el('td', {}, r.provenance || '—'),
    el('td', {}, r.conflict ? `yes (${(r.conflict_sha256 || '').slice(0, 12)})` : 'no'),
    el('td', {}, el('button', {
      type: 'button', class: 'link', 'aria-label': `Show document ${r.name} ${r.version}`,
      onclick: () => showDocument(r.name, r.version),
    }, 'show')))), 7, 'The register holds no contracts.');
  const pinned = (routes || []).filter((r) => r.contract);
  fillRows($('#pins tbody'), pinned.map((r) => el('tr', {},
    el('th', { scope: 'row' }, r.name), el('td', {}, el('code', {}, r.contract)))), 2,
  'No route pins a contract.');
  const names = [...new Set(register.map((r) => r.name))];
  const cur = $('#d-name').value;
  $('#d-name').replaceChildren(...names.map((n) => el('option', { value: n }, n)));
  if (names.includes(cur)) $('#d-name').value = cur;
  fillVersions();
}

export function init() {
  $('#d-name').addEventListener('change', fillVersions);
  $('#diff-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    $('#contract-msg').textContent = '';
    const name = $('#d-name').value, from = $('#d-from').value, to = $('#d-to').value;
    if (!name || !from || !to) {
      $('#contract-msg').textContent = 'Choose a contract and two versions.';
      return;
    }
    try {
      const d = await api(`/contracts/${enc(name)}/diff`, { from, to });
      out(`${name}: ${d.from} → ${d.to}`,
        d.breaking ? `${d.breaking} breaking change${d.breaking === 1 ? '' : 's'}`
          : 'No breaking changes', d.diff || '(no differences)');
    } catch (err) {
      $('#contract-msg').textContent = 'Cannot compare: ' + err.message;
    }
  });
}
