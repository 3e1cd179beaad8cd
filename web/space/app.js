// agent-space's read-only web page (space/web.h, docs/space-web.md).
// One Server-Sent Events stream, /api/events: a "room" snapshot first (and
// again after every reconnect), then the room as it happens. Nothing here
// sends anything to the room: the page only reads. Every text from the room
// is put into the page with textContent, never as HTML — above all the
// members' identities, reflections and workspace states (a "profile" per
// member, space/web_state.h), which are whatever a peer chose to send.
'use strict';

const TYPING_SHOW_MS = 5000;  // a "typing" shows this long after the last one
const CHAT_MAX_ITEMS = 500;   // lines kept on the page (oldest removed)
const FEED_TYPES = ['chat', 'join', 'leave', 'claim', 'action_result', 'reflection', 'shutdown'];

const $ = (id) => document.getElementById(id);
const state = { members: [], claims: [], profiles: new Map(), plans: new Map(), skewMs: 0, room: null };
// The identity's nominal fields (space-protocol.md §2.2), in the order shown.
const IDENTITY_FIELDS = [
  ['coreValues', 'values'], ['currentInterests', 'interests'], ['expertise', 'expertise'],
  ['voice', 'voice'], ['recentWork', 'recent work'],
];

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function serverNow() { return Date.now() + state.skewMs; }

function noteNow(iso) {
  const t = Date.parse(iso);
  if (!Number.isNaN(t)) state.skewMs = t - Date.now();
}

function timeOf(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '' : new Date(t).toLocaleTimeString();
}

function showText(v) {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

// --- the chat column ------------------------------------------------------------

function feedItem(m) {
  const li = el('li', '');
  li.dataset.type = m.type;
  if (m.name) li.dataset.name = m.name;
  if (m.timestamp || m.at) li.title = m.timestamp || m.at;
  if (m.type === 'chat') {
    li.className = 'chat ' + (m.name === 'host' ? 'host' : 'agent');
    const head = el('div', 'head');
    head.append(el('span', 'who', m.name), el('span', 'meta', timeOf(m.timestamp)));
    if (Number.isInteger(m.chain)) {
      const b = el('span', 'badge chain' + (m.chain >= 3 ? ' high' : ''), 'chain ' + m.chain);
      b.title = 'agent chain length (messages since a human spoke)';
      head.append(b);
    }
    if (m.threadId !== undefined) head.append(el('span', 'badge', 'thread ' + showText(m.threadId)));
    if (Array.isArray(m.addressed) && m.addressed.length)
      head.append(el('span', 'badge addressed', '→ ' + m.addressed.join(', ')));
    if (m.cut) head.append(el('span', 'badge cut', 'cut'));
    li.append(head, el('div', 'text', m.content));
    return li;
  }
  li.className = 'event ' + m.type;
  let text;
  switch (m.type) {
  case 'join': text = `${m.name} joined${m.version ? ' (' + m.version + ')' : ''}`; break;
  case 'leave': text = `${m.name} left`; break;
  case 'claim':
    text = `${m.name} claimed ${m.action} ${m.target}`;
    // "since": the owner held it before the room lost it (it left and
    // rejoined): the claim's own time, not this line's
    if (m.since && timeOf(m.since)) {
      text += ` — held since ${timeOf(m.since)}, re-claimed after a rejoin`;
      li.title = `held by ${m.name} since ${m.since}; the room had forgotten the claim ` +
        '(its owner left and came back, or it lapsed) and was told when it was taken';
    }
    break;
  case 'action_result':
    text = `${m.name}: ${m.action} ${m.target} ${m.success ? 'succeeded' : 'failed'}` +
      (m.link ? ' — ' + m.link : '') + (m.error ? ' — ' + m.error : '');
    break;
  case 'reflection': text = `${m.name} reflects: ${m.summary}`; break;
  case 'shutdown': text = `the room is shutting down (${m.reason || ''})`; break;
  default: text = m.type;
  }
  const when = timeOf(m.timestamp || m.at);
  li.textContent = when ? `${when} · ${text}` : text;
  return li;
}

function addFeed(m, fresh) {
  const list = $('chat');
  const li = feedItem(m);
  if (fresh) li.classList.add('fresh');
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 40;
  list.append(li);
  while (list.children.length > CHAT_MAX_ITEMS) list.firstElementChild.remove();
  $('chat-empty').classList.toggle('hidden', list.children.length > 0);
  if (atBottom) list.scrollTop = list.scrollHeight;
}

// --- members and claims ---------------------------------------------------------------

function listText(v) {
  return Array.isArray(v) ? v.map(showText).join(', ') : showText(v);
}

// "label: value" lines of an identity summary, nominal fields first; an
// array summary (the room lets it pass) is one line of its items.
function identityLines(summary) {
  if (Array.isArray(summary)) return [listText(summary)];
  if (!summary || typeof summary !== 'object') return [];
  const lines = [];
  if (summary.soulEssence !== undefined) lines.push(showText(summary.soulEssence));
  for (const [key, label] of IDENTITY_FIELDS)
    if (summary[key] !== undefined) lines.push(`${label}: ${listText(summary[key])}`);
  const known = new Set(['soulEssence', ...IDENTITY_FIELDS.map((f) => f[0])]);
  for (const key of Object.keys(summary))
    if (!known.has(key)) lines.push(`${key}: ${listText(summary[key])}`);
  return lines;
}

function cutBadge(o) {
  const b = el('span', 'badge cut', 'cut');
  b.title = 'shortened for this page; the room relays it whole';
  return o && o.cut ? b : null;
}

// A member's card beyond presence: identity, last reflection, last
// workspace state. The same lines go into the card's tooltip.
function profileParts(p) {
  const parts = [];
  const tip = [];
  if (p.identity) {
    const box = el('div', 'identity');
    box.dataset.role = 'identity';
    const lines = identityLines(p.identity.summary);
    const essence = p.identity.summary && !Array.isArray(p.identity.summary) &&
      p.identity.summary.soulEssence !== undefined;
    lines.forEach((line, i) => box.append(el('div', i === 0 && essence ? 'essence' : 'fact', line)));
    const cut = cutBadge(p.identity);
    if (cut) box.append(cut);
    box.title = `identity, ${timeOf(p.identity.at)}`;
    parts.push(box);
    tip.push(...lines);
  }
  if (p.reflection) {
    const r = el('div', 'reflection');
    r.dataset.role = 'reflection';
    r.append(el('span', 'label', 'reflects '), el('span', 'text', p.reflection.summary));
    const cut = cutBadge(p.reflection);
    if (cut) r.append(cut);
    r.title = `last reflection, ${timeOf(p.reflection.at)}`;
    parts.push(r);
    tip.push('reflects: ' + showText(p.reflection.summary));
  }
  if (p.workspaceState) {
    const w = p.workspaceState;
    const text = `${showText(w.workspace)} · plan ${w.planNumber} · ${w.completedTasks}/${w.totalTasks} done` +
      (w.blockedTasks ? ` · ${w.blockedTasks} blocked` : '') +
      (w.inProgressTasks ? ` · ${w.inProgressTasks} in progress` : '');
    const d = el('div', 'workspace', text);
    d.dataset.role = 'workspace';
    const cut = cutBadge(w);
    if (cut) d.append(cut);
    d.title = `last workspace state, ${timeOf(w.at)}`;
    parts.push(d);
    tip.push('workspace: ' + text);
    if (Array.isArray(w.tasks) && w.tasks.length) {
      const ul = el('ul', 'tasks');
      ul.dataset.role = 'tasks';
      for (const t of w.tasks) {
        const li = el('li', 'task' + (/^[a-z_]+$/.test(t.status || '') ? ' ' + t.status : ''),
          `Task ${t.number}: ${showText(t.title || '')} — ${showText(t.status || '?')}` +
          (t.assignee ? ` @${showText(t.assignee)}` : ''));
        if (t.prUrl && /^https:\/\/github\.com\//.test(t.prUrl)) {
          const a = document.createElement('a');
          a.textContent = ` #${t.pr}`;
          a.href = t.prUrl;
          a.rel = 'noopener noreferrer';
          a.target = '_blank';
          li.append(a);
        }
        ul.append(li);
      }
      parts.push(ul);
    }
    if (Array.isArray(w.pulls) && w.pulls.length) {
      const ul = el('ul', 'pulls');
      ul.dataset.role = 'pulls';
      for (const pr of w.pulls) {
        const li = pullItem(pr);
        ul.append(li);
        tip.push(li.textContent);
      }
      parts.push(ul);
    }
  }
  return { parts, tip };
}

// A pull request's state as the room's page says it (the same words as
// `general-agent status`).
const PULL_STATES = {
  awaiting_review: 'awaiting review', changes_requested: 'changes requested', revising: 'revising',
  approved: 'approved', merging: 'merging', conflict: 'merge conflict',
  rebuilding: 'rebuilding after a conflict', merged: 'merged', closed: 'closed', owner: 'left to the owner',
};

function minutesText(ms) {
  const min = Math.floor(ms / 60000);
  if (min < 60) return `${min} min`;
  if (min < 24 * 60) return `${Math.floor(min / 60)} h ${min % 60} min`;
  return `${Math.floor(min / 1440)} d ${Math.floor(min / 60) % 24} h`;
}

// One pull request as a list item: its reference (a link only to GitHub)
// and what pullText says of it; the title in the tooltip.
function pullItem(pr) {
  const li = el('li', 'pull' + (/^[a-z_]+$/.test(pr.state || '') ? ' ' + pr.state : ''));
  li.dataset.pull = String(pr.number);
  const ref = `${showText(pr.repo || '')}#${pr.number}`;
  if (pr.url && /^https:\/\/github\.com\//.test(pr.url)) {
    const a = document.createElement('a');
    a.textContent = ref;
    a.href = pr.url;
    a.rel = 'noopener noreferrer';
    a.target = '_blank';
    li.append(a);
  } else {
    li.append(el('span', 'ref', ref));
  }
  li.append(el('span', 'text', pullText(pr, serverNow())));
  if (pr.title) li.title = showText(pr.title);
  return li;
}

// The latest report of each plan's pull requests, whoever sent it (the
// snapshot's "plans", then "plan" events), newest last in the map.
const PLANS_MAX = 16;

function planKey(p) { return `${p.workspace}#${p.planNumber}`; }

function notePlan(p) {
  state.plans.delete(planKey(p));
  if (Array.isArray(p.pulls) && p.pulls.length) state.plans.set(planKey(p), p);
  while (state.plans.size > PLANS_MAX) state.plans.delete(state.plans.keys().next().value);
}

function renderPlans() {
  const box = $('plans');
  box.replaceChildren();
  const plans = [...state.plans.values()].reverse();
  for (const p of plans) {
    const sec = el('div', 'plan');
    sec.dataset.plan = planKey(p);
    const head = el('div', 'plan-head', `${showText(p.workspace)} · plan ${p.planNumber}`);
    head.append(el('span', 'meta', ` reported by ${showText(p.reporter)}, ${timeOf(p.at)}`));
    if (p.cut) head.append(cutBadge(p));
    const ul = el('ul', 'pulls');
    for (const pr of p.pulls) ul.append(pullItem(pr));
    sec.append(head, ul);
    box.append(sec);
  }
  $('plans-empty').classList.toggle('hidden', plans.length > 0);
}

// " awaiting review — bob to act, since 14:02 (38 min), 1 revision · task 3 · by ada"
function pullText(pr, now) {
  let t = ' ' + (PULL_STATES[pr.state] || showText(pr.state));
  const done = pr.state === 'merged' || pr.state === 'closed';
  if (pr.next && !done) t += ` — ${showText(pr.next)} to act`;
  const since = Date.parse(pr.since);
  if (!Number.isNaN(since)) {
    t += (pr.next && !done ? ', since ' : ' since ') + timeOf(pr.since);
    if (now > since) t += ` (${minutesText(now - since)})`;
  }
  if (pr.revisions > 0) t += `, ${pr.revisions} revision${pr.revisions === 1 ? '' : 's'}`;
  if (pr.task) t += ` · task ${pr.task}`;
  if (pr.author) t += ` · by ${showText(pr.author)}`;
  return t;
}

function profileOf(m) {
  const p = state.profiles.get(m.name);
  return p && p.id === m.id ? p : null; // a returning name starts without
}

function renderMembers() {
  const ul = $('members');
  ul.replaceChildren();
  const now = serverNow();
  for (const m of state.members) {
    const li = el('li', 'member');
    li.dataset.name = m.name;
    const head = el('div', 'head');
    head.append(el('span', 'who', m.name), el('span', 'meta', m.version ? 'v' + m.version : ''));
    const st = el('span', 'state ' + (m.state || 'unknown'), m.state || 'no state yet');
    st.dataset.role = 'state';
    head.append(' ', st);
    const typing = m.typingAt && now - Date.parse(m.typingAt) < TYPING_SHOW_MS;
    if (typing) head.append(el('span', 'typing', 'typing…'));
    li.append(head);
    if (m.detail !== undefined) li.append(el('div', 'detail', showText(m.detail)));
    const p = profileOf(m);
    if (p) {
      const { parts, tip } = profileParts(p);
      li.append(...parts);
      li.title = [`${m.name} (${m.id})`, ...tip].join('\n');
    }
    li.append(el('div', 'meta', `joined ${timeOf(m.joinedAt)} · last seen ${timeOf(m.lastSeen)}`));
    ul.append(li);
  }
  $('members-empty').classList.toggle('hidden', state.members.length > 0);
  const n = state.members.length;
  $('member-count').textContent = `${n} member${n === 1 ? '' : 's'}`;
}

function renderClaims() {
  const tb = document.querySelector('#claims tbody');
  tb.replaceChildren();
  const now = serverNow();
  const live = state.claims.filter((c) => Date.parse(c.expiresAt) > now);
  for (const c of live) {
    const tr = el('tr');
    tr.dataset.owner = c.owner;
    const left = Math.max(0, Math.round((Date.parse(c.expiresAt) - now) / 1000));
    const since = el('td', 'muted', c.since ? `since ${timeOf(c.since)}` : '');
    since.dataset.role = 'since';
    if (c.since) since.title = c.since;
    tr.append(el('td', '', c.action), el('td', '', c.target), el('td', '', c.owner), since,
      el('td', 'muted', `in ${left} s`));
    tb.append(tr);
  }
  $('claims-empty').classList.toggle('hidden', live.length > 0);
}

function memberByName(name) { return state.members.find((m) => m.name === name); }

// --- the stream -------------------------------------------------------------------------

function onRoom(snap) {
  state.room = snap;
  noteNow(snap.now);
  $('room-name').textContent = snap.name || 'agent-space';
  document.title = `${snap.name || 'agent-space'} — room`;
  state.members = snap.members || [];
  state.claims = snap.claims || [];
  state.profiles = new Map();
  for (const p of snap.profiles || []) state.profiles.set(p.name, p);
  state.plans = new Map();
  for (const p of (snap.plans || []).slice().reverse()) notePlan(p);
  $('chat').replaceChildren();
  for (const m of snap.events || []) addFeed(m, false);
  $('chat-empty').classList.toggle('hidden', (snap.events || []).length > 0);
  renderMembers();
  renderClaims();
  renderPlans();
}

function connect() {
  const es = new EventSource('api/events');
  const live = $('live-state');
  es.onopen = () => { live.textContent = 'live'; live.className = 'pill live'; $('banner').classList.add('hidden'); };
  es.onerror = () => {
    live.textContent = 'offline';
    live.className = 'pill off';
  };
  const on = (type, fn) => es.addEventListener(type, (ev) => {
    let data;
    try { data = JSON.parse(ev.data); } catch (e) { return; }
    fn(data);
  });
  on('room', onRoom);
  for (const t of FEED_TYPES) {
    on(t, (m) => {
      addFeed(m, true);
      if (t === 'shutdown') {
        $('banner').textContent = 'The room is shutting down.';
        $('banner').classList.remove('hidden');
      }
    });
  }
  on('members', (d) => {
    noteNow(d.now);
    state.members = d.members || [];
    const here = new Set(state.members.map((m) => m.name));
    for (const name of [...state.profiles.keys()]) if (!here.has(name)) state.profiles.delete(name);
    renderMembers();
  });
  on('profile', (p) => { state.profiles.set(p.name, p); renderMembers(); });
  on('plan', (p) => { notePlan(p); renderPlans(); });
  on('claims', (d) => { state.claims = d.claims || []; renderClaims(); });
  on('typing', (m) => {
    const mem = memberByName(m.name);
    if (mem) { mem.typingAt = m.timestamp; noteNow(m.timestamp); renderMembers(); }
  });
  on('state', (m) => {
    const mem = memberByName(m.name);
    if (!mem) return;
    mem.state = m.state;
    if ('detail' in m) mem.detail = m.detail; else delete mem.detail;
    mem.stateAt = m.timestamp;
    noteNow(m.timestamp);
    renderMembers();
  });
}

// typing fades and claims count down without any event
setInterval(() => { renderMembers(); renderClaims(); }, 1000);
connect();
