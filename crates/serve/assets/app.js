// The page of `mcp-host serve`: conversations, a chat that streams the model's text and
// shows every tool call, the approval and elicitation dialogs, and the user's servers.
// Everything a server, a tool or the model sent is hostile: it reaches the page as text
// (textContent) or through markdown.js, which escapes before it marks up.
//
// A conversation's events come from /api/conversations/{id}/events (SSE), numbered 1, 2, 3…
// The page applies each number once, in order: anything at or below the last number seen is
// dropped, and after any break (an error, the server's `reconnect`, the browser going
// offline) the stream is opened again with `?after=<last>`, so nothing is doubled or lost.

import { renderMarkdown } from './markdown.js';

// ---------------------------------------------------------------------------------------
// Small helpers

const $ = (sel, root = document) => root.querySelector(sel);
const byTest = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);

/** An element: `attrs` are attributes (`text` sets textContent, `class` the class, `on*`
 * adds a listener), children are nodes or strings (always as text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function pretty(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

function formatMs(ms) {
  if (typeof ms !== 'number') return '';
  if (ms < 1000) return `${ms} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

function formatDate(ms) {
  const d = new Date(ms);
  const today = new Date();
  return d.toDateString() === today.toDateString()
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

/** Only http(s) addresses become links. */
function safeHttpUrl(text) {
  try {
    const u = new URL(String(text));
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------
// The API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const api = {
  csrf: '',
  async call(method, path, body) {
    const headers = { Accept: 'application/json' };
    const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') {
      headers['Content-Type'] = 'application/json';
      headers['X-CSRF-Token'] = this.csrf;
      init.body = JSON.stringify(body ?? {});
    }
    init.signal = AbortSignal.timeout(30_000);
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, e && e.name === 'TimeoutError' ? 'the service did not answer in time' : 'the service cannot be reached');
    }
    const text = await res.text().catch(() => '');
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    if (res.status === 401 && path !== '/api/signout') {
      showSignedOut();
      throw new ApiError(401, 'you are signed out');
    }
    if (!res.ok) {
      const why = data && typeof data === 'object' && typeof data.error === 'string' ? data.error : res.statusText;
      throw new ApiError(res.status, why || `HTTP ${res.status}`);
    }
    return data;
  },
  get(path) {
    return this.call('GET', path);
  },
  post(path, body) {
    return this.call('POST', path, body);
  },
  put(path, body) {
    return this.call('PUT', path, body);
  },
};

// ---------------------------------------------------------------------------------------
// Page state

const ui = {};
let me = null;
let conversations = [];
/** The open conversation's view; replaced whole when another is opened. */
let view = null;
let serverTimer = null;

function freshView(id) {
  return {
    id,
    gen: (view ? view.gen : 0) + 1,
    es: null,
    last: 0,
    rendered: 0,
    dupes: 0,
    gaps: 0,
    gapAt: -1,
    retryTimer: null,
    backoff: 500,
    conn: 'idle',
    turns: [],
    turn: null,
    cards: new Map(),
    /** Pending approvals by call id, oldest first. */
    approvals: new Map(),
    /** Pending elicitations by `${seq}`, oldest first: {seq, req, calls: Set}. */
    elicitations: new Map(),
    /** Running calls: call id → server. */
    running: new Map(),
    answered: new Set(),
    dirty: new Set(),
    title: '',
  };
}

// ---------------------------------------------------------------------------------------
// Start

document.addEventListener('DOMContentLoaded', start);

async function start() {
  for (const id of ['loading', 'signed-out', 'app']) ui[id] = document.getElementById(id);
  ui.log = byTest('chat-log');
  ui.empty = byTest('chat-empty');
  ui.input = byTest('composer-input');
  ui.send = byTest('send');
  ui.stop = byTest('interrupt');
  ui.note = byTest('composer-note');
  ui.conn = byTest('conn-status');
  ui.approval = document.getElementById('approval');
  ui.elicitation = document.getElementById('elicitation');
  wire();
  try {
    me = await api.get('/api/me');
  } catch (e) {
    if (e.status !== 401) {
      ui.loading.textContent = `Cannot reach the service: ${e.message}. Reload to try again.`;
    }
    return;
  }
  api.csrf = me.csrf || '';
  ui.loading.hidden = true;
  ui.app.hidden = false;
  const name = byTest('user-name');
  name.textContent = me.admin ? `${me.name} (admin)` : me.name;
  name.hidden = false;
  byTest('sign-out').hidden = false;
  await Promise.all([loadConversations(), refreshServers(), refreshTools()]);
  const wanted = conversationFromHash();
  if (wanted && conversations.some((c) => c.id === wanted)) {
    openConversation(wanted);
  } else {
    setConn('idle', 'No conversation open');
  }
  serverTimer = setInterval(() => {
    if (!document.hidden && me) refreshServers();
  }, 15_000);
  ui.input.focus();
}

function conversationFromHash() {
  const m = location.hash.match(/^#\/c\/([A-Za-z0-9_-]{1,100})$/);
  return m ? m[1] : null;
}

function wire() {
  byTest('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  ui.input.addEventListener('input', autosize);
  ui.stop.addEventListener('click', interrupt);
  byTest('new-conversation').addEventListener('click', newConversation);
  byTest('sign-out').addEventListener('click', signOut);
  byTest('servers-refresh').addEventListener('click', () => refreshServers());
  byTest('conn-retry').addEventListener('click', () => {
    if (view) connect(view);
  });
  byTest('approval-review').addEventListener('click', () => {
    if (view) {
      view.dialogsHidden = false;
      renderDialogs();
    }
  });
  let searchTimer = null;
  byTest('tool-search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(refreshTools, 250);
  });
  for (const [id, scope] of [['approve-once', 'once'], ['approve-session', 'session'], ['approve-always', 'always']]) {
    byTest(id).addEventListener('click', () => answerApproval(true, scope));
  }
  byTest('deny').addEventListener('click', () => answerApproval(false, 'once'));
  for (const id of ['approval-later', 'elicitation-later']) {
    byTest(id).addEventListener('click', () => {
      if (view) {
        view.dialogsHidden = true;
        renderDialogs();
      }
    });
  }
  // Neither dialog closes on Escape: a question is answered by its buttons (or stays).
  for (const d of [ui.approval, ui.elicitation]) {
    d.addEventListener('cancel', (e) => e.preventDefault());
  }
  byTest('elicitation-accept').addEventListener('click', () => answerElicitation('accept'));
  byTest('elicitation-decline').addEventListener('click', () => answerElicitation('decline'));
  byTest('elicitation-cancel').addEventListener('click', () => answerElicitation('cancel'));
  byTest('elicitation-form').addEventListener('submit', (e) => {
    e.preventDefault();
    answerElicitation('accept');
  });
  ui.log.addEventListener('scroll', () => {
    ui.stick = ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 80;
  });
  ui.stick = true;
  window.addEventListener('hashchange', () => {
    const id = conversationFromHash();
    if (id && (!view || view.id !== id) && me) openConversation(id);
  });
  // The browser knows it is offline before a stream notices: drop the stream at once, and
  // resume it as soon as the network is back.
  window.addEventListener('offline', () => {
    if (view && view.es) {
      closeStream(view);
      setConn('offline', 'Offline — waiting for the network');
      scheduleReconnect(view, 10_000);
    }
  });
  window.addEventListener('online', () => {
    if (view && !view.es) connect(view);
  });
}

function autosize() {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
}

function showSignedOut() {
  me = null;
  if (view) closeStream(view);
  clearInterval(serverTimer);
  ui.loading.hidden = true;
  ui.app.hidden = true;
  ui['signed-out'].hidden = false;
  byTest('user-name').hidden = true;
  byTest('sign-out').hidden = true;
  byTest('conversation-title').textContent = '';
  for (const d of [ui.approval, ui.elicitation]) if (d.open) d.close();
  setConn('signed-out', 'Signed out');
  // Offer the identity provider's sign-in only where there is one.
  fetch('/auth/methods', { credentials: 'same-origin' })
    .then((r) => (r.ok ? r.json() : null))
    .then((m) => {
      if (m) byTest('oidc-signin').hidden = !m.oidc;
    })
    .catch(() => {});
}

async function signOut() {
  try {
    await api.post('/api/signout', {});
  } catch {
    // Signed out either way on this page.
  }
  showSignedOut();
}

// ---------------------------------------------------------------------------------------
// Conversations

async function loadConversations() {
  try {
    conversations = (await api.get('/api/conversations')) || [];
  } catch (e) {
    if (e.status === 401) return;
    conversations = [];
  }
  renderConversations();
}

function renderConversations() {
  const list = byTest('conversation-list');
  list.replaceChildren();
  if (!conversations.length) {
    list.append(h('li', { class: 'muted empty-item', text: 'None yet' }));
  }
  for (const c of conversations) {
    const active = view && view.id === c.id;
    const item = h(
      'li',
      {},
      h(
        'button',
        {
          type: 'button',
          class: `conv${active ? ' active' : ''}`,
          'data-testid': 'conversation-item',
          'data-id': c.id,
          'aria-current': active ? 'true' : null,
          title: c.title,
          onclick: () => openConversation(c.id),
        },
        h('span', { class: 'conv-title', text: c.title }),
        h('span', { class: 'conv-date', text: formatDate(c.created_ms) }),
      ),
    );
    list.append(item);
  }
}

async function newConversation() {
  try {
    const row = await api.post('/api/conversations', {});
    conversations.unshift(row);
    openConversation(row.id);
    ui.input.focus();
    return row.id;
  } catch (e) {
    note(`Cannot create a conversation: ${e.message}`, true);
    return null;
  }
}

async function openConversation(id) {
  if (view) closeStream(view);
  view = freshView(id);
  const v = view;
  for (const d of [ui.approval, ui.elicitation]) if (d.open) d.close();
  ui.log.replaceChildren();
  seqsDirty.clear();
  ui.log.dataset.conversation = id;
  updateCounters(v);
  ui.stick = true;
  if (conversationFromHash() !== id) history.replaceState(null, '', `#/c/${id}`);
  renderConversations();
  const row = conversations.find((c) => c.id === id);
  setTitle(row ? row.title : '');
  updateComposer();
  try {
    const detail = await api.get(`/api/conversations/${encodeURIComponent(id)}`);
    if (v !== view) return;
    setTitle(detail.title);
  } catch (e) {
    if (v !== view) return;
    if (e.status === 404) {
      note('That conversation does not exist (or is not yours).', true);
      view = null;
      history.replaceState(null, '', '#');
      ui.log.replaceChildren(ui.empty);
      setConn('idle', 'No conversation open');
      return;
    }
  }
  connect(v);
}

function setTitle(title) {
  if (view) view.title = title || '';
  byTest('conversation-title').textContent = title || '';
  document.title = title ? `${title} — mcp-host` : 'mcp-host';
}

// ---------------------------------------------------------------------------------------
// The event stream

const EVENT_TYPES = [
  'turn_started', 'text_delta', 'decided', 'call_begun', 'call_ended', 'call_refused',
  'progress', 'approval_requested', 'elicitation_requested', 'elicitation_answered',
  'elicitation_withdrawn', 'notice', 'turn_ended',
  'turn_failed', 'turn_interrupted', 'conversation_started', 'model_changed', 'servers',
  'tools', 'ended', 'message',
];

function setConn(state, text) {
  if (view) view.conn = state;
  ui.conn.dataset.state = state;
  $('.conn-text', ui.conn).textContent = text;
  byTest('conn-retry').hidden = !(state === 'disconnected' || state === 'offline');
}

function closeStream(v) {
  clearTimeout(v.retryTimer);
  v.retryTimer = null;
  if (v.es) {
    v.es.close();
    v.es = null;
  }
}

function connect(v) {
  closeStream(v);
  if (v !== view || !me) return;
  const url = `/api/conversations/${encodeURIComponent(v.id)}/events?after=${v.last}`;
  const es = new EventSource(url, { withCredentials: true });
  v.es = es;
  setConn('connecting', v.last ? 'Reconnecting…' : 'Connecting…');
  es.onopen = () => {
    if (v.es !== es) return;
    v.backoff = 500;
    v.failures = 0;
    setConn('live', 'Live');
  };
  es.onerror = () => {
    if (v.es !== es) return;
    // Whatever the browser would do next, the page resumes on its own, from its last event.
    closeStream(v);
    const wait = v.backoff;
    v.backoff = Math.min(v.backoff * 2, 10_000);
    v.failures = (v.failures || 0) + 1;
    if (v.failures >= 3 && navigator.onLine !== false) checkStillThere(v);
    if (navigator.onLine === false) {
      setConn('offline', 'Offline — waiting for the network');
    } else {
      setConn('disconnected', `Disconnected — retrying in ${Math.round(wait / 100) / 10} s`);
    }
    scheduleReconnect(v, wait);
  };
  for (const type of EVENT_TYPES) es.addEventListener(type, (ev) => onEvent(v, es, ev));
  es.addEventListener('reconnect', () => {
    if (v.es !== es) return;
    // The service is shutting down (or moving): resume shortly, from the last event.
    closeStream(v);
    setConn('disconnected', 'The service is restarting — reconnecting…');
    scheduleReconnect(v, 700 + Math.floor(Math.random() * 600));
  });
}

/** After repeated failures: is the conversation (and the sign-in) still there? An EventSource
 * does not say why it failed. */
async function checkStillThere(v) {
  try {
    await api.get(`/api/conversations/${encodeURIComponent(v.id)}`);
  } catch (e) {
    if (v !== view) return;
    if (e.status === 404) {
      closeStream(v);
      setConn('idle', 'Conversation not found');
      note('This conversation is gone (or is not yours).', true);
    }
    // 401 shows the signed-out view (in api.call); anything else: keep retrying.
  }
}

function scheduleReconnect(v, ms) {
  clearTimeout(v.retryTimer);
  v.retryTimer = setTimeout(() => {
    v.retryTimer = null;
    if (v === view && !v.es) connect(v);
  }, ms);
}

function onEvent(v, es, ev) {
  if (v !== view || v.es !== es) return;
  const seq = Number.parseInt(ev.lastEventId, 10);
  if (!Number.isSafeInteger(seq) || seq <= 0) return;
  if (seq <= v.last) {
    v.dupes += 1;
    updateCounters(v);
    return;
  }
  if (seq !== v.last + 1 && v.gapAt !== v.last) {
    // Something was skipped: read again from the last event applied (once per gap; a number
    // that is truly missing from the log is accepted the second time).
    v.gaps += 1;
    v.gapAt = v.last;
    updateCounters(v);
    connect(v);
    return;
  }
  v.last = seq;
  let data = {};
  try {
    data = JSON.parse(ev.data);
  } catch {
    data = {};
  }
  if (!data || typeof data !== 'object') data = {};
  try {
    apply(v, ev.type === 'message' ? String(data.type || 'message') : ev.type, data, seq);
  } catch (e) {
    // One malformed event must not stop the others.
    addNotice(v, seq, `An event could not be shown (${ev.type}): ${e.message}`, 'error');
  }
  v.rendered += 1;
  schedule();
}

function updateCounters(v) {
  if (v !== view) return;
  const d = ui.log.dataset;
  d.lastSeq = String(v.last);
  d.rendered = String(v.rendered);
  d.dupes = String(v.dupes);
  d.gaps = String(v.gaps);
}

// Rendering is batched to one pass per frame (a replay of many events, fast deltas); a
// timer stands in when frames do not come (a hidden tab).
let flushQueued = false;
function schedule() {
  if (flushQueued) return;
  flushQueued = true;
  requestAnimationFrame(flush);
  setTimeout(flush, 120);
}

function flush() {
  if (!flushQueued) return;
  flushQueued = false;
  const v = view;
  if (!v) return;
  for (const seg of v.dirty) seg.body.innerHTML = renderMarkdown(seg.raw);
  v.dirty.clear();
  for (const el of seqsDirty) el.dataset.seqs = ranges(seqsOf.get(el) || []);
  seqsDirty.clear();
  for (const t of v.turns) t.el.dataset.state = t.state;
  updateCounters(v);
  renderDialogs();
  updateComposer();
  if (ui.stick) ui.log.scrollTop = ui.log.scrollHeight;
}

// ---------------------------------------------------------------------------------------
// Events → the conversation

// Each element made or changed by events carries their numbers in `data-seqs` (ranges like
// `7-12`), so a test can check that every event was applied exactly once. Written in the
// next flush, not per event (a long answer has thousands of deltas).
const seqsOf = new WeakMap();
const seqsDirty = new Set();
function tagSeq(el, seq) {
  let list = seqsOf.get(el);
  if (!list) seqsOf.set(el, (list = []));
  list.push(seq);
  seqsDirty.add(el);
}

function ranges(list) {
  const out = [];
  for (let i = 0; i < list.length; i += 1) {
    let j = i;
    while (j + 1 < list.length && list[j + 1] === list[j] + 1) j += 1;
    out.push(j > i ? `${list[i]}-${list[j]}` : String(list[i]));
    i = j;
  }
  return out.join(' ');
}

function newTurn(v, text, seq, at) {
  if (v.turn && v.turn.state === 'running') v.turn.state = 'ended';
  const el = h('article', { class: 'turn', 'data-testid': 'turn', 'data-state': 'running' });
  const user = h('div', { class: 'msg user', 'data-testid': 'user-message' }, h('div', { class: 'bubble', text }));
  const items = h('div', { class: 'items' });
  const footer = h('div', { class: 'turn-footer', 'data-testid': 'turn-footer' });
  const assistant = h('div', { class: 'msg assistant', 'data-testid': 'assistant-message' }, items, footer);
  el.append(user, assistant);
  if (seq) tagSeq(user, seq);
  if (typeof at === 'number') user.title = new Date(at).toLocaleString();
  ui.empty.remove();
  ui.log.append(el);
  const turn = { el, items, footer, assistant, state: 'running', segment: null, hadText: false, startedAt: typeof at === 'number' ? at : null };
  v.turns.push(turn);
  v.turn = turn;
  return turn;
}

function currentTurn(v) {
  return v.turn || newTurn(v, '(a turn from before this page)', 0);
}

function textSegment(turn) {
  if (turn.segment && turn.items.lastElementChild === turn.segment.el) return turn.segment;
  const body = h('div', { class: 'md' });
  const el = h('div', { class: 'text-seg', 'data-testid': 'assistant-text' }, body);
  turn.items.append(el);
  turn.segment = { el, body, raw: '' };
  return turn.segment;
}

function addNotice(v, seq, text, kind = 'info') {
  const turn = currentTurn(v);
  const el = h('div', { class: `notice ${kind}`, 'data-testid': 'notice', text });
  if (seq) tagSeq(el, seq);
  turn.items.append(el);
  return el;
}

function decidedLabel(d) {
  const by = d && d.decided_by ? d.decided_by : {};
  const verb = { allow: 'Allowed', deny: 'Denied', ask: 'Needs your approval' }[d.verdict] || d.verdict || '';
  switch (by.by) {
    case 'user':
      return `${verb} by you (${by.scope === 'once' ? 'this once' : by.scope === 'session' ? 'for this session' : 'always'})`;
    case 'deny_rule':
    case 'ask_rule':
    case 'allow_rule':
      return `${verb} by rule ${by.rule}`;
    case 'remembered':
      return `${verb}: you allowed it before`;
    case 'read_only_hint':
      return `${verb}: the tool says it is read-only`;
    case 'sealed':
      return `${verb}: its server is sealed by the sandbox`;
    case 'mode':
      return `${verb} (mode ${by.mode})`;
    case 'hook':
      return `${verb} by a hook`;
    case 'taint':
      return `${verb}: output of ${by.from} is in the context`;
    case 'drift':
      return `${verb}: the definition changed`;
    case 'look_alike':
      return `${verb}: the name looks like another tool's`;
    case 'instruction_text':
      return `${verb}: the tool's text reads as instructions`;
    default:
      return verb;
  }
}

const STATUS_TEXT = {
  pending: 'deciding',
  waiting: 'waiting for you',
  allowed: 'allowed',
  running: 'running',
  ok: 'ok',
  error: 'error',
  refused: 'refused',
  background: 'in background',
  stopped: 'stopped',
};

function card(v, callId, name) {
  let c = v.cards.get(callId);
  if (c) return c;
  const turn = currentTurn(v);
  const status = h('span', { class: 'status', 'data-testid': 'tool-status' });
  const took = h('span', { class: 'took muted', 'data-testid': 'tool-took' });
  const server = h('span', { class: 'chip', 'data-testid': 'tool-server' });
  const title = h('code', { class: 'tool-name', 'data-testid': 'tool-name', text: name || callId });
  const decision = h('div', { class: 'decision muted', 'data-testid': 'tool-decision' });
  const args = h('pre', { class: 'code-block', 'data-testid': 'tool-args' });
  const argsBox = h('details', { class: 'args' }, h('summary', { text: 'Arguments' }), args);
  const progress = h('progress', { class: 'progress', 'data-testid': 'tool-progress', hidden: true, max: 1 });
  const progressText = h('span', { class: 'muted small-text', hidden: true });
  const preview = h('pre', { class: 'code-block preview', 'data-testid': 'tool-preview' });
  const previewBox = h('div', { class: 'result', hidden: true }, h('div', { class: 'result-label muted', text: 'Result' }), preview);
  const reason = h('p', { class: 'refusal', 'data-testid': 'tool-reason', hidden: true });
  const el = h(
    'div',
    { class: 'tool-card', 'data-testid': 'tool-card', 'data-call-id': callId, 'data-status': 'pending' },
    h('div', { class: 'tool-head' }, h('span', { class: 'tool-icon', 'aria-hidden': 'true', text: '⚙' }), title, server, h('span', { class: 'spacer' }), took, status),
    decision,
    argsBox,
    progress,
    progressText,
    previewBox,
    reason,
  );
  turn.items.append(el);
  c = { el, status, took, server, title, decision, args, argsBox, progress, progressText, preview, previewBox, reason };
  v.cards.set(callId, c);
  setStatus(c, 'pending');
  return c;
}

function setStatus(c, status) {
  c.el.dataset.status = status;
  c.status.textContent = STATUS_TEXT[status] || status;
  c.status.className = `status status-${status}`;
}

function setSubject(c, subject) {
  if (!subject) return;
  c.title.textContent = subject.name || c.title.textContent;
  c.server.textContent = subject.server ? `${subject.server} · ${subject.tool || ''}` : '';
  c.args.textContent = pretty(subject.args ?? {});
}

function resolveApproval(v, callId) {
  v.approvals.delete(callId);
}

/** A call ended: the questions its server asked while it ran are over. */
function callOver(v, callId) {
  v.running.delete(callId);
  for (const [key, e] of v.elicitations) {
    if (e.calls.delete(callId) && e.calls.size === 0 && e.tied) v.elicitations.delete(key);
  }
}

function endTurn(v, state) {
  const turn = currentTurn(v);
  turn.state = state;
  for (const c of v.cards.values()) {
    const s = c.el.dataset.status;
    if (s === 'pending' || s === 'waiting' || s === 'running' || s === 'allowed') setStatus(c, 'stopped');
  }
  v.approvals.clear();
  v.elicitations.clear();
  v.running.clear();
  v.turn = turn;
}

function apply(v, type, d, seq) {
  switch (type) {
    case 'turn_started': {
      newTurn(v, typeof d.text === 'string' ? d.text : '', seq, d.at_ms);
      // The service names a new conversation after its first message.
      if (v.turns.length === 1) setTimeout(() => refreshTitle(v), 300);
      refreshServersSoon(1500);
      break;
    }
    case 'text_delta': {
      const turn = currentTurn(v);
      const seg = textSegment(turn);
      seg.raw += typeof d.text === 'string' ? d.text : '';
      turn.hadText = true;
      tagSeq(seg.el, seq);
      v.dirty.add(seg);
      break;
    }
    case 'decided': {
      const c = card(v, d.call_id, d.name);
      // A person's answer says it all; policy's reason says why it decided so.
      const who = d.decided_by && d.decided_by.by;
      c.decision.textContent = `${decidedLabel(d)}${d.reason && who !== 'user' ? ` — ${d.reason}` : ''}`;
      tagSeq(c.el, seq);
      if (d.verdict === 'allow') {
        setStatus(c, 'allowed');
        resolveApproval(v, d.call_id);
      } else if (d.verdict === 'deny') {
        setStatus(c, 'refused');
        resolveApproval(v, d.call_id);
      }
      break;
    }
    case 'approval_requested': {
      const subject = d.subject || {};
      const c = card(v, subject.call_id, subject.name);
      setSubject(c, subject);
      setStatus(c, 'waiting');
      tagSeq(c.el, seq);
      if (!v.answered.has(subject.call_id)) v.approvals.set(subject.call_id, d);
      v.dialogsHidden = false;
      break;
    }
    case 'call_begun': {
      const subject = d.subject || {};
      const c = card(v, subject.call_id, subject.name);
      setSubject(c, subject);
      setStatus(c, 'running');
      tagSeq(c.el, seq);
      resolveApproval(v, subject.call_id);
      v.running.set(subject.call_id, String(subject.server || ''));
      break;
    }
    case 'progress': {
      const c = card(v, d.call_id, '');
      tagSeq(c.el, seq);
      const total = typeof d.total === 'number' && d.total > 0 ? d.total : null;
      c.progress.hidden = false;
      if (total) {
        c.progress.max = total;
        c.progress.value = Math.min(d.progress, total);
      } else {
        c.progress.removeAttribute('value');
      }
      c.progressText.hidden = false;
      c.progressText.textContent = `${d.message ? `${d.message} — ` : ''}${total ? `${Math.round((100 * d.progress) / total)} %` : String(d.progress)}`;
      break;
    }
    case 'call_ended': {
      const c = card(v, d.call_id, d.name);
      tagSeq(c.el, seq);
      setStatus(c, d.background_job ? 'background' : d.is_error ? 'error' : 'ok');
      c.took.textContent = formatMs(d.took_ms);
      c.progress.hidden = true;
      c.progressText.hidden = true;
      if (typeof d.preview === 'string' && d.preview !== '') {
        c.previewBox.hidden = false;
        c.preview.textContent = d.preview;
      }
      if (d.background_job) {
        c.reason.hidden = false;
        c.reason.textContent = `Still running as background job ${d.background_job}.`;
      }
      resolveApproval(v, d.call_id);
      callOver(v, d.call_id);
      break;
    }
    case 'call_refused': {
      const c = card(v, d.call_id, d.name);
      tagSeq(c.el, seq);
      setStatus(c, 'refused');
      if (d.server) c.server.textContent = `${d.server} · ${d.tool || ''}`;
      if (d.arguments !== undefined && !c.args.textContent) c.args.textContent = pretty(d.arguments);
      c.reason.hidden = false;
      c.reason.textContent = `Not sent: ${d.reason || 'refused'}`;
      resolveApproval(v, d.call_id);
      callOver(v, d.call_id);
      break;
    }
    case 'elicitation_requested': {
      const server = String(d.server || '');
      const calls = new Set([...v.running].filter(([, s]) => s === server).map(([id]) => id));
      const key = `${v.id}:${seq}`;
      if (!answeredElicitations().has(key)) v.elicitations.set(String(seq), { seq, key, req: d, calls, tied: calls.size > 0 });
      addNotice(v, seq, `${server || 'A server'} asked you: ${d.message || ''}`, 'ask');
      v.dialogsHidden = false;
      break;
    }
    case 'elicitation_answered': {
      // The log says the question is settled (answered here, in another tab or by another replica).
      for (const [key, e] of v.elicitations) if (e.req && e.req.id === d.id) v.elicitations.delete(key);
      const said = { accept: 'answered', decline: 'declined', cancel: 'cancelled' }[d.action] || 'answered';
      addNotice(v, seq, `You ${said} the server's question.`);
      break;
    }
    case 'elicitation_withdrawn': {
      // The server stopped waiting (its request ended): the question goes away unanswered.
      for (const [key, e] of v.elicitations) if (e.req && e.req.id === d.id) v.elicitations.delete(key);
      addNotice(v, seq, 'The server stopped waiting for an answer to its question.');
      break;
    }
    case 'notice':
      addNotice(v, seq, typeof d.text === 'string' ? d.text : '');
      break;
    case 'turn_ended': {
      const report = d.report || {};
      const turn = currentTurn(v);
      if (!turn.hadText && typeof report.text === 'string' && report.text) {
        const seg = textSegment(turn);
        seg.raw = report.text;
        v.dirty.add(seg);
      }
      const end = report.end === 'cancelled' ? 'cancelled' : 'finished';
      endTurn(v, end);
      const bits = [];
      if (report.end === 'cancelled') bits.push('Stopped');
      if (report.end === 'step_limit') bits.push('Stopped at the step limit');
      if (Array.isArray(report.calls) && report.calls.length) bits.push(plural(report.calls.length, 'tool call'));
      if (typeof report.steps === 'number') bits.push(plural(report.steps, 'step'));
      const u = report.usage;
      if (u && (u.input_tokens || u.output_tokens)) bits.push(`${u.input_tokens} in / ${u.output_tokens} out tokens`);
      const took = tookOf(turn, d);
      if (took) bits.push(took);
      turn.footer.textContent = bits.join(' · ');
      turn.footer.className = `turn-footer${report.end === 'cancelled' ? ' warn' : ''}`;
      tagSeq(turn.footer, seq);
      refreshServersSoon(300);
      break;
    }
    case 'turn_failed': {
      const turn = currentTurn(v);
      endTurn(v, 'failed');
      turn.footer.textContent = `The turn failed: ${d.error || 'unknown error'}`;
      turn.footer.title = tookOf(turn, d);
      turn.footer.className = 'turn-footer error';
      tagSeq(turn.footer, seq);
      break;
    }
    case 'turn_interrupted': {
      const turn = currentTurn(v);
      endTurn(v, 'interrupted');
      turn.footer.textContent = `Interrupted: ${d.reason || 'the service stopped before the turn ended'}`;
      turn.footer.className = 'turn-footer warn';
      tagSeq(turn.footer, seq);
      break;
    }
    default:
      addNotice(v, seq, `(${type})`, 'muted');
  }
}

/** How long a turn took, from the times the service wrote its first and last events. */
function tookOf(turn, d) {
  return typeof d.at_ms === 'number' && typeof turn.startedAt === 'number' && d.at_ms >= turn.startedAt
    ? formatMs(d.at_ms - turn.startedAt)
    : '';
}

async function refreshTitle(v) {
  try {
    const detail = await api.get(`/api/conversations/${encodeURIComponent(v.id)}`);
    const row = conversations.find((c) => c.id === v.id);
    if (row) row.title = detail.title;
    if (v === view) setTitle(detail.title);
    renderConversations();
  } catch {
    // The old title stays.
  }
}

// ---------------------------------------------------------------------------------------
// Sending, stopping

function isRunning() {
  return Boolean(view && view.turn && view.turn.state === 'running');
}

function updateComposer() {
  const running = isRunning();
  ui.stop.hidden = !running;
  ui.send.disabled = running || ui.sending === true;
  if (running && !ui.note.classList.contains('error')) ui.note.textContent = 'The model is working…';
  else if (!running && !ui.note.classList.contains('error')) ui.note.textContent = '';
}

function note(text, error = false) {
  ui.note.textContent = text;
  ui.note.classList.toggle('error', error);
  if (error) {
    clearTimeout(ui.noteTimer);
    ui.noteTimer = setTimeout(() => {
      ui.note.classList.remove('error');
      updateComposer();
    }, 8000);
  }
}

async function send() {
  const text = ui.input.value;
  if (!text.trim() || ui.sending || isRunning()) return;
  ui.sending = true;
  updateComposer();
  try {
    let id = view && view.id;
    if (!id) id = await newConversation();
    if (!id) return;
    await api.post(`/api/conversations/${encodeURIComponent(id)}/turns`, { text });
    ui.input.value = '';
    autosize();
    ui.stick = true;
    note('');
  } catch (e) {
    if (e.status === 409) note('A turn is already running here; wait for it or stop it.', true);
    else if (e.status === 503) note(`The service cannot start a turn now: ${e.message}`, true);
    else note(`Not sent: ${e.message}`, true);
  } finally {
    ui.sending = false;
    updateComposer();
  }
}

async function interrupt() {
  if (!view) return;
  try {
    await api.post(`/api/conversations/${encodeURIComponent(view.id)}/interrupt`, {});
    note('Stopping…');
  } catch (e) {
    note(e.status === 404 ? 'Nothing is running.' : `Cannot stop: ${e.message}`, e.status !== 404);
  }
}

// ---------------------------------------------------------------------------------------
// Approvals and elicitations

function renderDialogs() {
  const v = view;
  const banner = byTest('approval-banner');
  const waiting = v ? v.approvals.size + v.elicitations.size : 0;
  banner.hidden = !(v && v.dialogsHidden && waiting);
  if (!banner.hidden) $('.approval-banner-text', banner).textContent = `${plural(waiting, 'question')} waiting for you`;
  if (!v || v.dialogsHidden) {
    for (const d of [ui.approval, ui.elicitation]) if (d.open) d.close();
    return;
  }
  const [callId, prompt] = v.approvals.entries().next().value || [];
  if (callId !== undefined) {
    if (ui.elicitation.open) ui.elicitation.close();
    if (ui.approval.dataset.callId !== callId || !ui.approval.open) fillApproval(callId, prompt);
    byTest('approval-count').textContent = v.approvals.size > 1 ? `1 of ${v.approvals.size}` : '';
    if (!ui.approval.open) ui.approval.showModal();
    return;
  }
  if (ui.approval.open) ui.approval.close();
  ui.approval.dataset.callId = '';
  const [key, e] = v.elicitations.entries().next().value || [];
  if (key !== undefined) {
    if (ui.elicitation.dataset.key !== key || !ui.elicitation.open) fillElicitation(key, e.req);
    byTest('elicitation-count').textContent = v.elicitations.size > 1 ? `1 of ${v.elicitations.size}` : '';
    if (!ui.elicitation.open) ui.elicitation.showModal();
    return;
  }
  if (ui.elicitation.open) ui.elicitation.close();
  ui.elicitation.dataset.key = '';
}

function fillApproval(callId, p) {
  const s = p.subject || {};
  const d = ui.approval;
  d.dataset.callId = callId;
  byTest('approval-tool', d).textContent = s.name || '';
  byTest('approval-server-tool', d).textContent = s.tool || '';
  byTest('approval-server', d).textContent = String(s.server || '');
  byTest('approval-reason', d).textContent = p.reason || '';
  byTest('approval-args', d).textContent = pretty(s.args ?? {});
  const prov = byTest('approval-provenance', d);
  const from = Array.isArray(s.provenance) ? s.provenance : [];
  prov.classList.toggle('warn', from.length > 0);
  prov.textContent = from.length
    ? `The model made this call after reading output of: ${from.join(', ')}. Text from ${from.length === 1 ? 'that server' : 'those servers'} may have steered it.`
    : 'Only you had spoken: no server output was in the context.';
  byTest('approval-description', d).textContent = p.description || '(no description)';
  const ann = byTest('approval-annotations', d);
  const believed = byTest('approval-annotations-believed', d);
  if (p.annotations && typeof p.annotations === 'object' && Object.keys(p.annotations).length) {
    ann.hidden = false;
    ann.textContent = pretty(p.annotations);
    believed.textContent = p.annotations_believed
      ? 'Believed: the server is trusted, so these hints count in the decision.'
      : 'Not believed: the server is not trusted, so these hints do not change the decision.';
  } else {
    ann.hidden = true;
    ann.textContent = '';
    believed.textContent = 'The server sent none.';
  }
  const drift = byTest('approval-drift', d);
  const diff = byTest('approval-diff', d);
  diff.replaceChildren();
  if (typeof p.drift_diff === 'string' && p.drift_diff) {
    drift.hidden = false;
    for (const line of p.drift_diff.split('\n')) {
      const cls = line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : '';
      diff.append(h('span', { class: `diff-line ${cls}`, text: `${line}\n` }));
    }
  } else {
    drift.hidden = true;
  }
  byTest('approval-deny-reason', d).value = '';
  const err = byTest('approval-error', d);
  err.hidden = true;
  err.textContent = '';
  setButtons(d, false);
  $('.dialog-body', d).scrollTop = 0;
}

function setButtons(dialog, busy) {
  for (const b of dialog.querySelectorAll('.dialog-foot button')) b.disabled = busy;
}

async function answerApproval(allow, scope) {
  const v = view;
  const d = ui.approval;
  const callId = d.dataset.callId;
  if (!v || !callId) return;
  const reasonText = byTest('approval-deny-reason', d).value.trim();
  setButtons(d, true);
  try {
    await api.post(`/api/conversations/${encodeURIComponent(v.id)}/answers`, {
      kind: 'approval',
      call_id: callId,
      allow,
      scope,
      reason: allow || !reasonText ? null : reasonText,
    });
    v.answered.add(callId);
    v.approvals.delete(callId);
    const c = v.cards.get(callId);
    if (c && c.el.dataset.status === 'waiting') setStatus(c, allow ? 'allowed' : 'refused');
    renderDialogs();
  } catch (e) {
    if (e.status === 404) {
      // Nothing waits for it any more (answered elsewhere, or the turn ended).
      v.approvals.delete(callId);
      renderDialogs();
      return;
    }
    const err = byTest('approval-error', d);
    err.hidden = false;
    err.textContent = `Your answer did not arrive: ${e.message}. Try again.`;
    setButtons(d, false);
  }
}

const ELICITATION_STORE = 'mcp-host.answered-elicitations';

function answeredElicitations() {
  try {
    return new Set(JSON.parse(sessionStorage.getItem(ELICITATION_STORE) || '[]'));
  } catch {
    return new Set();
  }
}

function rememberElicitation(key) {
  const keys = [...answeredElicitations(), key].slice(-200);
  try {
    sessionStorage.setItem(ELICITATION_STORE, JSON.stringify(keys));
  } catch {
    // Only a reload would ask again.
  }
}

function fillElicitation(key, req) {
  const d = ui.elicitation;
  d.dataset.key = key;
  d.dataset.mode = req.mode === 'url' ? 'url' : 'form';
  byTest('elicitation-server', d).textContent = String(req.server || '');
  byTest('elicitation-message', d).textContent = req.message || '';
  const form = byTest('elicitation-form', d);
  const urlBox = byTest('elicitation-url', d);
  form.replaceChildren();
  const err = byTest('elicitation-error', d);
  err.hidden = true;
  const accept = byTest('elicitation-accept', d);
  if (req.mode === 'url') {
    form.hidden = true;
    urlBox.hidden = false;
    const link = byTest('elicitation-link', d);
    const u = safeHttpUrl(req.url);
    link.textContent = String(req.url || '');
    if (u) {
      link.href = u.href;
      byTest('elicitation-host', d).textContent = u.host;
    } else {
      link.removeAttribute('href');
      byTest('elicitation-host', d).textContent = 'This is not an http(s) address; it cannot be opened from here.';
    }
    accept.textContent = 'Open and accept';
    accept.disabled = !u;
  } else {
    form.hidden = false;
    urlBox.hidden = true;
    accept.textContent = 'Submit';
    const schema = req.schema && typeof req.schema === 'object' ? req.schema : {};
    const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
    // The required fields first (the order of the rest as the schema lists them).
    const names = Object.keys(props);
    names.sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
    for (const name of names) form.append(field(name, props[name] || {}, required.has(name)));
    if (!Object.keys(props).length) form.append(h('p', { class: 'muted', text: 'The server asks for no fields; submit to accept.' }));
  }
  setButtons(d, false);
  if (req.mode === 'url' && !safeHttpUrl(req.url)) accept.disabled = true;
}

/** One form field from a property of the flat schema. */
function field(name, prop, required) {
  const id = `el-${name.replace(/[^A-Za-z0-9_-]/g, '_')}-${Math.random().toString(36).slice(2, 8)}`;
  const label = String(prop.title || name);
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== 'null') : prop.type;
  const choices = enumChoices(prop);
  let input;
  if (type === 'boolean') {
    input = h('input', { type: 'checkbox', id, 'data-name': name, 'data-kind': 'boolean', 'data-testid': `elicitation-field-${name}` });
    input.checked = prop.default === true;
    const wrap = h('div', { class: 'field check' }, input, h('label', { for: id, text: label }));
    if (prop.description) wrap.append(h('p', { class: 'muted small-text', text: String(prop.description) }));
    return wrap;
  }
  if (choices) {
    input = h('select', { id, 'data-name': name, 'data-kind': 'enum', required: required || null });
    if (!required) input.append(h('option', { value: '', text: '—' }));
    for (const [value, text] of choices) input.append(h('option', { value, text }));
    if (prop.default !== undefined) input.value = String(prop.default);
  } else if (type === 'number' || type === 'integer') {
    input = h('input', {
      type: 'number',
      id,
      'data-name': name,
      'data-kind': type,
      step: type === 'integer' ? '1' : 'any',
      min: typeof prop.minimum === 'number' ? prop.minimum : null,
      max: typeof prop.maximum === 'number' ? prop.maximum : null,
      required: required || null,
    });
    if (typeof prop.default === 'number') input.value = String(prop.default);
  } else {
    const formats = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };
    input = h('input', {
      type: formats[prop.format] || 'text',
      id,
      'data-name': name,
      'data-kind': 'string',
      minlength: typeof prop.minLength === 'number' ? prop.minLength : null,
      maxlength: typeof prop.maxLength === 'number' ? prop.maxLength : null,
      required: required || null,
    });
    if (typeof prop.default === 'string') input.value = prop.default;
  }
  input.dataset.testid = `elicitation-field-${name}`;
  const wrap = h('div', { class: 'field' }, h('label', { for: id }, label, required ? h('span', { class: 'req', text: ' *' }) : null), input);
  if (prop.description) wrap.append(h('p', { class: 'muted small-text', text: String(prop.description) }));
  return wrap;
}

function enumChoices(prop) {
  if (Array.isArray(prop.enum)) {
    const names = Array.isArray(prop.enumNames) ? prop.enumNames : [];
    return prop.enum.map((v, i) => [String(v), String(names[i] ?? v)]);
  }
  const alts = Array.isArray(prop.oneOf) ? prop.oneOf : Array.isArray(prop.anyOf) ? prop.anyOf : null;
  if (alts && alts.every((a) => a && 'const' in a)) return alts.map((a) => [String(a.const), String(a.title ?? a.const)]);
  return null;
}

function formContent(form) {
  const content = {};
  for (const input of form.querySelectorAll('[data-name]')) {
    const name = input.dataset.name;
    const kind = input.dataset.kind;
    if (kind === 'boolean') {
      content[name] = input.checked;
    } else if (input.value === '') {
      continue;
    } else if (kind === 'integer') {
      content[name] = Number.parseInt(input.value, 10);
    } else if (kind === 'number') {
      content[name] = Number(input.value);
    } else {
      content[name] = input.value;
    }
  }
  return content;
}

async function answerElicitation(action) {
  const v = view;
  const d = ui.elicitation;
  const key = d.dataset.key;
  const pending = v && key ? v.elicitations.get(key) : null;
  if (!pending) return;
  const req = pending.req;
  let answer;
  if (action === 'accept') {
    if (req.mode === 'url') {
      const u = safeHttpUrl(req.url);
      if (!u) return;
      // Opened here, in the person's browser (never on the service's machine).
      window.open(u.href, '_blank', 'noopener,noreferrer');
      answer = { answer: 'accept', content: {} };
    } else {
      const form = byTest('elicitation-form', d);
      if (!form.reportValidity()) return;
      answer = { answer: 'accept', content: formContent(form) };
    }
  } else {
    answer = { answer: action };
  }
  setButtons(d, true);
  try {
    await api.post(`/api/conversations/${encodeURIComponent(v.id)}/answers`, { kind: 'elicitation', id: String(req.id), answer });
    rememberElicitation(pending.key);
    v.elicitations.delete(key);
    renderDialogs();
  } catch (e) {
    if (e.status === 404) {
      rememberElicitation(pending.key);
      v.elicitations.delete(key);
      renderDialogs();
      return;
    }
    const err = byTest('elicitation-error', d);
    err.hidden = false;
    err.textContent = `Your answer did not arrive: ${e.message}. Try again.`;
    setButtons(d, false);
  }
}

// ---------------------------------------------------------------------------------------
// Servers and tools

let serversBusy = false;
let serversTimer = null;
/** One refresh `ms` from now, however many events ask for one meanwhile (a replay). */
function refreshServersSoon(ms) {
  clearTimeout(serversTimer);
  serversTimer = setTimeout(refreshServers, ms);
}
let lastSession = null;
let serversAgain = false;
async function refreshServers() {
  if (!me) return;
  if (serversBusy) {
    serversAgain = true;
    return;
  }
  serversBusy = true;
  serversAgain = false;
  try {
    const data = (await api.get('/api/servers')) || {};
    renderServers(data);
    if (Boolean(data.session) !== lastSession) {
      lastSession = Boolean(data.session);
      refreshTools();
    }
  } catch (e) {
    if (e.status !== 401) byTest('session-state').textContent = `Cannot list servers: ${e.message}`;
  } finally {
    serversBusy = false;
    if (serversAgain) refreshServers();
  }
}

function stateClass(state) {
  const s = String(state || '').toLowerCase();
  if (s === 'ready') return 'ok';
  if (s.startsWith('disabled') || s.startsWith('stopped')) return 'idle';
  if (s.includes('fail') || s.includes('error')) return 'bad';
  return 'busy';
}

function renderServers(data) {
  const list = byTest('server-list');
  const open = new Set([...list.querySelectorAll('details[open]')].map((d) => d.dataset.key));
  list.replaceChildren();
  byTest('session-state').textContent = data.session
    ? 'Your session is running.'
    : 'Your servers start with your next turn.';
  const servers = Array.isArray(data.servers) ? data.servers : [];
  if (!servers.length) list.append(h('li', { class: 'muted empty-item', text: 'No servers are available to you.' }));
  for (const s of servers) {
    const v = s.view && typeof s.view === 'object' ? s.view : null;
    const toggle = h('input', { type: 'checkbox', role: 'switch', 'data-testid': 'server-toggle', 'aria-label': `Enable ${s.name}` });
    toggle.checked = Boolean(s.enabled);
    toggle.addEventListener('change', () => setServer(s.name, toggle.checked, toggle));
    // "stopped (starts at your next turn)": the word in the badge, the rest beside it.
    const split = String(s.state || '').match(/^([^()]{1,40}?)\s*\((.+)\)$/);
    const stateWord = split ? split[1] : String(s.state || '');
    const stateDetail = split ? split[2] : '';
    const meta = [];
    if (v) {
      if (v.transport) meta.push(v.transport);
      if (v.era) meta.push(`era ${v.era}`);
      meta.push(plural(Number(v.tools) || 0, 'tool'));
    }
    const details = (key, summary, lines, testid) => {
      const el = h('details', { 'data-key': `${s.name}:${key}`, 'data-testid': testid }, h('summary', { text: summary }), h('pre', { class: 'code-block small', text: lines.join('\n') }));
      if (open.has(`${s.name}:${key}`)) el.open = true;
      return el;
    };
    const item = h(
      'li',
      { class: 'server', 'data-testid': 'server-row', 'data-server': s.name, 'data-state': s.state },
      h(
        'div',
        { class: 'server-head' },
        h('span', { class: 'server-name', text: s.name }),
        h('span', { class: `badge ${stateClass(s.state)}`, 'data-testid': 'server-state', title: String(s.state), text: stateWord }),
        h('span', { class: 'spacer' }),
        h('label', { class: 'switch', title: s.enabled ? 'Enabled' : 'Disabled' }, toggle, h('span', { class: 'slider', 'aria-hidden': 'true' })),
      ),
      stateDetail ? h('div', { class: 'muted small-text', text: stateDetail }) : null,
      meta.length ? h('div', { class: 'muted small-text', 'data-testid': 'server-meta', text: meta.join(' · ') }) : null,
      v && v.sandbox && v.sandbox.length
        ? h('ul', { class: 'sandbox', 'data-testid': 'server-sandbox' }, v.sandbox.map((line) => h('li', { text: line })))
        : null,
      v && v.last_error ? h('p', { class: 'error small-text', 'data-testid': 'server-error', text: v.last_error }) : null,
      remoteSignin(s, v),
      v && v.stderr_tail && v.stderr_tail.length ? details('stderr', `stderr (last ${v.stderr_tail.length} lines)`, v.stderr_tail, 'server-stderr') : null,
      v && v.notes && v.notes.length ? details('notes', plural(v.notes.length, 'note'), v.notes, 'server-notes') : null,
    );
    list.append(item);
  }
}

/** Remote servers' sign-ins started from this page: name → {url} or {error} or {done}. */
const signins = new Map();

/** A remote server (or one that says it needs auth) can be signed in to from here. */
function remoteSignin(s, v) {
  const needsAuth = /auth/i.test(String(s.state || '')) || (v && /auth/i.test(String(v.state || '')));
  const remote = v && v.transport && v.transport !== 'stdio';
  if (!s.enabled || !(needsAuth || remote)) return null;
  const box = h('div', { class: 'signin-box', 'data-testid': 'server-signin-box' });
  const started = signins.get(s.name);
  const button = h('button', {
    type: 'button',
    class: needsAuth ? 'primary small' : 'small',
    'data-testid': 'server-signin',
    text: needsAuth ? 'Sign in' : 'Sign in again',
    onclick: () => signInServer(s.name, button),
  });
  box.append(button);
  if (started && started.url) {
    const u = safeHttpUrl(started.url);
    if (u) {
      box.append(
        h('p', { class: 'small-text' }, 'Continue at ', h('strong', { text: u.host }), ': ',
          h('a', { href: u.href, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'server-signin-link', text: 'open the sign-in page' }),
          '. The server connects with it at your next turn.'),
      );
    } else {
      box.append(h('p', { class: 'error small-text', text: 'The server named a sign-in address that is not http(s); it is not shown.' }));
    }
  } else if (started && started.done) {
    box.append(h('p', { class: 'small-text', text: 'Signed in: the server connects at your next turn.' }));
  } else if (started && started.error) {
    box.append(h('p', { class: 'error small-text', text: started.error }));
  }
  return box;
}

async function signInServer(name, button) {
  button.disabled = true;
  try {
    const res = (await api.post(`/api/servers/${encodeURIComponent(name)}/signin`, {})) || {};
    signins.set(name, typeof res.url === 'string' ? { url: res.url } : { done: true });
  } catch (e) {
    signins.set(name, { error: `Cannot sign in to ${name}: ${e.message}` });
  }
  await refreshServers();
}

async function setServer(name, enabled, toggle) {
  toggle.disabled = true;
  try {
    await api.put(`/api/servers/${encodeURIComponent(name)}`, { enabled });
  } catch (e) {
    toggle.checked = !enabled;
    byTest('session-state').textContent = `Cannot ${enabled ? 'enable' : 'disable'} ${name}: ${e.message}`;
  } finally {
    toggle.disabled = false;
  }
  await refreshServers();
  refreshTools();
}

async function refreshTools() {
  const q = byTest('tool-search').value.trim();
  const list = byTest('tool-list');
  let tools;
  try {
    tools = (await api.get(`/api/tools?q=${encodeURIComponent(q)}`)) || [];
    // A search answers ranked hits ({tool, score}); the plain list answers tools.
    tools = tools.map((x) => (x && x.tool ? x.tool : x));
  } catch {
    return;
  }
  list.replaceChildren();
  if (!tools.length) {
    list.append(h('li', { class: 'muted empty-item', text: q ? 'No tool matches.' : 'Tools show once your session runs.' }));
  }
  for (const t of tools.slice(0, 200)) {
    list.append(
      h(
        'li',
        { class: 'tool', 'data-testid': 'tool-item', title: t.description || '' },
        h('div', {}, h('code', { class: 'tool-name', text: t.name }), (t.flags || []).map((f) => h('span', { class: 'flag', text: String(f) }))),
        t.description ? h('div', { class: 'muted small-text clamp', text: t.description }) : null,
      ),
    );
  }
}
