// Small DOM helpers. Text always goes in through textContent: nothing the
// API returns is ever parsed as HTML.
export const $ = (sel, root = document) => root.querySelector(sel);

// el('td', {class: 'num'}, 'text', child...)
export function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat())
    if (c !== undefined && c !== null) n.append(c instanceof Node ? c : String(c));
  return n;
}

// Replaces a tbody's rows; an empty list gets one row saying so.
export function fillRows(tbody, rows, cols, empty) {
  tbody.replaceChildren(...(rows.length ? rows
    : [el('tr', {}, el('td', { colspan: cols, class: 'empty' }, empty))]));
}

export function badge(text) {
  return el('span', { class: 'badge ' + String(text).replace(/[^a-z_-]/gi, '') }, text);
}

const two = (n) => String(n).padStart(2, '0');
// ms since the epoch as local "YYYY-MM-DD HH:MM:SS" in a <time>.
export function when(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  const text = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ` +
    `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  return el('time', { datetime: d.toISOString() }, text);
}

// A duration in ms as "4 s", "3 min 2 s", "2 h 5 min".
export function age(ms) {
  if (!ms) return '—';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// Speaks a short message to screen readers (the polite live region).
export function announce(text) {
  const r = $('#announce');
  r.textContent = '';
  setTimeout(() => { r.textContent = text; }, 50);
}

// Shows the confirmation dialog; resolves true only when the operator
// presses the confirming button (Escape and Cancel resolve false).
export function confirmAction(title, text, okLabel) {
  const d = $('#confirm');
  $('#confirm-h').textContent = title;
  $('#confirm-text').textContent = text;
  $('#confirm-ok').textContent = okLabel;
  return new Promise((resolve) => {
    const done = (v) => {
      $('#confirm-ok').removeEventListener('click', ok);
      $('#confirm-cancel').removeEventListener('click', cancel);
      d.removeEventListener('close', cancel);
      if (d.open) d.close();
      resolve(v);
    };
    const ok = () => done(true);
    const cancel = () => done(false);
    $('#confirm-ok').addEventListener('click', ok);
    $('#confirm-cancel').addEventListener('click', cancel);
    d.addEventListener('close', cancel);
    d.showModal();
    $('#confirm-cancel').focus();
  });
}
