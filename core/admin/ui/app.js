// The console's entry: sign-in, the hash router (#/overview, #/dlq,
// #/events/ID, #/contracts) and moving focus to each view's heading so
// that keyboard and screen-reader users land where the content changed.
import { api, token, setToken, clearToken, whenUnauthorized, ApiError } from './api.js';
import { $, announce } from './dom.js';
import * as overview from './overview.js';
import * as dlq from './dlq.js';
import * as events from './events.js';
import * as contracts from './contracts.js';

const VIEWS = ['login', 'overview', 'dlq', 'events', 'contracts'];
let routes = [];

function showView(name) {
  for (const v of VIEWS) $('#view-' + v).hidden = v !== name;
  for (const a of document.querySelectorAll('#nav a'))
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  const signedIn = name !== 'login';
  $('#nav').hidden = !signedIn;
  $('#signout').hidden = !signedIn;
  const h = $(`#${name}-h`);
  document.title = `${h.textContent} — cebridge console`;
  h.focus();
}

function signIn(message) {
  clearToken();
  overview.hide();
  showView('login');
  $('#login-msg').textContent = message || '';
  $('#token').value = '';
  $('#token').focus();
}

async function loadRoutes() {
  routes = await api('/routes');
  dlq.setRoutes(routes.map((r) => r.name));
}

async function route() {
  if (!token()) return signIn();
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/');
  const view = VIEWS.includes(parts[0]) && parts[0] !== 'login' ? parts[0] : 'overview';
  if (view !== 'overview') overview.hide();
  showView(view);
  try {
    if (view === 'overview') routes = await overview.show() || routes;
    if (view === 'dlq') {
      await loadRoutes();
      await dlq.show(new URLSearchParams(query || ''));
    }
    if (view === 'events') await events.show(parts[1] ? decodeURIComponent(parts.slice(1).join('/')) : '');
    if (view === 'contracts') {
      await loadRoutes();
      await contracts.show(routes);
    }
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) announce('Error: ' + e.message);
  }
}

whenUnauthorized(() =>
  signIn('The admin API refused the token (401). Enter the admin token again.'));

$('#login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const t = $('#token').value.trim();
  if (!t) {
    $('#login-msg').textContent = 'Enter the admin token.';
    return;
  }
  setToken(t);
  try {
    await loadRoutes();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // signIn said why
    clearToken();
    $('#login-msg').textContent = 'Cannot sign in: ' + err.message;
    return;
  }
  $('#login-msg').textContent = '';
  announce('Signed in');
  if (!location.hash || location.hash === '#/login') location.hash = '#/overview';
  else route();
});

$('#signout').addEventListener('click', () => {
  signIn('Signed out.');
  history.replaceState(null, '', '#/overview');
});

overview.init();
dlq.init();
events.init();
contracts.init();
window.addEventListener('hashchange', route);
route();
