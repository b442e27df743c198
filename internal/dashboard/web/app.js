// The queen dashboard: Preact components written with htm (no build step).
// Every figure comes from the broker's HTTP API; the page polls only what
// the open view shows, and nothing while the tab is hidden.
import { html, render, useState, useEffect, useRef, useCallback } from './vendor/preact-htm.js';

const TOKEN = 'queen.token';
const THEME = 'queen.theme';

// ---- the API ----

let onUnauthorized = () => {};

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const token = sessionStorage.getItem(TOKEN);
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (r.status === 204) return null;
  const j = await r.json().catch(() => null);
  if (r.status === 401) onUnauthorized();
  if (!r.ok) throw new APIError(r.status, (j && j.error) || r.status + ' ' + r.statusText);
  return j;
}
const get = (p) => api('GET', p);
const enc = encodeURIComponent;
const qs = (o) => {
  const s = Object.entries(o).filter(([, v]) => v !== '' && v != null).map(([k, v]) => enc(k) + '=' + enc(v)).join('&');
  return s ? '?' + s : '';
};

// ---- formatting ----

export function fmtNum(n) {
  if (n == null || isNaN(n)) return '–';
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(1) + ' G';
  if (a >= 1e6) return (n / 1e6).toFixed(1) + ' M';
  if (a >= 1e4) return (n / 1e3).toFixed(1) + ' k';
  if (a >= 1e3) return (n / 1e3).toFixed(1) + ' k';
  return Number.isInteger(n) ? String(n) : n.toFixed(a < 10 ? 2 : 1);
}
const fmtRate = (n) => fmtNum(n) + '/s';
function fmtDur(s) {
  if (s == null || isNaN(s)) return '–';
  if (s < 1) return Math.round(s * 1000) + ' ms';
  if (s < 60) return s.toFixed(1) + ' s';
  if (s < 3600) return Math.round(s / 60) + ' min';
  if (s < 86400) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}
function fmtBytes(b) {
  if (b == null) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : b) + ' ' + u[i];
}
function Ago({ t }) {
  if (!t) return html`<span class="muted">–</span>`;
  const d = new Date(t);
  const s = (Date.now() - d.getTime()) / 1000;
  const rel = s < 0 ? 'in ' + fmtDur(-s) : s < 5 ? 'just now' : fmtDur(s) + ' ago';
  return html`<time datetime=${t} title=${d.toLocaleString()}>${rel}</time>`;
}

// ---- routing (history API; the broker answers index.html for these paths) ----

function useRoute() {
  const [loc, setLoc] = useState(location.pathname + location.search);
  useEffect(() => {
    const on = () => setLoc(location.pathname + location.search);
    addEventListener('popstate', on);
    return () => removeEventListener('popstate', on);
  }, []);
  return loc;
}
export function go(to) {
  history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
  scrollTo(0, 0);
}
function Link({ to, children, ...rest }) {
  const click = (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    go(to);
  };
  return html`<a href=${to} onClick=${click} ...${rest}>${children}</a>`;
}

// ---- data hooks ----

// usePoll loads fn() now and every ms while the tab is visible; reload()
// loads again at once (after an action).
function usePoll(fn, ms, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const tick = useRef(0);
  const load = useCallback(async () => {
    const n = ++tick.current;
    try {
      const data = await fn();
      if (n === tick.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (n === tick.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    load();
    if (!ms) return;
    const t = setInterval(() => { if (!document.hidden) load(); }, ms);
    const vis = () => { if (!document.hidden) load(); };
    document.addEventListener('visibilitychange', vis);
    return () => { clearInterval(t); document.removeEventListener('visibilitychange', vis); };
  }, [load, ms]);
  return { ...state, reload: load };
}

// ---- confirmation and notices ----

let askConfirm = null;
export function confirmAction(text, yes = 'Confirm') {
  return new Promise((resolve) => askConfirm({ text, yes, resolve }));
}
function ConfirmHost() {
  const [ask, setAsk] = useState(null);
  const ref = useRef();
  askConfirm = setAsk;
  useEffect(() => { if (ask && ref.current && !ref.current.open) ref.current.showModal(); }, [ask]);
  const done = (v) => { ref.current.close(); ask.resolve(v); setAsk(null); };
  if (!ask) return null;
  return html`<dialog ref=${ref} onCancel=${() => done(false)} id="confirm">
    <p>${ask.text}</p>
    <div class="row"><button id="confirm-no" onClick=${() => done(false)}>Cancel</button>
    <button id="confirm-yes" class="danger" onClick=${() => done(true)}>${ask.yes}</button></div></dialog>`;
}
let notify = () => {};
function Toast() {
  const [msg, setMsg] = useState(null);
  notify = (m) => { setMsg(m); setTimeout(() => setMsg((c) => (c === m ? null : c)), 4000); };
  return msg ? html`<div class="toast" role="status">${msg}</div>` : null;
}
async function act(label, fn, after) {
  try {
    const r = await fn();
    notify(label);
    if (after) after(r);
    return r;
  } catch (e) {
    notify('Failed: ' + e.message);
    return null;
  }
}

// ---- small pieces ----

const Err = ({ error }) => (error ? html`<div class="error" role="alert">${error.message}</div>` : null);
const Card = ({ k, v, id, cls }) => html`<div class="card"><div class="k">${k}</div><div class="v ${cls || ''}" id=${id}>${v}</div></div>`;

// Table sorts by a column when its header is clicked; rows are objects and
// cols [{k, label, num, render}].
function Table({ cols, rows, id, empty, keyOf }) {
  const [sort, setSort] = useState(null);
  let list = rows || [];
  if (sort) {
    const c = cols.find((c) => c.k === sort.k);
    const val = c.sort || ((r) => r[c.k]);
    list = [...list].sort((a, b) => {
      const x = val(a), y = val(b);
      return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
    });
  }
  if (!list.length) return html`<div class="empty">${empty || 'Nothing here.'}</div>`;
  const click = (c) => setSort((s) => ({ k: c.k, dir: s && s.k === c.k ? -s.dir : c.num ? -1 : 1 }));
  return html`<table id=${id}><thead><tr>${cols.map((c) => html`<th class="${c.num ? 'num' : ''} ${c.nosort ? '' : 'sort'}"
      tabindex=${c.nosort ? undefined : 0} aria-sort=${sort && sort.k === c.k ? (sort.dir > 0 ? 'ascending' : 'descending') : undefined}
      onClick=${() => !c.nosort && click(c)} onKeyDown=${(e) => e.key === 'Enter' && !c.nosort && click(c)}>${c.label}${sort && sort.k === c.k ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''}</th>`)}</tr></thead>
    <tbody>${list.map((r, i) => html`<tr key=${keyOf ? keyOf(r) : i}>${cols.map((c) => html`<td class=${c.num ? 'num' : ''} data-col=${c.k}>${c.render ? c.render(r) : c.num ? fmtNum(r[c.k]) : r[c.k]}</td>`)}</tr>`)}</tbody></table>`;
}

// Chart draws series over time with uPlot: data is [[t...], [y...], ...].
function Chart({ data, series, height = 200 }) {
  const box = useRef(), plot = useRef();
  useEffect(() => {
    if (!window.uPlot || !box.current) return;
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue('--muted').trim() || '#888', grid = css.getPropertyValue('--line').trim() || '#ddd';
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
    const colors = ['#5b3fe0', '#2e9d6a', '#e0803f', '#c62828'];
    const opts = {
      width: Math.max(280, box.current.clientWidth - 4), height,
      series: [{}, ...series.map((s, i) => ({ label: s, stroke: colors[i % colors.length], width: 2, value: (u, v) => fmtNum(v) }))],
      axes: [axis, { ...axis, values: (u, vs) => vs.map(fmtNum) }],
      legend: { show: true },
    };
    plot.current = new window.uPlot(opts, data, box.current);
    const resize = () => plot.current && plot.current.setSize({ width: Math.max(280, box.current.clientWidth - 4), height });
    addEventListener('resize', resize);
    return () => { removeEventListener('resize', resize); plot.current.destroy(); plot.current = null; };
  }, [series.join()]);
  useEffect(() => { if (plot.current) plot.current.setData(data); }, [data]);
  return html`<div class="chart" ref=${box}></div>`;
}

const EmptyBroker = () => html`<div class="empty" id="empty-broker"><p><strong>No queues yet.</strong> Push a first message and it appears here:</p>
  <p><code>curl -X POST ${location.origin}/api/v1/push -H 'Content-Type: application/json' -d '{"items":[{"queue":"hello","payload":{"hi":1}}]}'</code></p></div>`;

// ---- views ----

// rateSeries turns buckets ({timestamp|bucket, <keys>...}, any order) into
// chart data, oldest first, leaving out the bucket still being counted (the
// broker writes a minute once it is over).
function rateSeries(rows, tsKey, keys, bucketMinutes) {
  const now = Date.now(), len = (bucketMinutes || 1) * 60e3;
  const list = (rows || []).map((r) => ({ t: Date.parse(r[tsKey]), r })).filter((x) => x.t + len <= now).sort((a, b) => a.t - b.t);
  return [list.map((x) => x.t / 1000), ...keys.map((k) => list.map((x) => x.r[k]))];
}

function Overview() {
  const ov = usePoll(() => get('/api/v1/resources/overview'), 5000, []);
  const health = usePoll(() => get('/health'), 10000, []);
  const queues = usePoll(() => get('/api/v1/resources/queues?limit=10'), 10000, []);
  // The last hour's minutes, loaded with the page and again each 30 s: the
  // chart is full on first render, and rates are the broker's own counts.
  const st = usePoll(() => get('/api/v1/status'), 30000, []);
  const series = st.data ? rateSeries(st.data.throughput, 'timestamp', ['ingestedPerSecond', 'processedPerSecond'], st.data.bucketMinutes) : [[], [], []];
  const last = series[0].length ? { in: series[1][series[1].length - 1], out: series[2][series[2].length - 1] } : null;
  const o = ov.data, hl = health.data;
  return html`<header class="top"><h1>Overview</h1><span class="muted">${o ? html`stats <${Ago} t=${o.timestamp} />` : ''}</span></header>
    <${Err} error=${ov.error} />
    ${o && html`<div class="cards">
      <${Card} k="Queues" v=${fmtNum(o.queues)} id="ov-queues" />
      <${Card} k="Partitions" v=${fmtNum(o.partitions)} id="ov-partitions" />
      <${Card} k="Pending" v=${fmtNum(o.messages.pending)} id="ov-pending" />
      <${Card} k="In flight" v=${fmtNum(o.messages.processing)} id="ov-processing" />
      <${Card} k="Dead letters" v=${fmtNum(o.messages.deadLetter)} id="ov-dlq" cls=${o.messages.deadLetter ? 'bad' : ''} />
      <${Card} k="In (last minute)" v=${last ? fmtRate(last.in) : '…'} id="ov-in" />
      <${Card} k="Out (last minute)" v=${last ? fmtRate(last.out) : '…'} id="ov-out" />
      <${Card} k="Max lag" v=${fmtDur(o.lag.time.max)} id="ov-lag" />
      <${Card} k="Broker" v=${hl ? hl.status : '…'} id="ov-health" cls=${hl && hl.status === 'healthy' ? 'ok' : 'warn'} />
      <${Card} k="Engine" v=${hl ? hl.engine : '…'} id="ov-engine" />
    </div>`}
    <div class="panel" id="ov-chart" data-points=${series[0].length}><strong>Messages per second</strong> <span class="muted">(per minute, the last hour)</span>
      <${Chart} data=${series} series=${['in', 'out']} /></div>
    ${o && o.queues === 0 ? html`<${EmptyBroker} />` : queues.data && html`<h2>Queues</h2><div class="panel">
      <${QueueTable} rows=${queues.data.queues} /></div>`}`;
}

function QueueTable({ rows, onDelete }) {
  const cols = [
    { k: 'name', label: 'Queue', render: (q) => html`<${Link} to=${'/queues/' + enc(q.name)}>${q.name}</${Link}>` },
    { k: 'namespace', label: 'Namespace', render: (q) => q.namespace || html`<span class="muted">–</span>` },
    { k: 'partitions', label: 'Partitions', num: true },
    { k: 'pending', label: 'Depth', num: true, sort: (q) => q.messages.pending, render: (q) => fmtNum(q.messages.pending) },
    { k: 'processing', label: 'In flight', num: true, sort: (q) => q.messages.processing, render: (q) => fmtNum(q.messages.processing) },
    { k: 'total', label: 'Total', num: true, sort: (q) => q.messages.total, render: (q) => fmtNum(q.messages.total) },
    { k: 'deadLetter', label: 'DLQ', num: true, sort: (q) => q.messages.deadLetter,
      render: (q) => (q.messages.deadLetter ? html`<${Link} class="bad" to=${'/dlq' + qs({ queue: q.name })}>${fmtNum(q.messages.deadLetter)}</${Link}>` : '0') },
    // The age is the broker's (its clock, not this browser's); the time is in the tooltip.
    { k: 'oldest', label: 'Oldest unread', num: true, sort: (q) => q.oldestUnreadAgeSeconds,
      render: (q) => (q.oldestUnreadAt ? html`<time datetime=${q.oldestUnreadAt} title=${new Date(q.oldestUnreadAt).toLocaleString()}>${fmtDur(q.oldestUnreadAgeSeconds)}</time>` : html`<span class="muted">–</span>`) },
    { k: 'createdAt', label: 'Created', render: (q) => html`<${Ago} t=${q.createdAt} />` },
  ];
  if (onDelete) cols.push({ k: 'x', label: '', nosort: true, render: (q) => html`<button class="danger" data-delete=${q.name} onClick=${() => onDelete(q)}>Delete</button>` });
  return html`<${Table} id="queues" cols=${cols} rows=${rows} keyOf=${(q) => q.id} />`;
}

function Queues({ me }) {
  const [filter, setFilter] = useState('');
  const qs_ = usePoll(() => get('/api/v1/resources/queues?limit=1000'), 10000, []);
  const rows = (qs_.data ? qs_.data.queues : []).filter((q) => !filter || q.name.toLowerCase().includes(filter.toLowerCase()) || (q.namespace || '').includes(filter));
  const del = async (q) => {
    if (await confirmAction(`Delete queue "${q.name}" and every message in it? This cannot be undone.`, 'Delete queue'))
      act('Queue ' + q.name + ' deleted', () => api('DELETE', '/api/v1/resources/queues/' + enc(q.name)), qs_.reload);
  };
  return html`<header class="top"><h1>Queues</h1><span class="muted">${qs_.data ? fmtNum(qs_.data.pagination.total) + (qs_.data.pagination.total === 1 ? ' queue' : ' queues') : ''}</span></header>
    <div class="row"><input type="search" placeholder="Filter by name or namespace  ( / )" value=${filter} onInput=${(e) => setFilter(e.target.value)} id="filter" aria-label="filter" /></div>
    <${Err} error=${qs_.error} />
    <div class="panel">${qs_.data && (qs_.data.queues.length ? html`<${QueueTable} rows=${rows} onDelete=${can(me, 'admin') ? del : null} />` : html`<${EmptyBroker} />`)}</div>`;
}

function QueueDetail({ name, me }) {
  const q = usePoll(() => get('/api/v1/resources/queues/' + enc(name)), 5000, [name]);
  const groups = usePoll(() => get('/api/v1/consumer-groups'), 10000, []);
  const ops = usePoll(() => get('/api/v1/analytics/queue-ops' + qs({ queue: name })), 30000, [name]);
  const opsSeries = ops.data ? rateSeries(ops.data.series, 'bucket', ['pushPerSecond', 'popPerSecond', 'ackPerSecond'], ops.data.bucketMinutes) : [[], [], [], []];
  const mine = (groups.data || []).filter((g) => g.queueName === name);
  const clear = async () => {
    if (await confirmAction(`Delete every message of "${name}"?`, 'Clear queue'))
      act('Queue cleared', () => api('DELETE', '/api/v1/queues/' + enc(name) + '/clear'), q.reload);
  };
  const d = q.data;
  return html`<header class="top"><h1>Queue ${name}</h1>
      <div class="row"><${Link} to=${'/messages' + qs({ queue: name })}>Messages</${Link}> · <${Link} to=${'/dlq' + qs({ queue: name })}>Dead letters</${Link}>
      ${can(me, 'admin') && html`<button class="danger" onClick=${clear}>Clear</button>`}</div></header>
    <${Err} error=${q.error} />
    ${d && html`<div class="cards">
      <${Card} k="Pending" v=${fmtNum(d.totals.pending)} id="q-pending" />
      <${Card} k="In flight" v=${fmtNum(d.totals.processing)} id="q-processing" />
      <${Card} k="Completed" v=${fmtNum(d.totals.completed)} />
      <${Card} k="Dead letters" v=${fmtNum(d.totals.deadLetter)} id="q-dlq" />
      <${Card} k="Partitions" v=${fmtNum(d.pagination.total)} id="q-partitions" />
      <${Card} k="Created" v=${html`<${Ago} t=${d.createdAt} />`} />
    </div>
    <div class="panel" id="q-chart" data-points=${opsSeries[0].length}><strong>Messages per second</strong> <span class="muted">(per minute, the last hour)</span>
      <${Chart} data=${opsSeries} series=${['push', 'pop', 'ack']} /></div>
    <h2>Partitions</h2><div class="panel"><${Table} id="partitions" keyOf=${(p) => p.id} rows=${d.partitions} cols=${[
      { k: 'name', label: 'Partition' },
      { k: 'pending', label: 'Pending', num: true, sort: (p) => p.stats.pending, render: (p) => fmtNum(p.stats.pending) },
      { k: 'processing', label: 'In flight', num: true, sort: (p) => p.stats.processing, render: (p) => fmtNum(p.stats.processing) },
      { k: 'completed', label: 'Completed', num: true, sort: (p) => p.stats.completed, render: (p) => fmtNum(p.stats.completed) },
      { k: 'deadLetter', label: 'DLQ', num: true, sort: (p) => p.stats.deadLetter, render: (p) => fmtNum(p.stats.deadLetter) },
      { k: 'oldestMessage', label: 'Oldest message', render: (p) => html`<${Ago} t=${p.oldestMessage} />` },
      { k: 'lastActivity', label: 'Last activity', render: (p) => html`<${Ago} t=${p.lastActivity} />` },
    ]} /></div>`}
    <h2>Consumer groups</h2><div class="panel"><${Table} id="queue-groups" rows=${mine} empty="No consumer group has read this queue." cols=${[
      { k: 'name', label: 'Group', render: (g) => html`<${Link} to=${'/groups/' + enc(g.name)}>${g.name}</${Link}>` },
      { k: 'totalLag', label: 'Lag (messages)', num: true },
      { k: 'partitionsWithLag', label: 'Lagging partitions', num: true },
      { k: 'maxTimeLag', label: 'Max time lag', num: true, render: (g) => fmtDur(g.maxTimeLag) },
      { k: 'state', label: 'State' },
    ]} /></div>`;
}

function Messages({ params, me }) {
  const [f, setF] = useState({ queue: params.get('queue') || '', partition: params.get('partition') || '', status: params.get('status') || '' });
  const [open, setOpen] = useState(null);
  const list = usePoll(() => get('/api/v1/messages' + qs({ ...f, limit: 100 })), 0, [f.queue, f.partition, f.status]);
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  const path = (m) => '/api/v1/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId);
  const view = async (m) => act('Loaded', async () => setOpen(await get(path(m))));
  const doIt = async (m, what) => {
    const verbs = { delete: ['Delete this message?', 'Delete', 'DELETE', ''], retry: ['Make this message available again?', 'Retry', 'POST', '/retry'], dlq: ['Move this message to the dead-letter queue?', 'Move to DLQ', 'POST', '/dlq'] };
    const [q, yes, method, tail] = verbs[what];
    if (await confirmAction(q, yes)) act(yes + ': done', () => api(method, path(m) + tail), list.reload);
  };
  const w = can(me, 'read-write');
  return html`<header class="top"><h1>Messages</h1></header>
    <div class="row"><input placeholder="queue" value=${f.queue} onChange=${set('queue')} id="m-queue" aria-label="queue" />
      <input placeholder="partition" value=${f.partition} onChange=${set('partition')} aria-label="partition" />
      <select value=${f.status} onChange=${set('status')} aria-label="status"><option value="">any status</option>
        ${['pending', 'processing', 'completed', 'dead_letter'].map((s) => html`<option value=${s}>${s}</option>`)}</select>
      <button onClick=${list.reload}>Refresh</button></div>
    <${Err} error=${list.error} />
    <div class="panel"><${Table} id="messages" rows=${list.data && list.data.messages} empty="No message matches." keyOf=${(m) => m.id} cols=${[
      { k: 'createdAt', label: 'Created', render: (m) => html`<${Ago} t=${m.createdAt} />` },
      { k: 'queuePath', label: 'Queue/partition' },
      { k: 'status', label: 'Status', render: (m) => html`<span class="pill">${m.status}</span>` },
      { k: 'transactionId', label: 'Transaction', render: (m) => html`<code>${m.transactionId.slice(0, 13)}…</code>` },
      { k: 'x', label: '', nosort: true, render: (m) => html`<div class="row"><button onClick=${() => view(m)}>View</button>
        ${w && html`<button onClick=${() => doIt(m, 'retry')}>Retry</button><button onClick=${() => doIt(m, 'dlq')}>To DLQ</button><button class="danger" onClick=${() => doIt(m, 'delete')}>Delete</button>`}</div>` },
    ]} /></div>
    ${open && html`<h2>Message ${open.transactionId || ''}</h2><div class="panel"><button onClick=${() => setOpen(null)}>Close</button><pre id="payload">${JSON.stringify(open, null, 2)}</pre></div>`}`;
}

function DLQ({ params, me }) {
  const [f, setF] = useState({ queue: params.get('queue') || '', consumerGroup: '', partition: '' });
  const [sel, setSel] = useState({});
  const list = usePoll(() => get('/api/v1/dlq' + qs({ ...f, limit: 100 })), 10000, [f.queue, f.consumerGroup, f.partition]);
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  const rows = list.data ? list.data.messages : [];
  const chosen = rows.filter((m) => sel[m.transactionId]);
  const requeue = async () => {
    if (await confirmAction(`Requeue ${chosen.length} dead letter(s)? Each is pushed again as a new message.`, 'Requeue'))
      act('Requeued', () => api('POST', '/api/v1/dlq/retry', { ids: chosen.map((m) => ({ partitionId: m.partitionId, transactionId: m.transactionId })) }),
        () => { setSel({}); list.reload(); });
  };
  const remove = async () => {
    if (await confirmAction(`Delete ${chosen.length} dead letter(s) for good?`, 'Delete'))
      act('Deleted', () => Promise.all(chosen.map((m) => api('DELETE', '/api/v1/messages/' + enc(m.partitionId) + '/' + enc(m.transactionId)))),
        () => { setSel({}); list.reload(); });
  };
  const all = rows.length > 0 && chosen.length === rows.length;
  return html`<header class="top"><h1>Dead-letter queue</h1></header>
    <div class="row"><input placeholder="queue" value=${f.queue} onChange=${set('queue')} aria-label="queue" />
      <input placeholder="consumer group" value=${f.consumerGroup} onChange=${set('consumerGroup')} aria-label="consumer group" />
      <input placeholder="partition" value=${f.partition} onChange=${set('partition')} aria-label="partition" />
      ${can(me, 'read-write') && html`<button class="primary" id="dlq-requeue" disabled=${!chosen.length} onClick=${requeue}>Requeue ${chosen.length || ''}</button>
      <button class="danger" id="dlq-delete" disabled=${!chosen.length} onClick=${remove}>Delete ${chosen.length || ''}</button>`}</div>
    <${Err} error=${list.error} />
    <div class="panel"><${Table} id="dlq" rows=${rows} empty="The dead-letter queue is empty." keyOf=${(m) => m.transactionId} cols=${[
      { k: 'sel', label: html`<input type="checkbox" aria-label="select all" checked=${all} onChange=${() => setSel(all ? {} : Object.fromEntries(rows.map((m) => [m.transactionId, true])))} />`, nosort: true,
        render: (m) => html`<input type="checkbox" aria-label="select" data-tx=${m.transactionId} checked=${!!sel[m.transactionId]} onChange=${() => setSel({ ...sel, [m.transactionId]: !sel[m.transactionId] })} />` },
      { k: 'failedAt', label: 'Failed', render: (m) => html`<${Ago} t=${m.failedAt} />` },
      { k: 'queue', label: 'Queue', render: (m) => m.queue + '/' + m.partition },
      { k: 'consumerGroup', label: 'Group' },
      { k: 'retryCount', label: 'Retries', num: true },
      { k: 'errorMessage', label: 'Error', render: (m) => html`<span class="bad">${m.errorMessage}</span>` },
      { k: 'data', label: 'Payload', nosort: true, render: (m) => html`<code>${JSON.stringify(m.data).slice(0, 60)}</code>` },
    ]} /></div>`;
}

function Groups() {
  const list = usePoll(() => get('/api/v1/consumer-groups'), 5000, []);
  const lag = usePoll(() => get('/api/v1/consumer-groups/lagging?minLagSeconds=60'), 10000, []);
  return html`<header class="top"><h1>Consumer groups</h1></header><${Err} error=${list.error} />
    <div class="panel"><${Table} id="groups" rows=${list.data} empty="No consumer group yet: a pop with consumerGroup=… makes one." keyOf=${(g) => g.name + '/' + g.queueName} cols=${[
      { k: 'name', label: 'Group', render: (g) => html`<${Link} to=${'/groups/' + enc(g.name)}>${g.name}</${Link}>` },
      { k: 'queueName', label: 'Queue' },
      { k: 'totalLag', label: 'Lag (messages)', num: true },
      { k: 'partitionsWithLag', label: 'Lagging partitions', num: true },
      { k: 'maxTimeLag', label: 'Max time lag', num: true, render: (g) => fmtDur(g.maxTimeLag) },
      { k: 'members', label: 'Leases', num: true, sort: (g) => g.members.length, render: (g) => g.members.length },
      { k: 'state', label: 'State' },
      { k: 'subscriptionMode', label: 'Subscription' },
    ]} /></div>
    <h2>Partitions lagging over a minute</h2><div class="panel"><${Table} id="lagging" rows=${lag.data} empty="No partition lags by more than a minute." cols=${[
      { k: 'consumerGroup', label: 'Group' }, { k: 'queueName', label: 'Queue' }, { k: 'partitionName', label: 'Partition' },
      { k: 'offsetLag', label: 'Lag', num: true }, { k: 'timeLagSeconds', label: 'Time lag', num: true, render: (l) => fmtDur(l.timeLagSeconds) },
    ]} /></div>`;
}

function GroupDetail({ name, me }) {
  const g = usePoll(() => get('/api/v1/consumer-groups/' + enc(name)), 5000, [name]);
  const [when, setWhen] = useState('');
  const seek = async (queue, toEnd) => {
    const body = toEnd ? { toEnd: true } : { timestamp: new Date(when).toISOString() };
    const what = toEnd ? 'to the end (skip every pending message)' : 'to ' + new Date(when).toLocaleString() + ' (re-consume from there)';
    if (await confirmAction(`Seek group "${name}" on "${queue}" ${what}?`, 'Seek'))
      act('Seek done', () => api('POST', '/api/v1/consumer-groups/' + enc(name) + '/queues/' + enc(queue) + '/seek', body), g.reload);
  };
  const del = async (queue) => {
    if (await confirmAction(`Delete group "${name}" on "${queue}"? Its positions are forgotten.`, 'Delete group'))
      act('Group deleted', () => api('DELETE', '/api/v1/consumer-groups/' + enc(name) + '/queues/' + enc(queue)), () => go('/groups'));
  };
  const rw = can(me, 'read-write');
  return html`<header class="top"><h1>Group ${name}</h1></header><${Err} error=${g.error} />
    ${g.data && Object.entries(g.data).map(([queue, gq]) => html`<h2>on <${Link} to=${'/queues/' + enc(queue)}>${queue}</${Link}></h2>
      ${rw && html`<div class="row"><label>Seek to <input type="datetime-local" step="1" value=${when} onInput=${(e) => setWhen(e.target.value)} class="seek-time" /></label>
        <button class="primary seek-time-go" disabled=${!when} onClick=${() => seek(queue, false)}>Seek to time</button>
        <button class="seek-end" onClick=${() => seek(queue, true)}>Seek to end</button>
        ${can(me, 'admin') && html`<button class="danger" onClick=${() => del(queue)}>Delete</button>`}</div>`}
      <div class="panel"><${Table} rows=${gq.partitions} keyOf=${(l) => l.partitionId} cols=${[
        { k: 'partition', label: 'Partition' },
        { k: 'offsetLag', label: 'Lag', num: true },
        { k: 'timeLagSeconds', label: 'Time lag', num: true, render: (l) => fmtDur(l.timeLagSeconds) },
        { k: 'totalConsumed', label: 'Consumed', num: true },
        { k: 'lastConsumedAt', label: 'Last consumed', render: (l) => html`<${Ago} t=${l.lastConsumedAt} />` },
        { k: 'leaseActive', label: 'Lease', render: (l) => (l.leaseActive ? html`<span class="pill ok">leased</span>` : '') },
      ]} /></div>`)}`;
}

function Traces({ params }) {
  const [name, setName] = useState(params.get('name') || '');
  const [q, setQ] = useState(name);
  const names = usePoll(() => get('/api/v1/traces/names?limit=100'), 0, []);
  const found = usePoll(() => (q ? get('/api/v1/traces/by-name/' + enc(q) + '?limit=200') : Promise.resolve(null)), 0, [q]);
  const search = (e) => { e.preventDefault(); setQ(name.trim()); };
  const traces = found.data ? [...found.data.traces].sort((a, b) => (a.created_at < b.created_at ? -1 : 1)) : [];
  return html`<header class="top"><h1>Traces</h1></header>
    <form class="row" onSubmit=${search}><input list="trace-names" placeholder="trace name" value=${name} onInput=${(e) => setName(e.target.value)} aria-label="trace name" id="trace-name" />
      <datalist id="trace-names">${(names.data ? names.data.trace_names : []).map((n) => html`<option value=${typeof n === 'string' ? n : n.trace_name || n.name} />`)}</datalist>
      <button class="primary">Search</button></form>
    <${Err} error=${found.error || names.error} />
    ${!q && html`<div class="empty">Traces are recorded by consumers (POST /api/v1/traces with traceNames); search one by its name.
      ${names.data && names.data.total === 0 ? ' No trace has been recorded yet.' : ''}</div>`}
    ${q && found.data && html`<div class="panel">${traces.length ? html`<ul class="timeline" id="timeline">${traces.map((t) => html`<li key=${t.id}>
      <div><strong>${t.event_type}</strong> · ${t.queue_name}/${t.partition_name} · ${t.consumer_group} <span class="muted">· <${Ago} t=${t.created_at} /> · ${new Date(t.created_at).toISOString()}</span></div>
      <pre>${JSON.stringify(t.data)}</pre></li>`)}</ul>` : html`<div class="empty">No trace named "${q}".</div>`}</div>`}`;
}

function System({ me }) {
  const m = usePoll(() => get('/api/v1/system/maintenance'), 5000, []);
  const sys = usePoll(() => get('/api/v1/analytics/system-metrics'), 30000, []);
  const pg = usePoll(() => get('/api/v1/analytics/postgres-stats'), 30000, []);
  const health = usePoll(() => get('/health'), 10000, []);
  const admin = can(me, 'admin');
  const toggle = async (path, on, what) => {
    const text = on ? `Switch ${what} on? ${path.endsWith('pop') ? 'Pops deliver nothing until it is off.' : 'Pushes go to the disk spool until it is off.'}` : `Switch ${what} off?`;
    if (await confirmAction(text, on ? 'Switch on' : 'Switch off')) act(what + (on ? ' on' : ' off'), () => api('POST', path, { enabled: on }), m.reload);
  };
  const d = m.data;
  const rep = sys.data && sys.data.replicas && sys.data.replicas[0];
  const last = rep && rep.timeSeries.length ? rep.timeSeries[rep.timeSeries.length - 1].metrics : null;
  return html`<header class="top"><h1>System</h1></header><${Err} error=${m.error} />
    ${d && html`<div class="cards">
      <${Card} k="Push maintenance" v=${d.maintenanceMode ? 'on' : 'off'} id="maint" cls=${d.maintenanceMode ? 'warn' : 'ok'} />
      <${Card} k="Pop maintenance" v=${d.popMaintenanceMode ? 'on' : 'off'} id="pop-maint" cls=${d.popMaintenanceMode ? 'warn' : 'ok'} />
      <${Card} k="Spooled messages" v=${fmtNum(d.bufferStats.pendingCount)} id="spool-pending" />
      <${Card} k="Spool failures" v=${fmtNum(d.bufferStats.failedCount)} />
      <${Card} k="Database" v=${d.bufferStats.dbHealthy ? 'healthy' : 'down'} cls=${d.bufferStats.dbHealthy ? 'ok' : 'bad'} />
      ${health.data && html`<${Card} k="Engine" v=${health.data.engine} /><${Card} k="Version" v=${health.data.version} />`}
    </div>
    ${admin && html`<div class="row">
      <button id="maint-toggle" class=${d.maintenanceMode ? 'primary' : 'danger'} onClick=${() => toggle('/api/v1/system/maintenance', !d.maintenanceMode, 'push maintenance')}>${d.maintenanceMode ? 'Switch push maintenance off' : 'Switch push maintenance on'}</button>
      <button id="pop-maint-toggle" class=${d.popMaintenanceMode ? 'primary' : 'danger'} onClick=${() => toggle('/api/v1/system/maintenance/pop', !d.popMaintenanceMode, 'pop maintenance')}>${d.popMaintenanceMode ? 'Switch pop maintenance off' : 'Switch pop maintenance on'}</button></div>`}`}
    ${last && html`<h2>Process</h2><div class="cards">
      <${Card} k="Memory (RSS)" v=${fmtBytes(last.memory.rss_bytes.last)} />
      <${Card} k="Heap" v=${fmtBytes(last.runtime.heap_bytes.last)} />
      <${Card} k="Goroutines" v=${fmtNum(last.runtime.goroutines.last)} />
      <${Card} k="Parked long polls" v=${fmtNum(last.long_polls.parked.last)} />
      <${Card} k="DB pool (active/size)" v=${fmtNum(last.database.pool_active.last) + ' / ' + fmtNum(last.database.pool_size.last)} />
    </div>`}
    ${pg.data && html`<h2>Database</h2><div class="panel"><pre>${JSON.stringify(pg.data, null, 2)}</pre></div>`}
    ${admin && html`<${Migration} onEnd=${m.reload} />`}`;
}

// Migration drives Queen's /api/v1/migration/* routes: test a target
// PostgreSQL, start the copy of this broker's data into it, follow its
// status (every second while it runs), validate the counts, reset. A broker
// without the start route (404) offers the connection test only.
const RUNNING = ['dumping', 'restoring']; // Queen's names of a running copy's phases: preparing, writing
function Migration({ onEnd }) {
  const [t, setT] = useState({ host: '', port: '5432', database: '', user: '', password: '', ssl: false, schema: 'queen' });
  const [conn, setConn] = useState(null);
  const [valid, setValid] = useState(null);
  const [busy, setBusy] = useState('');
  const [fast, setFast] = useState(false);
  const st = usePoll(() => get('/api/v1/migration/status').catch((e) => (e.status === 404 ? { unavailable: true } : Promise.reject(e))), fast ? 1000 : 30000, []);
  const s = st.data;
  const running = !!(s && RUNNING.includes(s.status));
  const was = useRef(false);
  useEffect(() => { setFast(running); if (was.current && !running && onEnd) onEnd(); was.current = running; }, [running]);
  const full = s && !s.unavailable;
  const set = (k) => (e) => setT({ ...t, [k]: e.target.type === 'checkbox' ? e.target.checked : e.target.value });
  const target = () => ({ host: t.host.trim(), port: t.port.trim(), database: t.database.trim(), user: t.user.trim(), password: t.password, ssl: t.ssl });
  const ready = t.host.trim() && t.database.trim() && t.user.trim();
  const run = async (what, fn) => { setBusy(what); try { return await fn(); } finally { setBusy(''); } };
  const test = () => run('test', async () => {
    try { setConn(await api('POST', '/api/v1/migration/test-connection', target())); } catch (e) { setConn({ success: false, error: e.message }); }
  });
  const start = async () => {
    if (!(await confirmAction(`Copy this broker's data into ${t.database}@${t.host} (schema ${t.schema || 'queen'})? Pushes are held while it runs; a target that is not empty is refused.`, 'Start migration'))) return;
    await run('start', () => act('Migration started', () => api('POST', '/api/v1/migration/start', { ...target(), schema: t.schema.trim() }), () => { setValid(null); setFast(true); st.reload(); }));
  };
  const validate = () => run('validate', async () => {
    try { setValid(await api('POST', '/api/v1/migration/validate', { ...target(), schema: t.schema.trim() })); } catch (e) { setValid({ success: false, error: e.message }); }
  });
  const reset = async () => {
    if (await confirmAction('Forget the last migration\'s state? The target database is left as it is.', 'Reset'))
      act('Migration state reset', () => api('POST', '/api/v1/migration/reset'), () => { setValid(null); st.reload(); });
  };
  const field = (k, label, type = 'text') => html`<label>${label}<input id=${'mig-' + k} type=${type} value=${t[k]} onInput=${set(k)} autocomplete="off" /></label>`;
  return html`<h2>Migration to another PostgreSQL</h2><div class="panel" id="migration">
    <p class="muted">Copies every queue, message, consumer group position and dead letter of this broker, with its key/value state, timers, ephemeral queues, stream queries and webhook settings, into queen-go's schema on a PostgreSQL that holds no queues yet; brokers pointed at it then continue where this one stopped. The password is sent to this broker only and never shown again.</p>
    <div class="form">${field('host', 'Host')}${field('port', 'Port')}${field('database', 'Database')}${field('user', 'User')}${field('password', 'Password', 'password')}
      ${full && field('schema', 'Schema')}<label class="check"><input id="mig-ssl" type="checkbox" checked=${t.ssl} onChange=${set('ssl')} /> require TLS</label></div>
    <div class="row"><button id="mig-test" disabled=${!ready || busy} onClick=${test}>${busy === 'test' ? 'Testing…' : 'Test connection'}</button>
      ${full && html`<button id="mig-start" class="danger" disabled=${!ready || busy || running} onClick=${start}>Start migration</button>
        <button id="mig-validate" disabled=${!ready || busy || running} onClick=${validate}>${busy === 'validate' ? 'Validating…' : 'Validate'}</button>
        <button id="mig-reset" disabled=${busy || running || !s || s.status === 'idle'} onClick=${reset}>Reset</button>`}</div>
    ${conn && html`<div id="mig-conn" class=${conn.success ? 'ok' : 'error'} role="status">${conn.success ? html`Connection successful · <span class="muted">${conn.version}</span>` : 'Connection failed: ' + (conn.error || conn.message)}</div>`}
    ${s && s.unavailable && html`<p class="muted" id="mig-unavailable">This broker answers the connection test only; starting a migration needs a broker with the migration routes.</p>`}
    ${full && html`<div class="cards"><${Card} k="Migration" v=${s.status} id="mig-status" cls=${s.status === 'error' ? 'bad' : s.status === 'complete' ? 'ok' : running ? 'warn' : ''} />
      <${Card} k="Elapsed" v=${fmtDur(s.elapsedSeconds)} id="mig-elapsed" />
      ${s.totalMessages > 0 && html`<${Card} k="Messages copied" v=${fmtNum(s.messages) + ' / ' + fmtNum(s.totalMessages)} id="mig-progress" />`}</div>
      ${s.currentStep && html`<p id="mig-step"><span class="muted">Step:</span> ${s.currentStep}</p>`}
      ${s.error && html`<div class="error" role="alert" id="mig-error">${s.error}</div>`}`}
    <${Err} error=${st.error} />
    ${valid && (valid.error ? html`<div class="error" role="alert" id="mig-valid">${valid.error}</div>` : html`<div id="mig-valid">
      <p class=${valid.allMatch ? 'ok' : 'bad'}>${valid.allMatch ? 'Every count matches.' : 'Some counts differ.'}</p>
      <${Table} id="mig-tables" rows=${valid.tables} keyOf=${(r) => r.table} cols=${[
        { k: 'table', label: 'Table' }, { k: 'sourceCount', label: 'Here', num: true }, { k: 'targetCount', label: 'Target', num: true },
        { k: 'match', label: '', render: (r) => (r.match ? html`<span class="pill ok">match</span>` : html`<span class="pill bad">differs</span>`) },
      ]} /></div>`)}
  </div>`;
}

function can(me, level) { return !me || (me.levels || []).includes(level); }

// ---- sign-in ----

function SignIn({ onDone, reason }) {
  const [token, setToken] = useState('');
  const [err, setErr] = useState(reason || null);
  const submit = async (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN, token.trim());
    try { onDone(await get('/auth/me')); } catch (x) { sessionStorage.removeItem(TOKEN); setErr(x.message); }
  };
  return html`<form class="signin" onSubmit=${submit} id="signin"><h1>Sign in to queen</h1>
    <p class="muted">This broker requires a token. Paste a JWT or an API token; it is kept in this tab's session storage only. Behind an identity proxy, sign in through the proxy instead.</p>
    ${err && html`<div class="error" role="alert" id="signin-error">${err}</div>`}
    <textarea id="token" aria-label="token" value=${token} onInput=${(e) => setToken(e.target.value)} autofocus></textarea>
    <div class="row"><button class="primary" id="signin-go" disabled=${!token.trim()}>Sign in</button></div></form>`;
}

// ---- the shell ----

const NAV = [['/', 'Overview'], ['/queues', 'Queues'], ['/groups', 'Consumer groups'], ['/messages', 'Messages'], ['/dlq', 'Dead letters'], ['/traces', 'Traces'], ['/system', 'System']];

function App() {
  const loc = useRoute();
  const [me, setMe] = useState(undefined);
  const [need, setNeed] = useState(null);
  const [theme, setTheme] = useState(localStorage.getItem(THEME) || '');
  useEffect(() => { if (theme) document.documentElement.dataset.theme = theme; else delete document.documentElement.dataset.theme; localStorage.setItem(THEME, theme); }, [theme]);
  useEffect(() => {
    onUnauthorized = () => setNeed('Your token was refused: sign in again.');
    get('/auth/me').then(setMe, (e) => setNeed(e.status === 401 ? '' : e.message));
  }, []);
  useEffect(() => {
    const key = (e) => {
      if (e.target.closest('input,textarea,select') || e.ctrlKey || e.metaKey || e.altKey) return;
      const n = parseInt(e.key, 10);
      if (n >= 1 && n <= NAV.length) { e.preventDefault(); go(NAV[n - 1][0]); }
      if (e.key === '/') { const f = document.querySelector('main input'); if (f) { e.preventDefault(); f.focus(); } }
    };
    addEventListener('keydown', key);
    return () => removeEventListener('keydown', key);
  }, []);
  if (need !== null) return html`<${SignIn} reason=${need} onDone=${(m) => { setMe(m); setNeed(null); }} />`;
  if (me === undefined) return html`<p class="boot">Connecting…</p>`;
  const [p, search] = loc.split('?');
  const params = new URLSearchParams(search || '');
  const parts = p.split('/').filter(Boolean).map(decodeURIComponent);
  let view;
  switch (parts[0]) {
    case undefined: view = html`<${Overview} />`; break;
    case 'queues': view = parts[1] ? html`<${QueueDetail} name=${parts[1]} me=${me} key=${parts[1]} />` : html`<${Queues} me=${me} />`; break;
    case 'groups': view = parts[1] ? html`<${GroupDetail} name=${parts[1]} me=${me} key=${parts[1]} />` : html`<${Groups} />`; break;
    case 'messages': view = html`<${Messages} params=${params} me=${me} key=${search} />`; break;
    case 'dlq': view = html`<${DLQ} params=${params} me=${me} key=${search} />`; break;
    case 'traces': view = html`<${Traces} params=${params} />`; break;
    case 'system': view = html`<${System} me=${me} />`; break;
    default: view = html`<div class="empty">No such page. <${Link} to="/">Back to the overview</${Link}></div>`;
  }
  const signOut = async () => { await api('POST', '/auth/logout').catch(() => {}); sessionStorage.removeItem(TOKEN); setMe(undefined); setNeed(''); };
  const cur = '/' + (parts[0] || '');
  return html`<div class="shell"><nav class="side" aria-label="views"><div class="brand">queen</div>
      ${NAV.map(([to, label], i) => html`<${Link} to=${to} class=${cur === to ? 'on' : ''} aria-current=${cur === to ? 'page' : undefined} title=${'key ' + (i + 1)}>${label}</${Link}>`)}
      <div class="who" id="who">${me.authEnabled ? html`Signed in as <strong>${me.username || me.sub}</strong> (${me.role})<br /><button onClick=${signOut} id="signout">Sign out</button>` : 'Authentication off'}
        <br /><label>Theme <select value=${theme} onChange=${(e) => setTheme(e.target.value)} aria-label="theme"><option value="">system</option><option value="light">light</option><option value="dark">dark</option></select></label></div></nav>
    <main>${view}</main><${ConfirmHost} /><${Toast} /></div>`;
}

render(html`<${App} />`, document.getElementById('app'));
