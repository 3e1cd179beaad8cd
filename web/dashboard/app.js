// general-agent dashboard: plain JavaScript, no build step, no outside
// resources. Every text from the agent is put in with textContent, never
// as HTML. The token (when the dashboard needs one) comes from the URL
// fragment (#token=…, which no server sees), is kept in sessionStorage and
// sent as "Authorization: Bearer"; state changes also send X-Dashboard: 1.
'use strict';

const MAX_ROWS = 500; // decisions kept on the page (the oldest go first)
const STATUS_EVERY_MS = 5000;
const RETRY_MS = 2000;

const state = {
  token: null,
  paused: null,
  decisions: [],
  seen: { platform: new Set(), verdict: new Set(), rule: new Set(), stage: new Set() },
  tab: 'decisions',
  convKey: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, opts, ...kids) {
  const e = document.createElement(tag);
  if (opts) {
    if (opts.cls) e.className = opts.cls;
    if (opts.text !== undefined && opts.text !== null) e.textContent = String(opts.text);
    if (opts.title) e.title = opts.title;
    if (opts.data) for (const [k, v] of Object.entries(opts.data)) e.dataset[k] = v;
  }
  for (const k of kids) if (k) e.appendChild(k);
  return e;
}

function td(text, cls) { return el('td', { text: text === undefined ? '' : text, cls }); }

function shortTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleTimeString();
}

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h['Authorization'] = 'Bearer ' + state.token;
  return h;
}

function banner(text) {
  const b = $('banner');
  if (text) { b.textContent = text; b.classList.remove('hidden'); }
  else b.classList.add('hidden');
}

async function api(path, opts) {
  const o = Object.assign({}, opts || {});
  o.headers = headers(o.headers);
  o.cache = 'no-store';
  o.credentials = 'omit';
  const r = await fetch('/api/' + path, o);
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.status === 401) { askToken(); throw new Error('token needed'); }
  if (!r.ok) throw new Error((body && body.error) || ('HTTP ' + r.status));
  return body;
}

function askToken() {
  $('token-form').classList.remove('hidden');
  banner('This dashboard needs its token.');
}

// --- pause / resume ---------------------------------------------------------

function showPaused(p) {
  state.paused = !!p;
  const rs = $('run-state');
  rs.textContent = p ? 'PAUSED' : 'running';
  rs.className = 'pill ' + (p ? 'paused' : 'running');
  const b = $('pause-btn');
  b.disabled = false;
  b.textContent = p ? 'Resume' : 'Pause';
  b.className = p ? 'resume' : 'pause';
  b.dataset.paused = p ? '1' : '0';
}

async function togglePause() {
  const b = $('pause-btn');
  b.disabled = true;
  try {
    const r = await api(state.paused ? 'resume' : 'pause', {
      method: 'POST',
      headers: { 'X-Dashboard': '1', 'Content-Type': 'application/json' },
      body: '{}',
    });
    showPaused(r.paused);
    banner(null);
  } catch (e) {
    banner('Could not change the kill switch: ' + e.message);
    b.disabled = false;
  }
}

// --- decisions ----------------------------------------------------------------

function noteFilterValue(kind, v) {
  if (v === undefined || v === null || state.seen[kind].has(v)) return;
  state.seen[kind].add(v);
  const sel = $('f-' + kind);
  sel.appendChild(el('option', { text: v === '' ? '(none)' : v, data: { v } }));
  sel.lastChild.value = v;
}

function passes(d) {
  for (const k of ['platform', 'verdict', 'rule', 'stage']) {
    const want = $('f-' + k).value;
    if (want !== '' && d[k] !== want) return false;
  }
  return true;
}

function decisionRow(d, fresh) {
  const tr = el('tr', { cls: fresh ? 'fresh' : '', data: { messageId: d.messageId || '' } },
    td(shortTime(d.time)), td(d.platform), td(d.conversation, 'mono'), td(d.messageId, 'mono'),
    td(d.stage), td(d.verdict, 'v-' + d.verdict), td(d.rule, 'mono'), td(d.reason));
  tr.title = d.time;
  tr.addEventListener('click', () => { if (d.messageId) showWhy(d.messageId); });
  if (!passes(d)) tr.classList.add('hidden');
  return tr;
}

function addDecision(d, fresh) {
  state.decisions.push(d);
  for (const k of ['platform', 'verdict', 'rule', 'stage']) noteFilterValue(k, d[k]);
  const body = $('decisions').tBodies[0];
  body.insertBefore(decisionRow(d, fresh), body.firstChild);
  while (state.decisions.length > MAX_ROWS) {
    state.decisions.shift();
    body.removeChild(body.lastChild);
  }
  $('decision-count').textContent = state.decisions.length + ' decision(s) shown, newest first';
}

function refilter() {
  const rows = $('decisions').tBodies[0].rows;
  const n = state.decisions.length;
  for (let i = 0; i < rows.length; i++) {
    const d = state.decisions[n - 1 - i];
    rows[i].classList.toggle('hidden', !passes(d));
  }
}

async function showWhy(id) {
  $('why').classList.remove('hidden');
  $('why-id').textContent = id;
  const steps = $('why-steps');
  steps.replaceChildren();
  $('why-message').replaceChildren();
  try {
    const w = await api('why/' + encodeURIComponent(id));
    if (w.message) $('why-message').appendChild(messageBox(w.message));
    if (w.olderLeftOut) steps.appendChild(el('li', { cls: 'muted', text: w.olderLeftOut + ' older step(s) left out' }));
    for (const s of w.decisions) {
      steps.appendChild(el('li', null,
        el('span', { cls: 'v-' + s.verdict, text: s.stage + ' → ' + s.verdict }),
        el('span', { cls: 'mono', text: '  ' + (s.rule || '') }),
        el('div', { text: s.reason }),
        el('div', { cls: 'muted', text: s.time })));
    }
    if (!w.decisions.length) steps.appendChild(el('li', { cls: 'muted', text: 'no decision recorded about this message' }));
  } catch (e) {
    steps.appendChild(el('li', { cls: 'v-block', text: e.message }));
  }
}

// --- the live stream (fetch, so the token can go in a header) ----------------

function handleEvent(name, data) {
  let v;
  try { v = JSON.parse(data); } catch (e) { return; }
  if (name === 'decision') addDecision(v, true);
  else if (name === 'paused') showPaused(v.paused);
}

async function stream() {
  for (;;) {
    try {
      const r = await fetch('/api/events', { headers: headers(), cache: 'no-store', credentials: 'omit' });
      if (r.status === 401) { askToken(); return; }
      if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
      // A reconnect sends the backlog again: start from an empty table.
      state.decisions = [];
      $('decisions').tBodies[0].replaceChildren();
      $('live-state').textContent = 'live';
      $('live-state').className = 'pill live';
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let name = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data) handleEvent(name, data);
        }
      }
    } catch (e) { /* retried below */ }
    $('live-state').textContent = 'reconnecting';
    $('live-state').className = 'pill off';
    await new Promise((res) => setTimeout(res, RETRY_MS));
  }
}

// --- status ---------------------------------------------------------------------

function fmtDuration(ms) {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + 'd ' : '') + (h || d ? h + 'h ' : '') + m + 'm ' + (s % 60) + 's';
}

function card(label, value) {
  return el('div', { cls: 'card' }, el('b', { text: value }), el('span', { text: label }));
}

const STATUS_SHOWN = ['agent', 'paused', 'uptimeMs', 'startedAt', 'features', 'lastActivityBy', 'jobs', 'now', 'dashboard', 'jobsInFlight', 'tokenBudget', 'services'];

// --- services' rate budgets (cmd/services.h: "services": {name: {...}}) ------------
// The shapes are the services' own and not final, so nothing here knows a
// service: an object with numeric "remaining" and "limit" is a rate budget
// (with its reset: "reset", "resetMs", "resetAt", "resetsAt", seconds or
// milliseconds since the epoch or an ISO time); every other number is listed
// by its name; the rest is shown as short text.

const fmtNum = (n) => (Number.isInteger(n) ? n.toLocaleString('en') : String(n));

function isBudget(v) {
  return v && typeof v === 'object' && !Array.isArray(v) &&
    typeof v.remaining === 'number' && typeof v.limit === 'number';
}

// A reset time in epoch milliseconds, or null.
function resetMs(b) {
  for (const k of ['resetMs', 'resetAt', 'resetsAt', 'reset', 'resetAtMs']) {
    const v = b[k];
    if (typeof v === 'number' && v > 0) return v > 1e12 ? v : v * 1000;
    if (typeof v === 'string') { const t = Date.parse(v); if (!isNaN(t)) return t; }
  }
  return null;
}

function fmtBudget(b) {
  let t = fmtNum(b.remaining) + ' / ' + fmtNum(b.limit);
  const r = resetMs(b);
  if (r !== null) {
    const left = r - Date.now();
    t += left > 0 ? ' · resets in ' + fmtDuration(left) : ' · reset due';
  }
  return t;
}

// [label, budget] pairs of a service's status: the object itself or any
// object inside it (three levels deep), labelled by its path without the
// words that only say "rate" (github.rateBudget → "github",
// bluesky.limits.createRecord → "bluesky limits createRecord").
function budgetsOf(label, v, out = [], depth = 0) {
  if (isBudget(v)) { out.push([label, v]); return out; }
  if (!v || typeof v !== 'object' || Array.isArray(v) || depth > 3) return out;
  for (const [k, x] of Object.entries(v))
    budgetsOf(/^rate(budget|limit|limits)?$/i.test(k) ? label : label + ' ' + k, x, out, depth + 1);
  return out;
}

function numbersOf(svc, prefix, out) {
  for (const [k, v] of Object.entries(svc || {})) {
    if (typeof v === 'number') out.push(prefix + k + ' ' + fmtNum(v));
    else if (v && typeof v === 'object' && !Array.isArray(v) && !isBudget(v)) numbersOf(v, prefix + k + '.', out);
  }
  return out;
}

function othersOf(svc) {
  const out = [];
  for (const [k, v] of Object.entries(svc || {})) {
    if (v === null) out.push(k + ': none');
    else if (typeof v === 'string') out.push(k + ': ' + (v.length > 120 ? v.slice(0, 120) + '…' : v));
    else if (typeof v === 'boolean') out.push(k + ': ' + (v ? 'yes' : 'no'));
    else if (Array.isArray(v)) out.push(k + ': ' + v.length + ' item(s)');
  }
  return out;
}

function renderServices(services) {
  const tb = $('services').tBodies[0];
  tb.replaceChildren();
  const names = Object.keys(services || {});
  $('services-none').classList.toggle('hidden', names.length > 0);
  const cards = [];
  for (const n of names) {
    const svc = services[n];
    const budgets = (svc && typeof svc === 'object') ? budgetsOf(n, svc) : [];
    for (const [label, b] of budgets) {
      const low = b.limit > 0 && b.remaining / b.limit < 0.1;
      const c = card(label + ' rate budget', fmtBudget(b));
      if (low) c.classList.add('low');
      cards.push(c);
    }
    const obj = (svc && typeof svc === 'object') ? svc : {};
    tb.appendChild(el('tr', { data: { service: n } }, td(n),
      td(budgets.length ? budgets.map(([l, b]) => (l === n ? '' : l.slice(n.length + 1) + ': ') + fmtBudget(b)).join('; ') : 'not reported'),
      td(numbersOf(obj, '', []).join(' · ')),
      td(svc === null ? 'no status' : othersOf(obj).join(' · '))));
  }
  return cards;
}

async function loadStatus() {
  const s = await api('status');
  $('agent-name').textContent = s.agent;
  document.title = s.agent + ' — dashboard';
  if (typeof s.paused === 'boolean') showPaused(s.paused);
  if (state.tab !== 'status') return;
  const cards = $('status-cards');
  cards.replaceChildren(...[
    card('state', s.paused ? 'PAUSED' : (s.state || 'running')),
    card('mode', s.socialOnly ? 'social only' : (s.mode || 'full')),
    card('uptime', s.uptimeMs ? fmtDuration(s.uptimeMs) : '?'),
    card('messages in flight', s.jobsInFlight === undefined ? '?' : s.jobsInFlight),
    s.tokenBudget ? card('model tokens today' + (s.tokenBudget.dailyLimit ? ' of ' + s.tokenBudget.dailyLimit.toLocaleString('en') : ' (no budget)'),
      s.tokenBudget.totalTokens.toLocaleString('en') + ' · ' + s.tokenBudget.calls + ' call(s)' +
      (s.tokenBudget.denied ? ' · ' + s.tokenBudget.denied + ' refused' : '')) : null,
    ...renderServices(s.services),
    card('live streams', s.dashboard.sseClients + ' / ' + s.dashboard.sseMax),
    card('slow streams dropped', s.dashboard.sseDropped)].filter(Boolean));
  const pb = $('platforms').tBodies[0];
  pb.replaceChildren();
  const feats = s.features || {};
  const last = s.lastActivityBy || {};
  const names = new Set(Object.keys(feats).concat(Object.keys(last)));
  for (const n of names) {
    const f = feats[n] || {};
    pb.appendChild(el('tr', null, td(n), td(f.enabled === undefined ? '' : (f.enabled ? 'yes' : 'no'),
      f.enabled ? 'v-pass' : 'v-block'), td(f.detail || ''), td(last[n] ? shortTime(last[n]) : '')));
  }
  const jb = $('jobs').tBodies[0];
  jb.replaceChildren();
  for (const j of s.jobs || [])
    jb.appendChild(el('tr', null, td(j.name), td(j.intervalMs ? fmtDuration(j.intervalMs) : 'once'),
      td(j.runs), td(j.skipped), td(j.running ? 'yes' : '')));
  const rest = {};
  for (const [k, v] of Object.entries(s)) if (!STATUS_SHOWN.includes(k)) rest[k] = v;
  $('status-raw').textContent = JSON.stringify(rest, null, 2);
}

// --- conversations -------------------------------------------------------------

function messageBox(m) {
  const bot = m.isBot;
  const text = m.text !== undefined ? m.text : (m.textHex ? '(bytes) ' + m.textHex : '');
  return el('div', { cls: 'msg ' + (bot ? 'bot' : 'person') },
    el('div', null, el('span', { cls: 'who', text: m.authorName || m.authorId || '?' }),
      el('span', { cls: 'meta', text: '  ' + (m.authorKind || '') + (bot ? ' · bot' : '') +
        ' · chain ' + m.chain + (m.answered ? ' · answered' : '') + ' · ' +
        shortTime(m.time || (m.timeMs ? new Date(m.timeMs).toISOString() : '')) })),
    el('div', { cls: 'text', text }),
    el('div', { cls: 'meta mono', text: (m.id || m.messageId || '') + (m.parentId ? ' ↩ ' + m.parentId : '') }));
}

async function loadConversations() {
  const list = await api('conversations');
  const ul = $('conversation-list');
  ul.replaceChildren();
  for (const c of list) {
    const li = el('li', { cls: c.key === state.convKey ? 'sel' : '' },
      el('div', { cls: 'mono', text: c.key }),
      el('div', { cls: 'muted', text: c.messages + ' message(s) · ' + shortTime(c.last) }));
    li.addEventListener('click', () => { state.convKey = c.key; loadConversations(); });
    ul.appendChild(li);
  }
  if (!list.length) ul.appendChild(el('li', { cls: 'muted', text: 'no conversation yet' }));
  const view = $('conversation-view');
  if (!state.convKey) return;
  const c = await api('conversations/' + encodeURIComponent(state.convKey));
  view.replaceChildren(el('h2', { cls: 'mono', text: c.key }));
  for (const m of c.messages || []) view.appendChild(messageBox(m));
}

// --- commitments, permissions ------------------------------------------------------

async function loadCommitments() {
  const list = await api('commitments');
  const tb = $('commitments').tBodies[0];
  tb.replaceChildren();
  for (const c of list.slice().reverse()) {
    const art = td('');
    if (c.artifact) {
      const a = el('a', { text: c.artifact });
      a.href = c.artifact; a.rel = 'noopener noreferrer'; a.target = '_blank';
      art.appendChild(a);
    }
    tb.appendChild(el('tr', { title: c.id }, td(shortTime(c.createdAt)), td(c.action, 'mono'), td(c.source),
      td(c.status, c.open ? 'v-react' : (c.status === 'completed' ? 'v-pass' : 'v-block')),
      td(c.attempts), art, td(c.error || '')));
  }
  if (!list.length) tb.appendChild(el('tr', null, td('no commitment yet', 'muted')));
}

async function loadPermissions() {
  const p = await api('permissions');
  $('perm-mode').replaceChildren(...[card('mode', p.mode),
    p.broken ? card('BROKEN: every send is denied', p.broken) : null].filter(Boolean));
  for (const [id, arr] of [['perm-allow', p.allowlist], ['perm-deny', p.denylist]]) {
    const ul = $(id);
    ul.replaceChildren();
    for (const pat of arr) ul.appendChild(el('li', { cls: 'mono', text: pat }));
    if (!arr.length) ul.appendChild(el('li', { cls: 'muted', text: 'none' }));
  }
  const tb = $('audit').tBodies[0];
  tb.replaceChildren();
  for (const a of p.audit.slice().reverse())
    tb.appendChild(el('tr', null, td(shortTime(a.time)), td(a.source), td(a.target, 'mono'),
      td(a.verdict, a.verdict === 'allow' ? 'v-pass' : 'v-block'), td(a.pattern || '', 'mono'), td(a.reason)));
}

// --- plans (services.workspace: modules/workspace ws_status) ------------------------

function link(text, href) {
  const a = el('a', { text });
  if (/^https:\/\/github\.com\//.test(href || '')) {
    a.href = href; a.rel = 'noopener noreferrer'; a.target = '_blank';
  }
  return a;
}

const TASK_CLASS = { completed: 'v-pass', in_progress: 'v-info', claimed: 'v-react', blocked: 'v-block', pending: 'muted' };

// Pull requests (w.pulls: modules/workspace, wsp_status): the state in the
// words `general-agent status` uses, who is expected to act next, since when.
const PULL_STATES = {
  awaiting_review: ['awaiting review', 'v-info'], changes_requested: ['changes requested', 'v-react'],
  revising: ['revising', 'v-react'], approved: ['approved', 'v-pass'], merging: ['merging', 'v-pass'],
  conflict: ['merge conflict', 'v-block'], rebuilding: ['rebuilding after a conflict', 'v-react'],
  merged: ['merged', 'v-pass'], closed: ['closed', 'muted'], owner: ['left to the owner', 'v-block'],
};

function ageText(ms) {
  const min = Math.floor(ms / 60000);
  if (min < 60) return min + ' min';
  if (min < 1440) return Math.floor(min / 60) + ' h ' + (min % 60) + ' min';
  return Math.floor(min / 1440) + ' d ' + (Math.floor(min / 60) % 24) + ' h';
}

// One pull request as the texts of its row's cells (pure: the table and
// its test read the same).
function pullCells(p, now) {
  const [state, cls] = PULL_STATES[p.state] || [String(p.state || '?'), ''];
  let since = '';
  if (p.since_ms > 0) {
    since = shortTime(new Date(p.since_ms).toISOString());
    if (now > p.since_ms) since += ' (' + ageText(now - p.since_ms) + ')';
  }
  return {
    ref: p.repo + '#' + p.number, state, cls, since,
    // "owner" stands for the owner whose login is unknown (OWNER_GITHUB_USERNAME unset)
    next: !p.next || p.state === 'merged' || p.state === 'closed' ? ''
      : p.next === 'owner' ? 'the owner' : '@' + p.next,
    where: (p.plan ? 'plan #' + p.plan : '') + (p.task ? ' · task ' + p.task : ''),
    revisions: p.revisions > 0 ? String(p.revisions) : '',
    who: (p.author ? '@' + p.author : '') + (p.reviewer ? ' → @' + p.reviewer : ''),
  };
}

function renderPulls(w) {
  const tb = $('pulls').tBodies[0];
  tb.replaceChildren();
  const now = Date.now();
  for (const p of w.pulls || []) {
    if (!p || !p.repo || !(p.number > 0)) continue;
    const c = pullCells(p, now);
    const ref = el('td', null, link(c.ref, p.url));
    if (p.title) ref.appendChild(el('span', { cls: 'muted', text: ' ' + p.title }));
    tb.appendChild(el('tr', { data: { pull: p.repo + '#' + p.number } }, ref, td(c.state, c.cls),
      td(c.next), td(c.since), td(c.where), td(c.revisions), td(c.who)));
  }
  if (w.pullsDropped > 0) tb.appendChild(el('tr', null, td(w.pullsDropped + ' more not listed', 'muted')));
  if (!tb.rows.length) tb.appendChild(el('tr', null, td('no open pull request', 'muted')));
}

async function loadPlans() {
  const s = await api('status');
  const w = (s.services || {}).workspace;
  $('plans-off').classList.toggle('hidden', !!w);
  if (!w) { $('plans-cards').replaceChildren(); $('plans-list').replaceChildren(); $('pulls').tBodies[0].replaceChildren(); return; }
  const t = w.task;
  $('plans-cards').replaceChildren(...[
    card('task in progress', t ? 'Task ' + t.task + ' of ' + t.repo + '#' + t.plan + ' — ' + t.phase : 'none'),
    t ? card('attempt ' + t.attempt + (t.resumed ? ' (resumed)' : ''), t.title) : null,
    card('claims won / lost', (w.counters.claimsWon || 0) + ' / ' + (w.counters.claimsLost || 0)),
    card('pull requests opened', w.counters.prs || 0),
    card('last cycle: GitHub requests (not modified)', w.lastCycle.requests + ' (' + w.lastCycle.notModified + ')'),
    w.coder ? card('no task work', w.coder) : null].filter(Boolean));
  const list = $('plans-list');
  list.replaceChildren();
  for (const p of w.plans || []) {
    const h = el('h2', null, link(p.repo + '#' + p.number + ' ' + p.title, p.url),
      el('span', { cls: 'muted', text: '  ' + p.completed + ' of ' + p.total + ' completed · ' + p.inProgress + ' in progress · ' + p.blocked + ' blocked' }));
    const tb = el('tbody');
    for (const k of p.tasks || []) {
      const pr = td('');
      if (k.prUrl) pr.appendChild(link('#' + k.pr, k.prUrl));
      tb.appendChild(el('tr', null, td(k.number), td(k.title), td(k.status, TASK_CLASS[k.status] || ''),
        td(k.assignee ? '@' + k.assignee : ''), pr, td(k.attempt ? k.attempt + (k.failures ? ' (' + k.failures + ' failed)' : '') : '')));
    }
    const table = el('table', { cls: 'plan' },
      el('thead', null, el('tr', null, el('th', { text: 'Task' }), el('th', { text: 'Title' }), el('th', { text: 'Status' }),
        el('th', { text: 'Assignee' }), el('th', { text: 'Pull request' }), el('th', { text: 'Attempt' }))), tb);
    list.append(h, table);
  }
  if (!(w.plans || []).length) list.appendChild(el('p', { cls: 'muted', text: 'No open plan in the watched workspaces.' }));
  renderPulls(w);
  const wb = $('workspaces').tBodies[0];
  wb.replaceChildren();
  for (const x of w.watched || [])
    wb.appendChild(el('tr', null, el('td', null, link(x.repo, x.url)), td(x.source),
      td(x.polledMs ? shortTime(new Date(x.polledMs).toISOString()) : 'not yet')));
  if (!(w.watched || []).length) wb.appendChild(el('tr', null, td('none watched', 'muted')));
}

// --- tabs and start --------------------------------------------------------------

const LOADERS = { status: loadStatus, conversations: loadConversations, commitments: loadCommitments, plans: loadPlans, permissions: loadPermissions };

function showTab(name) {
  state.tab = name;
  for (const b of document.querySelectorAll('nav button')) b.classList.toggle('active', b.dataset.tab === name);
  for (const s of document.querySelectorAll('section.tab')) s.classList.toggle('hidden', s.id !== 'tab-' + name);
  refresh();
}

async function refresh() {
  try {
    await loadStatus();
    if (LOADERS[state.tab] && state.tab !== 'status') await LOADERS[state.tab]();
    banner(null);
  } catch (e) {
    if (e.message !== 'token needed') banner('The agent does not answer: ' + e.message);
  }
}

function start() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem('dashboardToken', decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname); // the token leaves the address bar
  }
  state.token = sessionStorage.getItem('dashboardToken');
  for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => showTab(b.dataset.tab));
  for (const k of ['platform', 'verdict', 'rule', 'stage']) $('f-' + k).addEventListener('change', refilter);
  $('pause-btn').addEventListener('click', togglePause);
  $('why-close').addEventListener('click', () => $('why').classList.add('hidden'));
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.token = $('token-input').value;
    sessionStorage.setItem('dashboardToken', state.token);
    $('token-input').value = '';
    $('token-form').classList.add('hidden');
    refresh();
    stream();
  });
  refresh();
  stream();
  setInterval(refresh, STATUS_EVERY_MS);
}

document.addEventListener('DOMContentLoaded', start);
