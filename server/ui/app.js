/*
 * rigfit's page: reads the daemon's own API (relative URLs, so it works behind a proxy prefix)
 * and draws the answers as SVG. No framework, no file from another host.
 */
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
const GIB = 1024 * 1024 * 1024;
const QUANTS = ['F16', 'BF16', 'Q8_0', 'Q6_K', 'Q5_K_M', 'Q4_K_M', 'Q4_0', 'IQ4_XS', 'Q3_K_M', 'Q2_K'];
const PARTS = [
  ['weights_bytes', 'weights', '--c-weights'],
  ['kv_cache_bytes', 'KV cache', '--c-kv'],
  ['compute_bytes', 'compute', '--c-compute'],
  ['overhead_bytes', 'overhead', '--c-overhead'],
];

const state = { token: sessionStorage.getItem('rigfit-token') || '', hw: null, models: [], devices: [] };

/* ---- errors: every script error is shown and kept in #js-errors (the browser test reads it) */
function reportError(msg) {
  const list = document.getElementById('js-errors');
  const li = document.createElement('li');
  li.textContent = String(msg);
  list.appendChild(li);
  setStatus('Error: ' + msg);
}
const consoleError = console.error.bind(console);
console.error = (...args) => { reportError(args.join(' ')); consoleError(...args); };
window.addEventListener('error', (e) => reportError(e.message || 'script error'));
window.addEventListener('unhandledrejection', (e) => reportError(e.reason && e.reason.message ? e.reason.message : e.reason));

function setStatus(text) { document.getElementById('status').textContent = text || ''; }

/* ---- the API ------------------------------------------------------------------------------ */
class ApiError extends Error {
  constructor(status, body) {
    const err = body && body.error ? body.error : null;
    super(err ? err.message + (err.field ? ' (' + err.field + ')' : '') : 'HTTP ' + status);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let json = null;
  const text = await res.text();
  if (text) {
    try { json = JSON.parse(text); } catch (e) { json = null; }
  }
  if (res.status === 401) {
    document.getElementById('token-form').hidden = false;
    throw new ApiError(401, json);
  }
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

/* ---- formatting --------------------------------------------------------------------------- */
function gib(bytes) { return bytes == null ? 'unknown' : (bytes / GIB).toFixed(bytes >= 100 * GIB ? 0 : 1) + ' GiB'; }
function num(x, digits) { return x == null ? 'unknown' : Number(x).toLocaleString('en', { maximumFractionDigits: digits === undefined ? 1 : digits }); }
function tokens(n) { return n >= 1024 ? Math.round(n / 1024) + 'k' : String(n); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
function fact(dl, label, value) { dl.append(el('div', {}, el('dt', {}, label), el('dd', {}, value))); }
function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

/* ---- SVG charts --------------------------------------------------------------------------- */
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/* A line chart of memory (GiB) against a token count on a log2 axis, with the budget as a
 * dashed line and the largest count that fits marked. series: [{name, cls, points:[[x, bytes]]}] */
function lineChart(target, opts) {
  const W = 560, H = 300, L = 58, R = 16, T = 14, B = 44;
  const all = opts.series.flatMap((s) => s.points);
  target.replaceChildren();
  if (!all.length) { target.append(el('p', { class: 'muted' }, opts.empty || 'nothing to draw')); return; }
  const xs = all.map((p) => p[0]);
  const x0 = Math.log2(Math.min(...xs)), x1 = Math.max(Math.log2(Math.max(...xs)), x0 + 1);
  const ymax = niceMax(Math.max(...all.map((p) => p[1]), opts.budget || 0) / GIB * 1.05);
  const sx = (x) => L + (Math.log2(x) - x0) / (x1 - x0) * (W - L - R);
  const sy = (bytes) => T + (1 - bytes / GIB / ymax) * (H - T - B);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': opts.label });
  root.append(svg('title', {}, opts.label));
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, y = sy(v * GIB);
    root.append(svg('line', { class: 'grid', x1: L, x2: W - R, y1: y, y2: y }));
    root.append(svg('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, v.toFixed(v < 10 ? 1 : 0)));
  }
  root.append(svg('text', { x: 12, y: T + (H - T - B) / 2, transform: `rotate(-90 12 ${T + (H - T - B) / 2})`, 'text-anchor': 'middle' }, 'GiB'));
  for (let e = Math.ceil(x0); e <= Math.floor(x1); e++) {
    const x = sx(Math.pow(2, e));
    root.append(svg('line', { class: 'grid', x1: x, x2: x, y1: T, y2: H - B }));
    root.append(svg('text', { x, y: H - B + 16, 'text-anchor': 'middle' }, tokens(Math.pow(2, e))));
  }
  root.append(svg('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, opts.xlabel));
  root.append(svg('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: cssVar('--muted') }));
  if (opts.budget > 0) {
    const y = sy(opts.budget);
    root.append(svg('line', { class: 'budget', x1: L, x2: W - R, y1: y, y2: y, 'data-role': 'budget' }));
    root.append(svg('text', { x: W - R, y: y - 5, 'text-anchor': 'end' }, 'budget ' + gib(opts.budget)));
  }
  for (const s of opts.series) {
    if (!s.points.length) continue;
    const d = s.points.map((p, i) => (i ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' + sy(p[1]).toFixed(1)).join(' ');
    root.append(svg('path', { class: s.cls || 'series', d, 'data-role': 'series' }));
    for (const p of s.points) {
      const c = svg('circle', { cx: sx(p[0]), cy: sy(p[1]), r: 3.5, fill: cssVar('--accent') });
      c.append(svg('title', {}, `${s.name}: ${tokens(p[0])} tokens, ${gib(p[1])}`));
      root.append(c);
    }
  }
  if (opts.maxFit > 0 && Math.log2(opts.maxFit) >= x0 && Math.log2(opts.maxFit) <= x1 + 1e-9) {
    const x = sx(opts.maxFit);
    root.append(svg('line', { class: 'maxfit', x1: x, x2: x, y1: T, y2: H - B, 'data-role': 'max-fit' }));
    const right = x > (L + W - R) / 2;
    root.append(svg('text', { x: right ? x - 4 : x + 4, y: T + 12, 'text-anchor': right ? 'end' : 'start', 'data-role': 'max-fit-label' }, 'largest that fits: ' + tokens(opts.maxFit)));
  }
  target.append(root);
}

/* Stacked horizontal bars, one per device: weights, KV, compute, overhead against its budget. */
function deviceBars(target, devices) {
  const W = 560, rowH = 34, L = 110, R = 16, T = 8;
  const H = T + devices.length * (rowH + 14) + 10;
  const max = Math.max(...devices.map((d) => Math.max(d.bytes, d.budget_bytes || 0)), 1);
  const sx = (b) => (b / max) * (W - L - R);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'memory per device' });
  devices.forEach((d, i) => {
    const y = T + i * (rowH + 14);
    root.append(svg('text', { x: L - 8, y: y + rowH / 2 + 4, 'text-anchor': 'end' }, d.device));
    if (d.budget_bytes > 0) root.append(svg('rect', { class: 'track', x: L, y, width: sx(d.budget_bytes), height: rowH }));
    let x = L;
    for (const [key, name, color] of PARTS) {
      const w = sx(d[key] || 0);
      if (w <= 0) continue;
      const r = svg('rect', { x, y, width: w, height: rowH, fill: cssVar(color) });
      r.append(svg('title', {}, `${name}: ${gib(d[key])}`));
      root.append(r);
      x += w;
    }
    if (d.budget_bytes > 0) {
      const bx = L + sx(d.budget_bytes);
      root.append(svg('line', { class: 'budget', x1: bx, x2: bx, y1: y - 4, y2: y + rowH + 4, 'data-role': 'budget' }));
    }
    root.append(svg('text', { x: L, y: y + rowH + 12 }, `${gib(d.bytes)} of ${gib(d.budget_bytes)}`));
  });
  target.replaceChildren(root, legend());
}

function legend() {
  const box = el('div', { class: 'legend' });
  for (const [, name, color] of PARTS) {
    const sw = el('i', {}); sw.style.background = cssVar(color);
    box.append(el('span', {}, sw, name));
  }
  const b = el('i', {}); b.style.background = cssVar('--bad');
  box.append(el('span', {}, b, 'budget'));
  return box;
}

/* A scatter of points {x, y, r, label}; diagonal: draw y = x. */
function scatter(target, pts, opts) {
  const W = 560, H = 300, L = 58, R = 16, T = 14, B = 44;
  target.replaceChildren();
  if (!pts.length) { target.append(el('p', { class: 'muted' }, opts.empty)); return; }
  const xmax = niceMax(Math.max(...pts.map((p) => p.x)) * 1.08);
  const ymin = opts.ymin !== undefined ? opts.ymin : 0;
  const ymax = opts.ymax !== undefined ? opts.ymax : niceMax(Math.max(...pts.map((p) => p.y)) * 1.08);
  const sx = (v) => L + v / xmax * (W - L - R);
  const sy = (v) => T + (1 - (v - ymin) / (ymax - ymin)) * (H - T - B);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': opts.label });
  root.append(svg('title', {}, opts.label));
  for (let i = 0; i <= 4; i++) {
    const v = ymin + (ymax - ymin) * i / 4;
    root.append(svg('line', { class: 'grid', x1: L, x2: W - R, y1: sy(v), y2: sy(v) }));
    root.append(svg('text', { x: L - 6, y: sy(v) + 4, 'text-anchor': 'end' }, num(v, 1)));
    const xv = xmax * i / 4;
    root.append(svg('text', { x: sx(xv), y: H - B + 16, 'text-anchor': 'middle' }, num(xv, 0)));
  }
  root.append(svg('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, opts.xlabel));
  root.append(svg('text', { x: 12, y: T + (H - T - B) / 2, transform: `rotate(-90 12 ${T + (H - T - B) / 2})`, 'text-anchor': 'middle' }, opts.ylabel));
  if (opts.diagonal) root.append(svg('line', { class: 'grid', x1: sx(0), y1: sy(0), x2: sx(Math.min(xmax, ymax)), y2: sy(Math.min(xmax, ymax)) }));
  for (const p of pts) {
    const c = svg('circle', { cx: sx(p.x), cy: sy(p.y), r: p.r || 5, fill: cssVar(p.chosen ? '--ok' : '--accent'), 'fill-opacity': 0.75, 'data-role': 'point' });
    c.append(svg('title', {}, p.label));
    root.append(c);
  }
  target.append(root);
}

/* ---- this machine ------------------------------------------------------------------------- */
function renderHardware(hw) {
  const card = document.getElementById('hw-card');
  card.replaceChildren();
  const cpu = hw.cpu || {};
  const mem = hw.memory || {};
  const cont = (hw.host && hw.host.container) || {};
  card.append(el('div', { id: 'hw-cpu' },
    el('h3', {}, 'CPU'),
    el('p', { 'data-field': 'cpu-model' }, cpu.model || 'unknown CPU'),
    el('p', { class: 'muted' }, `${cpu.physical_cores ?? '?'} physical / ${cpu.logical_cores ?? '?'} logical cores, ${cpu.arch || ''}`),
    el('p', { class: 'muted' }, 'ISA: ' + ((cpu.isa || []).join(' ') || 'none reported'))));
  card.append(el('div', {},
    el('h3', {}, 'Memory'),
    el('p', {}, `${gib(mem.total_bytes)} total, ${gib(mem.available_bytes)} available`),
    el('p', { class: 'muted' }, cont.cgroup_memory_limit_bytes ? 'container limit ' + gib(cont.cgroup_memory_limit_bytes) : 'no container memory limit'),
    cont.cpu_quota_cores ? el('p', { class: 'muted' }, 'container CPU quota ' + cont.cpu_quota_cores + ' cores') : ''));
  const gpus = el('div', {}, el('h3', {}, 'GPUs'));
  if (!hw.gpus || !hw.gpus.length) gpus.append(el('p', {}, 'No GPU found: models run on the CPU.'));
  for (const g of hw.gpus || []) {
    gpus.append(el('p', {}, `${g.index}: ${g.name}`),
      el('p', { class: 'muted' }, `${gib(g.memory_free_bytes)} free of ${gib(g.memory_total_bytes)}` + (g.unified_memory ? ' (unified)' : '')));
  }
  card.append(gpus);
  card.append(el('div', {},
    el('h3', {}, 'Class'),
    el('p', {}, `${hw.platform} / ${hw.backend}, tier ${hw.compute_profile}`),
    el('p', { class: 'muted' }, hw.profile_id ? 'profile ' + hw.profile_id : 'no device profile'),
    el('p', { class: 'muted' }, `scanned ${hw.scanned_at} in ${num(hw.scan_duration_ms, 1)} ms`)));
  card.dataset.state = 'ready';
  for (const w of hw.warnings || []) card.append(el('p', { class: 'muted' }, 'warning: ' + w));
}

async function loadHardware() {
  state.hw = await api('GET', 'api/hardware');
  renderHardware(state.hw);
}

/* ---- catalogs ----------------------------------------------------------------------------- */
async function loadProfiles(kind) {
  const out = [];
  let after = '';
  for (let page = 0; page < 20; page++) {
    const r = await api('GET', `api/profiles?kind=${kind}&limit=1000` + (after ? '&after=' + encodeURIComponent(after) : ''));
    out.push(...r.profiles);
    if (!r.next_after) break;
    after = r.next_after;
  }
  return out;
}

function fillSelect(select, items, pick) {
  select.replaceChildren(...items.map(([value, text]) => el('option', { value }, text)));
  if (pick) select.value = pick;
}

async function loadCatalogs() {
  const [models, devices, local] = await Promise.all([loadProfiles('model'), loadProfiles('device'),
    api('GET', 'api/models?source=local').then((r) => r.models || []).catch(() => [])]);
  state.models = models.map((p) => p.profile).filter((m) => m && m.id);
  state.models.sort((a, b) => (a.name || a.id).localeCompare(b.name || b.id));
  state.local = local;
  /* The model field takes anything /api/estimate resolves; the list offers this host's own
   * files first (GGUF files and folders under --models-dir, the Hugging Face cache, Ollama's
   * store: GET /api/models), then the catalog. */
  const list = document.getElementById('f-models');
  list.replaceChildren(
    ...local.map((m) => el('option', { value: m.id }, `on this host: ${m.where}, ${gib(m.size_bytes)}`)),
    ...state.models.map((m) => el('option', { value: m.id }, m.name || m.id)));
  const field = document.getElementById('f-model');
  field.value = state.models.some((m) => m.id === 'meta-llama/Llama-3.1-8B') ? 'meta-llama/Llama-3.1-8B' : (state.models[0] || {}).id || '';
  state.devices = devices.map((p) => p.profile).filter((d) => d && d.name && d.kind !== 'cpu' && (d.memory_gib || d.memory_gb || d.memory_bytes));
  const sel = document.getElementById('f-hw');
  for (const d of state.devices) sel.append(el('option', { value: d.name }, d.name));
  fillSelect(document.getElementById('f-quant'), QUANTS.map((q) => [q, q]), 'Q4_K_M');
  applyQuery();
}

/* A link may preset the form: ?model=ID&quant=Q&ctx=N&use_case=U&gpu=NAME&gpus=N. */
function applyQuery() {
  const q = new URLSearchParams(location.search);
  const set = (id, key) => { if (q.get(key)) document.getElementById(id).value = q.get(key); };
  set('f-model', 'model');
  set('f-quant', 'quant');
  set('f-ctx', 'ctx');
  set('f-usecase', 'use_case');
  set('f-hw-count', 'gpus');
  if (q.get('gpu')) {
    const sel = document.getElementById('f-hw');
    if (![...sel.options].some((o) => o.value === q.get('gpu'))) sel.append(el('option', { value: q.get('gpu') }, q.get('gpu')));
    sel.value = q.get('gpu');
  }
}

/* The model object a request sends for the model field, as /api/estimate takes it: one of this
 * host's models as /api/models lists it, a .gguf path, a folder (an absolute path), else an id
 * (a catalog id or alias, a Hugging Face id, an Ollama tag), resolved by the API itself. */
function modelRef(value) {
  const v = (value || '').trim();
  if (!v) return null;
  const m = (state.local || []).find((x) => x.id === v);
  if (m && m.where === 'models_dir') return m.format === 'gguf' ? { gguf: m.id } : { path: m.id };
  if (m) return { id: m.id };
  if (v.toLowerCase().endsWith('.gguf')) return { gguf: v };
  if (v.startsWith('/')) return { path: v };
  return { id: v };
}

/* Files that carry their own quantization take no quant in the request. */
function ownsQuant(model) {
  return Boolean(model.gguf) || (model.id && model.id.includes(':'));
}

/* The hardware part of a request: this host's scan (nothing to send) or N of a device. */
function hardwareField() {
  const name = document.getElementById('f-hw').value;
  if (!name) return {};
  const n = Math.max(1, Math.min(16, parseInt(document.getElementById('f-hw-count').value, 10) || 1));
  return { hardware: { gpus: Array.from({ length: n }, () => ({ name })) } };
}

/* ---- will it fit -------------------------------------------------------------------------- */
function verdictText(est) {
  const v = document.getElementById('fit-verdict');
  const u = est.utilization != null ? ` (${Math.round(est.utilization * 100)}% of the budget)` : '';
  v.className = 'verdict ' + (est.fits ? (est.fit_band === 'tight' ? 'tight' : 'ok') : 'over');
  v.dataset.fits = String(est.fits);
  v.textContent = est.fits ? `Fits: ${est.fit_band}${u}.` : `Does not fit${u}.`;
}

function hostAsDevice(est) {
  const m = est.memory;
  return {
    device: 'host RAM', bytes: m.host_bytes,
    weights_bytes: m.weights_bytes - m.per_device.reduce((s, d) => s + d.weights_bytes, 0),
    kv_cache_bytes: m.kv_cache_bytes - m.per_device.reduce((s, d) => s + d.kv_cache_bytes, 0),
    compute_bytes: m.compute_bytes - m.per_device.reduce((s, d) => s + d.compute_bytes, 0) + (m.output_buffer_bytes || 0),
    overhead_bytes: 0,
    budget_bytes: hostBudget(est),
  };
}

/* The host's budget: the answer's utilisation is the highest need over budget among the
 * devices and the host, so when nothing runs on a GPU it is the host's own ratio. */
function hostBudget(est) {
  const m = est.memory;
  if (m.host_budget_bytes) return m.host_budget_bytes;
  const onGpu = (m.per_device || []).some((d) => d.bytes > 0);
  return !onGpu && est.utilization > 0 ? m.host_bytes / est.utilization : null;
}

/* The figure the budget line compares with: the GPUs' sum when the model runs on GPUs, else
 * host RAM. */
function fitFigure(est) {
  const devs = est.memory.per_device || [];
  if (devs.length && est.settings && est.settings.n_gpu_layers !== 0) {
    return { bytes: devs.reduce((s, d) => s + d.bytes, 0), budget: devs.reduce((s, d) => s + (d.budget_bytes || 0), 0), what: 'GPU memory' };
  }
  return { bytes: est.memory.host_bytes, budget: hostBudget(est), what: 'host RAM' };
}

async function runFit(ev) {
  if (ev) ev.preventDefault();
  setStatus('');
  const model = modelRef(document.getElementById('f-model').value);
  if (!model) {
    document.getElementById('fit-verdict').textContent = 'No model profiles are loaded (see --profiles).';
    return;
  }
  const quant = document.getElementById('f-quant').value;
  const nCtx = parseInt(document.getElementById('f-ctx').value, 10) || 8192;
  const hw = hardwareField();
  const base = ownsQuant(model) ? { model, ...hw } : { model, quant, ...hw };
  let est;
  try {
    est = await api('POST', 'api/estimate', { ...base, n_ctx: nCtx });
  } catch (e) {
    document.getElementById('fit-verdict').textContent = 'No estimate: ' + e.message;
    return;
  }
  verdictText(est);
  const devs = (est.memory.per_device || []).slice();
  if (est.memory.host_bytes > 0) devs.push(hostAsDevice(est));
  deviceBars(document.getElementById('fit-bars'), devs);
  const speed = document.getElementById('fit-speed');
  speed.replaceChildren();
  fact(speed, 'decode', num(est.speed.decode_tokens_per_s) + ' tok/s');
  fact(speed, 'prefill', num(est.speed.prefill_tokens_per_s, 0) + ' tok/s');
  fact(speed, 'total memory', gib(est.memory.total_bytes));
  fact(speed, 'speed basis', est.speed.basis);
  const answers = await drawContextChart(base, est);
  await drawConfig(model, hw, est, answers[0], ownsQuant(model) ? null : quant, nCtx);
}

/* Draws memory against context; returns the estimates, the smallest context first. Asks for
 * the largest context that fits only when the smallest one fits: a model that fits nowhere is
 * answered by the curve, not by a refusal. */
async function drawContextChart(base, est) {
  const limit = (est.model && est.model.max_position_embeddings) || 131072;
  const xs = [];
  for (let x = 512; x <= limit; x *= 2) xs.push(x);
  if (xs[xs.length - 1] !== limit && limit > 512) xs.push(limit);
  const answers = await Promise.all(xs.map((n) => api('POST', 'api/estimate', { ...base, n_ctx: n }).catch(() => null)));
  const maxFit = answers[0] && answers[0].fits ? await api('POST', 'api/estimate', { ...base, n_ctx: 'max' }).catch(() => null) : null;
  const pts = [];
  let budget = null, what = 'memory';
  answers.forEach((a, i) => {
    if (!a) return;
    const f = fitFigure(a);
    pts.push([xs[i], f.bytes]);
    budget = f.budget; what = f.what;
  });
  const best = maxFit && maxFit.fits ? maxFit.settings.n_ctx : 0;
  lineChart(document.getElementById('fit-ctx-chart'), {
    label: `${what} against context for ${base.model.id || base.model.gguf || base.model.path} ${base.quant || ''}`,
    xlabel: 'context (tokens)', series: [{ name: what, points: pts }], budget, maxFit: best,
    empty: 'the estimator gave no answer for this model',
  });
  return answers;
}

/* The planner's share of a GPU (validate's vram_over_90): a setup above it is not planned. */
const PLAN_MAX_UTIL = 0.9;

/* The runtime config, for the quant and context the user picked where they leave the planner's
 * headroom, else for the quant alone, else the planner's own choice; none is asked for when
 * even the smallest quant at the smallest context does not fit (the route would refuse). */
async function drawConfig(model, hw, est, smallest, quant, nCtx) {
  const box = document.getElementById('fit-config');
  const useCase = document.getElementById('f-usecase').value;
  const within = (a) => a && a.fits && a.utilization != null && a.utilization <= PLAN_MAX_UTIL;
  const rq = { model, use_case: useCase, ...hw };
  box.replaceChildren();
  if (within(est)) {
    if (quant) rq.precision = quant;
    rq.n_ctx = nCtx;
  } else if (quant && within(smallest)) {
    rq.precision = quant;
  } else {
    const least = quant ? await api('POST', 'api/estimate', { model, ...hw, quant: QUANTS[QUANTS.length - 1], n_ctx: 512 }).catch(() => null) : smallest;
    if (!least || !least.fits || least.utilization > PLAN_MAX_UTIL * 0.95) {
      box.append(el('p', { id: 'no-config' }, `No ${useCase.replace('_', ' ')} configuration: the model does not fit this hardware at any quantization.`));
      drawTradeoff(null);
      return;
    }
  }
  let cfg;
  try {
    cfg = await api('POST', 'api/config', rq);
  } catch (e) {
    box.append(el('p', {}, `No ${useCase} configuration: ${e.message}`));
    drawTradeoff(null);
    return;
  }
  const pre = el('pre', { id: 'command' }, cfg.command);
  const copy = el('button', { type: 'button', class: 'secondary' }, 'Copy');
  copy.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(cfg.command); copy.textContent = 'Copied'; }
    catch (e) { copy.textContent = 'Select and copy'; }
  });
  const meta = cfg.metadata || {};
  box.append(el('h3', {}, `Runtime config for ${useCase.replace('_', ' ')}`),
    el('p', {}, `${meta.precision}, ${tokens(contextOf(cfg.settings))} context, about ${num(meta.expected_tokens_per_sec)} tok/s`),
    el('div', { class: 'cmd-row' }, pre, copy));
  for (const d of cfg.downgrades || []) box.append(el('p', { class: 'muted' }, d));
  drawTradeoff(cfg);
}

/* The context a config serves: llama.cpp's n_ctx, vLLM's max_model_len. */
function contextOf(settings) {
  return (settings && (settings.n_ctx ?? settings.max_model_len)) || 0;
}

/* ---- the trade-off ------------------------------------------------------------------------ */
function drawTradeoff(cfg) {
  const chart = document.getElementById('trade-chart');
  const table = document.getElementById('trade-table');
  table.replaceChildren();
  if (!cfg) { chart.replaceChildren(el('p', { class: 'muted' }, 'No configuration to compare.')); return; }
  const setups = [];
  /* Quality as the planner rates it: llama.cpp's KL divergence to the F16 model (lower is
   * better), drawn as -log10 so that up is better. */
  const quality = (kld) => (kld > 0 ? -Math.log10(kld) : null);
  const push = (s, chosen) => {
    const settings = s.settings || {};
    const est = s.estimate || {};
    const meta = s.metadata || {};
    const speed = est.decode_tokens_per_s ?? meta.expected_tokens_per_sec ?? null;
    const q = quality(est.kl_divergence ?? meta.kl_divergence);
    setups.push({ chosen, precision: s.precision || meta.precision || settings.quant, n_ctx: contextOf(settings), speed, quality: q, why: s.why || s.reason || (chosen ? 'chosen' : '') });
  };
  push(cfg, true);
  for (const a of cfg.alternatives || []) push(a, false);
  const withQuality = setups.filter((s) => s.quality != null && s.speed != null);
  const maxCtx = Math.max(...setups.map((s) => s.n_ctx || 1));
  if (withQuality.length >= 1) {
    scatter(chart, withQuality.map((s) => ({ x: s.speed, y: s.quality, r: 4 + 8 * Math.sqrt((s.n_ctx || 1) / maxCtx), chosen: s.chosen, label: `${s.precision} ${tokens(s.n_ctx)}: ${num(s.speed)} tok/s, quality ${num(s.quality, 3)}` })),
      { label: 'quality against decode speed', xlabel: 'decode tok/s', ylabel: 'quality (-log10 KL divergence)', ymin: 0, empty: '' });
  } else {
    scatter(chart, setups.filter((s) => s.speed != null).map((s) => ({ x: s.speed, y: s.n_ctx / 1024, chosen: s.chosen, label: `${s.precision} ${tokens(s.n_ctx)}` })),
      { label: 'context against decode speed', xlabel: 'decode tok/s', ylabel: 'context (k tokens)', empty: 'no speed known' });
  }
  const t = el('table', {}, el('tr', {}, el('th', {}, 'setup'), el('th', { class: 'num' }, 'context'), el('th', { class: 'num' }, 'tok/s'), el('th', {}, 'why')));
  for (const s of setups) {
    t.append(el('tr', {}, el('td', {}, (s.chosen ? '\u2605 ' : '') + s.precision), el('td', { class: 'num' }, tokens(s.n_ctx || 0)), el('td', { class: 'num' }, num(s.speed)), el('td', {}, s.why)));
  }
  table.append(el('div', { class: 'scroll' }, t));
}

/* ---- fine-tuning -------------------------------------------------------------------------- */
async function runFinetune(ev) {
  if (ev) ev.preventDefault();
  const out = document.getElementById('ft-result');
  const chart = document.getElementById('ft-chart');
  const task = document.getElementById('ft-task').value;
  const hw = hardwareField();
  out.replaceChildren();
  let d;
  try {
    d = await api('POST', 'api/finetune/detect', { task, ...hw });
  } catch (e) {
    out.append(el('p', {}, 'No fine-tuning plan: ' + e.message));
    return;
  }
  if (!d.recommended_model) {
    out.append(el('p', { 'data-field': 'ft-verdict' }, d.explanation || 'Nothing fits for this task here.'));
    lineChart(chart, { label: 'memory against sequence length', xlabel: 'sequence length', series: [], empty: 'no recommended model to chart' });
    return;
  }
  const s = d.recommended_settings || d.settings || {};
  const dl = el('dl', { class: 'facts' });
  fact(dl, 'model', d.recommended_model);
  const names = { full: 'full fine-tuning', lora: 'LoRA', qlora: 'QLoRA (4-bit)' };
  const mode = s.method || (s.use_4bit ? 'qlora' : 'lora');
  fact(dl, 'method', `${names[mode] || mode}${s.provider ? ', ' + s.provider : ''}`);
  fact(dl, 'max_seq_length', s.max_seq_length);
  fact(dl, 'batch x accumulation', `${s.per_device_train_batch_size} x ${s.gradient_accumulation_steps}`);
  out.append(el('p', { 'data-field': 'ft-verdict' }, d.explanation || ''), dl);
  const limit = Math.max(512, Math.min(32768, s.max_seq_length * 8));
  const xs = [];
  for (let x = 128; x <= limit; x *= 2) xs.push(x);
  const answers = await Promise.all(xs.map((n) => api('POST', 'api/estimate', {
    model: { id: d.recommended_model }, mode, seq_len: n, batch_size: s.per_device_train_batch_size || 1, ...hw,
    ...(s.provider ? { provider: s.provider } : {}),
    ...(typeof s.gradient_checkpointing === 'boolean' ? { gradient_checkpointing: s.gradient_checkpointing } : {}),
    ...(s.optim ? { optimizer: s.optim } : {}),
    ...(typeof s.lora_r === 'number' ? { lora_rank: s.lora_r } : {}),
  }).catch(() => null)));
  const pts = [];
  let budget = null, best = 0;
  answers.forEach((a, i) => {
    if (!a || !a.memory) return;
    const devs = a.memory.per_device || [];
    const bytes = devs.length ? Math.max(...devs.map((x) => x.bytes)) : a.memory.total_bytes;
    if (devs.length) budget = Math.max(...devs.map((x) => x.budget_bytes || 0));
    pts.push([xs[i], bytes]);
    if (a.fits) best = xs[i];
  });
  lineChart(chart, { label: `${mode} memory against sequence length for ${d.recommended_model}`, xlabel: 'sequence length (tokens)', series: [{ name: mode, points: pts }], budget, maxFit: best, empty: 'no estimate' });
}

/* ---- history ------------------------------------------------------------------------------ */
async function loadHistory() {
  const chart = document.getElementById('hist-chart');
  const table = document.getElementById('hist-table');
  if (!state.hw) return;
  let runs = [];
  try {
    runs = (await api('GET', 'api/benchmarks?limit=50&hardware=' + encodeURIComponent(state.hw.fingerprint))).runs || [];
  } catch (e) {
    chart.replaceChildren(el('p', { class: 'muted' }, 'History unavailable: ' + e.message));
    return;
  }
  if (!runs.length) {
    chart.replaceChildren(el('p', { class: 'muted' }, 'No benchmark runs recorded on this host yet.'));
    table.replaceChildren();
    return;
  }
  const rows = await Promise.all(runs.filter((r) => r.decode_tokens_per_s).slice(0, 20).map(async (r) => {
    const est = await api('POST', 'api/estimate', { model: { id: r.model }, quant: r.precision, history: false }).catch(() => null);
    return { run: r, predicted: est && est.speed ? est.speed.decode_tokens_per_s : null };
  }));
  const pts = rows.filter((x) => x.predicted).map((x) => ({ x: x.predicted, y: x.run.decode_tokens_per_s, label: `${x.run.model} ${x.run.precision}: measured ${num(x.run.decode_tokens_per_s)}, predicted ${num(x.predicted)}` }));
  scatter(chart, pts, { label: 'measured against predicted decode speed', xlabel: 'predicted tok/s', ylabel: 'measured tok/s', diagonal: true, empty: 'No run of a model the estimator knows.' });
  const t = el('table', {}, el('tr', {}, el('th', {}, 'model'), el('th', {}, 'precision'), el('th', { class: 'num' }, 'measured'), el('th', { class: 'num' }, 'predicted'), el('th', {}, 'when')));
  for (const x of rows) t.append(el('tr', {}, el('td', {}, x.run.model), el('td', {}, x.run.precision), el('td', { class: 'num' }, num(x.run.decode_tokens_per_s)), el('td', { class: 'num' }, num(x.predicted)), el('td', {}, x.run.measured_at)));
  table.replaceChildren(el('div', { class: 'scroll' }, t));
}

/* ---- start -------------------------------------------------------------------------------- */
async function start() {
  document.getElementById('fit-form').addEventListener('submit', runFit);
  document.getElementById('ft-form').addEventListener('submit', runFinetune);
  document.getElementById('rescan').addEventListener('click', async () => {
    try { state.hw = await api('POST', 'api/hardware/rescan'); renderHardware(state.hw); } catch (e) { setStatus('Rescan: ' + e.message); }
  });
  document.getElementById('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.token = document.getElementById('token').value.trim();
    sessionStorage.setItem('rigfit-token', state.token);
    document.getElementById('token-form').hidden = true;
    start2();
  });
  await start2();
  setInterval(() => loadHardware().catch((e) => setStatus('Hardware: ' + e.message)), 30000);
}

async function start2() {
  try {
    const health = await api('GET', 'healthz');
    document.getElementById('version').textContent = 'rigfit ' + health.version;
    await Promise.all([loadHardware(), loadCatalogs()]);
  } catch (e) {
    setStatus(e.status === 401 ? 'This daemon needs a token: enter it above.' : 'Could not read the daemon: ' + e.message);
    return;
  }
  await Promise.all([runFit(), runFinetune(), loadHistory()]);
  document.body.dataset.ready = 'true';
}

start();
