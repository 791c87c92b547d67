// app.js: the gmux dashboard (docs/ui.md).  Everything it shows comes from
// the daemon's API on the same origin: GET /v1/session once, then the
// /v1/events stream (server-sent events) for cards, jobs and the queue,
// and GET /v1/usage/series for the plots.  Text from the daemon is only
// ever set as text, never parsed as HTML.
'use strict';

const G = window.gmux = {
  session: null,      // GET /v1/session
  state: null,        // the last "state" event
  samples: [],        // the cards' history, oldest first
  stepMs: 2000,
  series: {},         // by -> the last GET /v1/usage/series
  logAbort: null,
  usageTimer: null,
  usageDue: null,
  opens: 0,           // how often the stream (re)opened
};
const SAMPLES_MAX = 180;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// As the daemon's format_size(): 80G, 1.5G, 512M, 100B.
function fmtSize(n) {
  const units = 'BKMGT';
  let u = 0, scale = 1;
  while (u < units.length - 1 && n >= scale * 1024) { scale *= 1024; u++; }
  if (u === 0) return n + 'B';
  if (n % scale === 0) return (n / scale) + units[u];
  return (n / scale).toFixed(1) + units[u];
}

// A fraction of a card as gmux top shows it: 55%.
const pct = (v) => Math.round(Math.min(Math.max(v, 0), 1) * 100);

// As gmux top's runtime: 0:05, 12:05, 3:04:05, 2d 03:04:05.
function fmtAge(ms) {
  let s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  const p2 = (x) => String(x).padStart(2, '0');
  if (d > 0) return d + 'd ' + p2(h) + ':' + p2(m) + ':' + p2(s);
  if (h > 0) return h + ':' + p2(m) + ':' + p2(s);
  return m + ':' + p2(s);
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg || '';
  e.hidden = !msg;
}

// A request to the API; changes carry the CSRF value (docs/ui.md).
async function api(method, path, body) {
  const headers = { 'X-Gmux-Csrf': (G.session && G.session.csrf) || 'local' };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  if (r.status === 401) {
    location.replace('/ui/login');
    throw new Error('not logged in');
  }
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) throw new Error((data && data.error) || r.statusText);
  return data;
}

// ---- cards

function cardMetrics(c) {
  const memory = c.memory || 0;
  const util = typeof c.util === 'number' ? c.util : null;
  return [
    { key: 'guaranteed', label: 'guaranteed', frac: c.guaranteed,
      text: pct(c.guaranteed) + '%' },
    { key: 'burst', label: 'burst', frac: c.burst, text: pct(c.burst) + '%' },
    { key: 'memory', label: 'memory', frac: memory ? c.mem_used / memory : 0,
      text: fmtSize(c.mem_used) + '/' + fmtSize(memory) },
    { key: 'util', label: 'util', frac: util === null ? 0 : util,
      text: util === null ? 'n/a' : pct(util) + '%' },
  ];
}

// The history of one card's metric, as fractions of the card.
function history(index, key, memory) {
  const out = [];
  for (const s of G.samples) {
    const c = s.cards[index];
    if (!c) continue;
    if (key === 'memory') out.push(memory ? c.mem_used / memory : 0);
    else out.push(typeof c[key] === 'number' ? c[key] : 0);
  }
  return out;
}

function sparkline(values) {
  const w = 120, h = 24;
  const s = svg('svg', { class: 'spark', viewBox: `0 0 ${w} ${h}`,
    preserveAspectRatio: 'none' });
  if (values.length < 2) return s;
  const pts = values.map((v, i) => {
    const x = (i / (SAMPLES_MAX - 1)) * w + (SAMPLES_MAX - values.length) *
      w / (SAMPLES_MAX - 1);
    const y = h - Math.min(Math.max(v, 0), 1) * (h - 2) - 1;
    return x.toFixed(1) + ',' + y.toFixed(1);
  });
  s.append(svg('polyline', { points: pts.join(' ') }));
  return s;
}

function renderCards() {
  const box = $('cards');
  const cards = (G.state && G.state.cards) || [];
  box.replaceChildren();
  for (const c of cards) {
    const title = `card ${c.index}  ${c.vendor} ${c.model}  ` +
      `${fmtSize(c.memory)}  ${c.jobs} job${c.jobs === 1 ? '' : 's'}`;
    const card = el('div', { class: 'card', 'data-index': c.index },
      el('h3', { text: (c.host ? c.host + ' ' : '') + title }));
    for (const m of cardMetrics(c)) {
      const fill = el('div', { class: 'fill ' + m.key,
        'data-value': String(m.frac) });
      fill.style.width = (pct(m.frac)) + '%';
      card.append(el('div', { class: 'metric', 'data-metric': m.key },
        el('span', { class: 'label', text: m.label }),
        el('div', { class: 'bar', role: 'meter', 'aria-label': m.label,
          'aria-valuemin': '0', 'aria-valuemax': '100',
          'aria-valuenow': String(pct(m.frac)), 'aria-valuetext': m.text },
        fill),
        el('span', { class: 'value', text: m.text }),
        sparkline(history(cards.indexOf(c), m.key, c.memory))));
    }
    if (c.enforce && c.enforce.why)
      card.append(el('p', { class: 'why', text: c.enforce.why }));
    box.append(card);
  }
}

// ---- jobs and queue

function jobRow(j, now, queued) {
  const share = j.share.toFixed(2);
  const cmd = (j.cmd || []).join(' ');
  const actions = el('td', { class: 'actions' });
  actions.append(el('button', { class: 'log', text: 'log',
    onclick: () => openLog(j.id) }));
  const input = el('input', { type: 'number', min: '0.01', max: '1',
    step: '0.01', value: share, class: 'share', 'aria-label': 'share' });
  actions.append(input, el('button', { class: 'resize', text: 'resize',
    onclick: () => act('PATCH', `/v1/jobs/${j.id}`,
      { share: Number(input.value) }) }));
  actions.append(el('button', { class: 'stop', text: 'stop',
    onclick: () => act('POST', `/v1/jobs/${j.id}/stop`, {}) }));
  const tr = el('tr', { 'data-id': j.id, 'data-state': j.state });
  if (queued) {
    tr.append(el('td', { text: j.position == null ? '' : String(j.position) }),
      el('td', { text: j.id }), el('td', { text: j.owner }),
      el('td', { text: share }), el('td', { text: fmtSize(j.mem) }),
      el('td', { text: fmtAge(now - j.created) }),
      el('td', { class: 'reason', text: j.reason || '' }), actions);
  } else {
    const cards = (j.cards || (j.card == null ? [] : [j.card])).join(',');
    tr.append(el('td', { text: j.id }), el('td', { text: j.owner }),
      el('td', { text: j.state }), el('td', { text: cards }),
      el('td', { class: 'share', text: share }),
      el('td', { text: fmtSize(j.mem) }),
      el('td', { class: 'age', 'data-started': String(j.started || 0),
        text: fmtAge(now - (j.started || now)) }),
      el('td', { class: 'cmd', text: cmd }), actions);
  }
  return tr;
}

// A share being typed in survives the table being drawn again.
function typing() {
  const a = document.activeElement;
  const tr = a && a.matches('input.share') ? a.closest('tr') : null;
  return tr ? { id: tr.dataset.id, value: a.value } : null;
}

function restoreTyping(t) {
  if (!t) return;
  const input = document.querySelector(
    `tr[data-id="${CSS.escape(t.id)}"] input.share`);
  if (!input) return;
  input.value = t.value;
  input.focus();
}

function renderJobs() {
  const t = typing();
  const jobs = (G.state && G.state.jobs) || [];
  const now = Date.now();
  const running = jobs.filter((j) => j.state !== 'queued');
  const queued = jobs.filter((j) => j.state === 'queued')
    .sort((a, b) => (a.position || 0) - (b.position || 0));
  $('jobs').tBodies[0].replaceChildren(...running.map((j) => jobRow(j, now)));
  $('queue').tBodies[0].replaceChildren(
    ...queued.map((j) => jobRow(j, now, true)));
  $('jobs-empty').hidden = running.length > 0;
  $('queue-empty').hidden = queued.length > 0;
  restoreTyping(t);
}

function tickAges() {
  const now = Date.now();
  for (const td of document.querySelectorAll('#jobs td.age')) {
    const t = Number(td.dataset.started);
    if (t) td.textContent = fmtAge(now - t);
  }
}

async function act(method, path, body) {
  try {
    await api(method, path, body);
    showError('');
  } catch (e) {
    showError(e.message);
  }
}

// ---- the live log

async function openLog(id) {
  if (G.logAbort) G.logAbort.abort();
  const ctl = G.logAbort = new AbortController();
  const pre = $('log');
  pre.textContent = '';
  $('log-job').textContent = id;
  $('log-section').hidden = false;
  let r;
  try {
    r = await fetch(`/v1/jobs/${id}/log?follow=1&raw=1`,
      { credentials: 'same-origin', signal: ctl.signal, cache: 'no-store' });
    if (!r.ok) throw new Error((await r.json()).error);
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pre.textContent = (pre.textContent + dec.decode(value, { stream: true }))
        .slice(-262144);
      pre.scrollTop = pre.scrollHeight;
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError(`log of ${id}: ${e.message}`);
  }
}

function closeLog() {
  if (G.logAbort) G.logAbort.abort();
  G.logAbort = null;
  $('log-section').hidden = true;
}

// ---- usage plots

const COLORS = ['#2b7bb9', '#d9534f', '#5cb85c', '#f0ad4e', '#8e44ad',
  '#16a085', '#7f8c8d', '#c0392b'];

function renderPlot(by) {
  const fig = $('plot-' + by);
  const s = G.series[by];
  const plot = fig.querySelector('svg');
  const legend = fig.querySelector('.legend');
  plot.replaceChildren();
  legend.replaceChildren();
  if (!s) return;
  const W = 600, H = 200, L = 40, B = 20;
  const keys = Object.keys(s.share_seconds).sort();
  const step = s.step_ms / 1000;
  let max = 1;
  for (const k of keys)
    for (const v of s.share_seconds[k]) max = Math.max(max, v / step);
  plot.append(svg('line', { x1: L, y1: H - B, x2: W, y2: H - B, class: 'axis' }));
  plot.append(svg('line', { x1: L, y1: 0, x2: L, y2: H - B, class: 'axis' }));
  const ylab = svg('text', { x: 2, y: 12, class: 'tick' });
  ylab.textContent = max.toFixed(2);
  plot.append(ylab);
  const n = s.times.length;
  keys.forEach((k, i) => {
    const pts = s.share_seconds[k].map((v, j) => {
      const x = L + (n > 1 ? j / (n - 1) : 0) * (W - L);
      const y = (H - B) - (v / step) / max * (H - B - 4);
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    plot.append(svg('polyline', { class: 'series', 'data-key': k,
      points: pts.join(' '), stroke: COLORS[i % COLORS.length] }));
    const sw = el('span', { class: 'swatch' });
    sw.style.background = COLORS[i % COLORS.length];
    legend.append(el('span', { class: 'key' }, sw,
      by === 'card' ? 'card ' + k : k));
  });
  if (keys.length === 0)
    legend.append(el('span', { class: 'empty', text: 'no use in this window' }));
}

async function loadUsage() {
  const w = $('window').value;
  // a tenant's plots are its own use, by card too (docs/ui.md)
  for (const by of ['owner', 'card']) {
    try {
      G.series[by] = await api('GET',
        `/v1/usage/series?window=${encodeURIComponent(w)}&by=${by}&points=60`);
      renderPlot(by);
    } catch (e) {
      showError(`usage by ${by}: ${e.message}`);
    }
  }
  // The last step fills as time passes: fetched again when it closes.
  const s = G.series.owner;
  clearTimeout(G.usageTimer);
  G.usageTimer = setTimeout(loadUsage, Math.max(s ? s.step_ms : 60000, 5000));
}

// Usage changes with the jobs: fetched again soon after a change.
function usageSoon() {
  if (G.usageDue) return;
  G.usageDue = setTimeout(() => { G.usageDue = null; loadUsage(); }, 1000);
}

// A CSV field quoted as gmux usage --csv quotes one.
const csvField = (s) => /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;

// The CSV of the series shown: time, key, share-seconds.
window.gmuxCsv = function (by) {
  const s = G.series[by];
  if (!s) return '';
  const rows = ['time,' + by + ',share_seconds'];
  for (const k of Object.keys(s.share_seconds).sort()) {
    s.share_seconds[k].forEach((v, i) => {
      rows.push(new Date(s.times[i]).toISOString() + ',' + csvField(k) +
        ',' + v);
    });
  }
  return rows.join('\n') + '\n';
};

function downloadCsv(by) {
  const blob = new Blob([window.gmuxCsv(by)], { type: 'text/csv' });
  const a = el('a', { href: URL.createObjectURL(blob),
    download: `gmux-usage-by-${by}-${$('window').value}.csv` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// ---- cluster

function renderCluster() {
  const c = G.state && G.state.cluster;
  $('cluster-section').hidden = !c;
  if (!c) return;
  $('cluster-id').textContent = c.id || '';
  $('members').tBodies[0].replaceChildren(...(c.members || []).map((m) =>
    el('tr', { 'data-name': m.name },
      el('td', { text: m.name + (m.name === c.leader ? ' (leader)' : '') }),
      el('td', { text: m.addr || '' }),
      el('td', { text: String(m.cards == null ? '' : m.cards) }),
      el('td', { text: m.state || '' }))));
}

// ---- the stream

function connect() {
  const es = new EventSource('/v1/events');
  es.addEventListener('open', () => {
    G.opens++;
    $('live').classList.add('on');
  });
  es.addEventListener('history', (e) => {
    const h = JSON.parse(e.data);
    G.stepMs = h.step_ms;
    G.samples = h.samples.slice(-SAMPLES_MAX);
    renderCards();
  });
  es.addEventListener('state', (e) => {
    const first = G.state === null;
    G.state = JSON.parse(e.data);
    renderCards();
    renderJobs();
    renderCluster();
    if (!first) usageSoon();
  });
  es.addEventListener('sample', (e) => {
    G.samples.push(JSON.parse(e.data));
    if (G.samples.length > SAMPLES_MAX) G.samples.shift();
    renderCards();
  });
  es.addEventListener('error', async () => {
    $('live').classList.remove('on');
    if (es.readyState !== EventSource.CLOSED) return;   // it reconnects
    try {
      await api('GET', '/v1/session');
      setTimeout(connect, 2000);
    } catch (e) {
      showError(e.message);
    }
  });
}

async function logout() {
  try { await api('POST', '/ui/logout'); } catch (e) { /* cleared anyway */ }
  location.replace('/ui/login');
}

async function main() {
  try {
    G.session = await api('GET', '/v1/session');
  } catch (e) {
    showError(e.message);
    return;
  }
  $('who').textContent = G.session.owner + (G.session.admin ? ' (host)' : '');
  $('logout').hidden = !G.session.csrf;
  $('logout').addEventListener('click', logout);
  $('log-close').addEventListener('click', closeLog);
  $('window').addEventListener('change', loadUsage);
  for (const b of document.querySelectorAll('button.csv'))
    b.addEventListener('click', () => downloadCsv(b.dataset.by));
  setInterval(tickAges, 1000);
  connect();
  loadUsage();
}

main();
