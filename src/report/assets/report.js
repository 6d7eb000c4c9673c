// inferbench report: draws everything from the JSON in #ib-data (docs/report.md).
// No library: the page must work offline from one file, under a CSP that forbids fetching
// anything, and what it draws (scatter, frontier lines, small time series) is a few hundred lines
// of SVG. Every text that comes from the data is inserted with textContent, never as HTML.
'use strict';
(function () {
  const DATA = JSON.parse(document.getElementById('ib-data').textContent);
  const SVG_NS = 'http://www.w3.org/2000/svg';  // an XML namespace name, never fetched

  // ------------------------------------------------------------------------------------------
  // DOM helpers

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) if (k != null) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function sv(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG_NS, tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) if (k != null) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === 'onclick' || k === 'onchange' || k === 'oninput' || k === 'onmouseenter' ||
          k === 'onmouseleave' || k === 'onmousemove') {
        e.addEventListener(k.slice(2), v);
      } else {
        e.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  function fmt(v, digits) {
    if (v == null || !isFinite(v)) return '\u2013';
    if (digits != null) return v.toFixed(digits);
    const a = Math.abs(v);
    if (Number.isInteger(v) && a < 1e4) return String(v);
    if (a >= 1000) return Math.round(v).toLocaleString('en-US');
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    if (a === 0) return '0';
    return v.toPrecision(3);
  }
  function pctDelta(base, head) {
    if (base == null || head == null || !isFinite(base) || !isFinite(head) || base === 0) return null;
    return (head - base) / Math.abs(base) * 100;
  }

  // ------------------------------------------------------------------------------------------
  // What can be plotted

  const PCTS = { p50: 'median (p50)', p75: 'p75', p90: 'p90', p95: 'p95', p99: 'p99' };
  const PCT_VALUE = { p50: 50, p75: 75, p90: 90, p95: 95, p99: 99 };

  // x metrics: how to read them at a percentile, their unit and which way is better.
  const XS = {
    intvty: { name: 'Interactivity', unit: 'tok/s/user', higher: true,
      get: (p, q) => p.m.intvty[q] },
    e2e_norm: { name: 'E2E-normalized interactivity', unit: 'tok/s/user', higher: true,
      get: (p, q) => p.m.e2e_norm_intvty[q] },
    e2el: { name: 'End-to-end latency', unit: 's', higher: false,
      get: (p, q) => (p.m.e2el_ms[q] == null ? null : p.m.e2el_ms[q] / 1000) },
    ttft: { name: 'Time to first token', unit: 'ms', higher: false,
      get: (p, q) => p.m.ttft_ms[q] },
  };
  const YS = {
    tput: { name: 'Throughput per GPU (input + output)', unit: 'tok/s/GPU', higher: true,
      get: (p) => p.m.tput_per_gpu },
    out_tput: { name: 'Output throughput per GPU', unit: 'tok/s/GPU', higher: true,
      get: (p) => p.m.output_tput_per_gpu },
    cost: { name: 'Cost per million output tokens', unit: '$', higher: false,
      get: (p) => costPerMOut(p) },
    energy: { name: 'Energy per output token (measured)', unit: 'J', higher: false,
      get: (p) => p.m.j_per_output_token },
  };

  // Okabe & Ito's colour-blind safe palette, darkest-contrast first on white; yellow last.
  const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000',
    '#F0E442'];
  // Precision as marker shape (the field's dashboard: fp4 circle, fp8 square, bf16 triangle,
  // int4 diamond), so series stay apart without colour.
  function shapeOf(precision) {
    const p = (precision || '').toLowerCase();
    if (p.includes('fp8')) return 'square';
    if (p.includes('bf16') || p.includes('fp16')) return 'triangle';
    if (p.includes('int4') || p.includes('w4')) return 'diamond';
    return 'circle';
  }

  // Default $/GPU-hour: the "Owning - Hyperscaler" TCO figures InferenceX's dashboard hard-codes
  // (docs/report.md, "Cost"). Other hardware gets a placeholder to edit.
  const TCO = { H100: 1.30, H200: 1.41, B200: 1.95, B300: 2.34, GB200: 2.21, GB300: 2.652,
    MI300X: 1.12, MI325X: 1.28, MI355X: 1.48 };
  const PLACEHOLDER_PRICE = 2.00;

  const configs = new Map(DATA.configs.map((c) => [c.uid, c]));
  const runs = new Map(DATA.runs.map((r) => [r.uid, r]));
  // Accuracy evals have their own section; the charts, panels and tables are throughput's.
  const evals = DATA.points.filter((p) => p.eval);
  for (const p of evals) p.cfg = configs.get(p.config) || null;
  const points = DATA.points.filter((p) => !p.eval);
  for (const p of points) p.cfg = configs.get(p.config) || null;
  const seriesNames = [...new Set(points.map((p) => p.series))].sort();
  const seriesColor = new Map(seriesNames.map((s, i) => [s, PALETTE[i % PALETTE.length]]));
  const hardwareOf = (p) => (p.cfg && p.cfg.identity.hardware) || '?';
  const hardwareKinds = [...new Set(points.map(hardwareOf))].sort();
  const prices = {};
  for (const h of hardwareKinds) {
    const known = TCO[h.toUpperCase()];
    prices[h] = known != null ? known : PLACEHOLDER_PRICE;
  }
  function costPerMOut(p) {
    const t = p.m.output_tput_per_gpu;
    if (t == null || !(t > 0)) return null;
    return prices[hardwareOf(p)] * 1e6 / (t * 3600);
  }

  // Panels: one per model and workload (ISL/OSL, or the agentic trace set).
  const panels = [];
  {
    const byKey = new Map();
    for (const p of points) {
      const key = p.model + '\u0000' + p.workload + '\u0000' + (p.agentic ? 'a' : 'f');
      if (!byKey.has(key)) {
        const panel = { key, model: p.model, workload: p.workload, agentic: p.agentic, points: [] };
        byKey.set(key, panel);
        panels.push(panel);
      }
      byKey.get(key).points.push(p);
    }
    panels.forEach((pn, i) => { pn.id = 'panel-' + i; });
  }
  const anyFixed = panels.some((p) => !p.agentic);
  const anyEnergy = points.some((p) => p.m.j_per_output_token != null);
  const multiRun = DATA.runs.length > 1;
  const anyAgentic = panels.some((p) => p.agentic);
  const offeredPcts = Object.keys(PCTS).filter((q) =>
    points.some((p) => p.m.percentiles.includes(q)));

  // ------------------------------------------------------------------------------------------
  // State, also in the URL hash (#pct=p99&x=e2el&y=tput&point=hp3), so a view can be shared and
  // a headless browser can be pointed at one.

  const state = {
    pct: anyFixed ? 'p50' : 'p90',
    x: anyFixed ? 'intvty' : 'e2e_norm',
    y: 'tput',
    point: null,
    hidden: new Set(),
  };
  function readHash() {
    const h = new URLSearchParams(location.hash.replace(/^#/, ''));
    if (offeredPcts.includes(h.get('pct'))) state.pct = h.get('pct');
    if (XS[h.get('x')]) state.x = h.get('x');
    if (YS[h.get('y')]) state.y = h.get('y');
    if (h.get('point')) state.point = h.get('point');
  }
  function writeHash() {
    const h = new URLSearchParams();
    h.set('pct', state.pct);
    h.set('x', state.x);
    h.set('y', state.y);
    if (state.point) h.set('point', state.point);
    try { history.replaceState(null, '', '#' + h.toString()); } catch (e) { /* file: quirks */ }
  }

  // The percentile a panel uses: the selected one, or the nearest one its points measured (fixed
  // sequence: p50 p90 p99; agentic: p50 p75 p90 p95).
  function panelPct(panel) {
    const have = new Set();
    for (const p of panel.points) for (const q of p.m.percentiles) have.add(q);
    if (have.has(state.pct)) return state.pct;
    let best = null;
    for (const q of have) {
      if (best == null || Math.abs(PCT_VALUE[q] - PCT_VALUE[state.pct]) <
          Math.abs(PCT_VALUE[best] - PCT_VALUE[state.pct])) best = q;
    }
    return best || 'p50';
  }

  // ------------------------------------------------------------------------------------------
  // Pareto frontier (docs/report.md, "Frontiers"). Each axis has a better direction; turn both
  // into "higher is better", sort by x from best to worst (ties: best y first) and sweep, keeping
  // a point when its y beats every point with a better-or-equal x. O(n log n); points with
  // x <= 0 or y <= 0 (not measured) never join.

  function paretoFront(pts, xOf, yOf, xHigher, yHigher) {
    const c = [];
    for (const p of pts) {
      const x = xOf(p), y = yOf(p);
      if (x == null || y == null || !(x > 0) || !(y > 0)) continue;
      c.push({ p, x, y, X: xHigher ? x : -x, Y: yHigher ? y : -y });
    }
    c.sort((a, b) => (b.X - a.X) || (b.Y - a.Y));
    const front = [];
    let best = -Infinity;
    for (const q of c) {
      if (q.Y > best) { front.push(q); best = q.Y; }
    }
    return front.sort((a, b) => a.x - b.x);
  }

  // Monotone cubic interpolation (Steffen 1990, the method of d3.curveMonotoneX): slopes that
  // never overshoot, so the line between two frontier points never promises more than they do.
  function steffenSlopes(xs, ys) {
    const n = xs.length, m = new Array(n).fill(0);
    if (n < 2) return m;
    const h = [], d = [];
    for (let i = 0; i < n - 1; i++) { h.push(xs[i + 1] - xs[i]); d.push((ys[i + 1] - ys[i]) / h[i]); }
    for (let i = 1; i < n - 1; i++) {
      const p = (d[i - 1] * h[i] + d[i] * h[i - 1]) / (h[i - 1] + h[i]);
      m[i] = (Math.sign(d[i - 1]) + Math.sign(d[i])) *
        Math.min(Math.abs(d[i - 1]), Math.abs(d[i]), 0.5 * Math.abs(p)) || 0;
    }
    const end = (t, s) => { const v = (3 * t - s) / 2; return Math.sign(v) !== Math.sign(t) ? 0 : v; };
    m[0] = n > 2 ? end(d[0], m[1]) : d[0];
    m[n - 1] = n > 2 ? end(d[n - 2], m[n - 2]) : d[n - 2];
    return m;
  }
  // y at x on the monotone curve through (xs, ys) (xs ascending); null outside [xs0, xsN].
  function interpolate(xs, ys, x) {
    const n = xs.length;
    if (n === 0 || x < xs[0] || x > xs[n - 1]) return null;
    if (n === 1) return ys[0];
    const m = steffenSlopes(xs, ys);
    let i = 0;
    while (i < n - 2 && x > xs[i + 1]) i++;
    const h = xs[i + 1] - xs[i], t = (x - xs[i]) / h;
    const t2 = t * t, t3 = t2 * t;
    return (2 * t3 - 3 * t2 + 1) * ys[i] + (t3 - 2 * t2 + t) * h * m[i] +
      (-2 * t3 + 3 * t2) * ys[i + 1] + (t3 - t2) * h * m[i + 1];
  }
  // SVG path of that curve through screen points (sx ascending).
  function monotonePath(sx, sy) {
    if (sx.length === 0) return '';
    let d = 'M' + sx[0].toFixed(1) + ',' + sy[0].toFixed(1);
    if (sx.length === 1) return d;
    const m = steffenSlopes(sx, sy);
    for (let i = 0; i < sx.length - 1; i++) {
      const h = (sx[i + 1] - sx[i]) / 3;
      d += 'C' + (sx[i] + h).toFixed(1) + ',' + (sy[i] + m[i] * h).toFixed(1) + ' ' +
        (sx[i + 1] - h).toFixed(1) + ',' + (sy[i + 1] - m[i + 1] * h).toFixed(1) + ' ' +
        sx[i + 1].toFixed(1) + ',' + sy[i + 1].toFixed(1);
    }
    return d;
  }

  // The frontiers of one panel under the current selectors: per role and series, the frontier
  // points in x order. Agentic panels apply the North-Star rule (dashboard: canonicalFrontier):
  // the canonical frontier is in (E2E-normalized interactivity, y); in any other x view a point
  // is on the frontier only when it is on that view's own Pareto set and on the canonical one.
  function panelFrontiers(panel) {
    const q = panelPct(panel), X = XS[state.x], Y = YS[state.y];
    const groups = new Map();
    for (const p of panel.points) {
      if (!p.valid || !p.measured || state.hidden.has(p.series)) continue;
      const k = p.role + '\u0000' + p.series;
      if (!groups.has(k)) groups.set(k, { role: p.role, series: p.series, pts: [] });
      groups.get(k).pts.push(p);
    }
    const out = [];
    for (const g of groups.values()) {
      let front = paretoFront(g.pts, (p) => X.get(p, q), Y.get, X.higher, Y.higher);
      if (panel.agentic && state.x !== 'e2e_norm') {
        const canon = new Set(paretoFront(g.pts, (p) => XS.e2e_norm.get(p, q), Y.get, true,
          Y.higher).map((f) => f.p.uid));
        front = front.filter((f) => canon.has(f.p.uid));
      }
      out.push({ role: g.role, series: g.series, front });
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // Axes

  function niceTicks(lo, hi, count) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const step0 = span / count, mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const r = step0 / mag;
    const step = (r >= 5 ? 10 : r >= 2 ? 5 : r >= 1 ? 2 : 1) * mag;
    const ticks = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
      ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return ticks;
  }
  function tickText(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
    if (a >= 1000) return Math.round(v).toLocaleString('en-US');
    if (a >= 10 || a === 0) return String(Math.round(v * 10) / 10);
    return String(Number(v.toPrecision(3)));
  }
  function axisTitle(metric, q) {
    return metric.name + ' at ' + PCTS[q] + ' (' + metric.unit + ')';
  }

  // ------------------------------------------------------------------------------------------
  // Tooltip

  const tip = el('div', { class: 'tooltip', role: 'tooltip' });
  function showTip(ev, p, q) {
    tip.replaceChildren();
    const id = p.cfg ? p.cfg.identity : {};
    const lines = [
      [el('b', null, p.series)],
      [p.config_key + ' \u00b7 ' + (id.parallelism || '') + ' \u00b7 conc ' + p.concurrency],
      ['run ' + (runs.get(p.run) || {}).name + (DATA.comparison ? ' (' + p.role + ')' : '')],
      ['image ' + (id.image || '\u2013') + (id.engine_version ? ' \u00b7 v' + id.engine_version : '')],
      [XS[state.x].name + ': ' + fmt(XS[state.x].get(p, q)) + ' ' + XS[state.x].unit + ' (' + q + ')'],
      [YS[state.y].name + ': ' + fmt(YS[state.y].get(p)) + ' ' + YS[state.y].unit],
      ['tok/s/GPU: total ' + fmt(p.m.tput_per_gpu) + ', output ' + fmt(p.m.output_tput_per_gpu) +
        ', input ' + fmt(p.m.input_tput_per_gpu)],
      ['TTFT ' + q + ' ' + fmt(p.m.ttft_ms[q]) + ' ms \u00b7 E2E ' + q + ' ' +
        fmt(p.m.e2el_ms[q] == null ? null : p.m.e2el_ms[q] / 1000) + ' s'],
    ];
    if (p.m.j_per_output_token != null) lines.push(['J/output token ' + fmt(p.m.j_per_output_token)]);
    if (!p.valid) {
      lines.push([el('span', { class: 'bad' }, '\u2715 ' + p.status.toUpperCase() + ': ' +
        (validityText(p) || p.error || 'not valid'))]);
    }
    lines.push([el('i', null, 'click for details')]);
    for (const l of lines) tip.append(el('div', null, ...l));
    tip.style.display = 'block';
    moveTip(ev);
  }
  function moveTip(ev) {
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + w > innerWidth - 8) x = ev.clientX - w - 14;
    if (y + h > innerHeight - 8) y = ev.clientY - h - 14;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }
  function validityText(p) {
    return (p.validity || []).map((r) => r.kind + ': ' + r.message).join('; ');
  }

  // ------------------------------------------------------------------------------------------
  // Markers

  function marker(shape, x, y, r, attrs) {
    if (shape === 'square') {
      return sv('rect', Object.assign({ x: x - r * 0.85, y: y - r * 0.85, width: r * 1.7, height: r * 1.7 }, attrs));
    }
    if (shape === 'triangle') {
      const h = r * 1.15;
      return sv('path', Object.assign({ d: `M${x},${y - h}L${x + h},${y + h * 0.8}L${x - h},${y + h * 0.8}Z` }, attrs));
    }
    if (shape === 'diamond') {
      const h = r * 1.25;
      return sv('path', Object.assign({ d: `M${x},${y - h}L${x + h},${y}L${x},${y + h}L${x - h},${y}Z` }, attrs));
    }
    return sv('circle', Object.assign({ cx: x, cy: y, r }, attrs));
  }
  function cross(x, y, r, attrs) {
    return sv('path', Object.assign({ d: `M${x - r},${y - r}L${x + r},${y + r}M${x - r},${y + r}L${x + r},${y - r}`,
      fill: 'none', 'stroke-width': 3, 'stroke-linecap': 'round' }, attrs));
  }
  function swatch(series, role, precision) {
    const color = seriesColor.get(series);
    const s = sv('svg', { width: 46, height: 18, viewBox: '0 0 46 18' });
    s.append(sv('line', { x1: 2, y1: 9, x2: 44, y2: 9, stroke: color, 'stroke-width': 2.5,
      'stroke-dasharray': role === 'base' ? '7 5' : null }));
    s.append(marker(shapeOf(precision), 23, 9, 5.5, role === 'base'
      ? { fill: '#fff', stroke: color, 'stroke-width': 2 } : { fill: color, stroke: '#111', 'stroke-width': 0.8 }));
    return s;
  }

  // ------------------------------------------------------------------------------------------
  // The scatter of one panel

  const W = 1000, H = 540, M = { l: 82, r: 24, t: 18, b: 62 };

  function drawChart(panel) {
    const q = panelPct(panel), X = XS[state.x], Y = YS[state.y];
    const shown = panel.points.filter((p) => p.measured && !state.hidden.has(p.series) &&
      X.get(p, q) != null && Y.get(p) != null);
    const fronts = panelFrontiers(panel);
    const onFront = new Set();
    for (const f of fronts) for (const q2 of f.front) onFront.add(q2.p.uid);

    let xmax = 0, ymax = 0;
    for (const p of shown) { xmax = Math.max(xmax, X.get(p, q)); ymax = Math.max(ymax, Y.get(p)); }
    if (!(xmax > 0)) xmax = 1;
    if (!(ymax > 0)) ymax = 1;
    xmax *= 1.06; ymax *= 1.08;
    const sx = (v) => M.l + v / xmax * (W - M.l - M.r);
    const sy = (v) => H - M.b - v / ymax * (H - M.t - M.b);

    const svg = sv('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'data-panel': panel.id,
      'aria-label': Y.name + ' vs ' + X.name });
    const grid = sv('g', { class: 'grid' }), axis = sv('g', { class: 'axis' });
    for (const t of niceTicks(0, xmax, 8)) {
      grid.append(sv('line', { x1: sx(t), x2: sx(t), y1: M.t, y2: H - M.b }));
      axis.append(sv('text', { x: sx(t), y: H - M.b + 20, 'text-anchor': 'middle' }, tickText(t)));
    }
    for (const t of niceTicks(0, ymax, 6)) {
      grid.append(sv('line', { x1: M.l, x2: W - M.r, y1: sy(t), y2: sy(t) }));
      axis.append(sv('text', { x: M.l - 8, y: sy(t) + 4, 'text-anchor': 'end' }, tickText(t)));
    }
    axis.append(sv('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, stroke: '#111' }));
    axis.append(sv('line', { x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, stroke: '#111' }));
    axis.append(sv('text', { class: 'axis-title x-title', x: (M.l + W - M.r) / 2, y: H - 14,
      'text-anchor': 'middle' }, axisTitle(X, q) + (X.higher ? '  \u2192 better' : '  \u2190 better')));
    const yTitle = Y.name + ' (' + Y.unit + ')' + (Y.higher ? '  \u2192 better' : '  \u2190 better');
    axis.append(sv('text', { class: 'axis-title y-title', transform: `translate(20,${(M.t + H - M.b) / 2}) rotate(-90)`,
      'text-anchor': 'middle' }, yTitle));
    svg.append(grid, axis);

    // Frontier lines under the points.
    for (const f of fronts) {
      if (f.front.length === 0) continue;
      svg.append(sv('path', { class: 'frontier ' + f.role, 'data-series': f.series, 'data-role': f.role,
        d: monotonePath(f.front.map((v) => sx(v.x)), f.front.map((v) => sy(v.y))),
        stroke: seriesColor.get(f.series) }));
    }
    // Points, labels placed greedily where they do not overlap a placed one.
    const placed = [];
    const free = (b) => placed.every((o) => b.x2 < o.x1 || b.x1 > o.x2 || b.y2 < o.y1 || b.y1 > o.y2);
    const layer = sv('g'), labels = sv('g');
    for (const p of shown) placed.push({ x1: sx(X.get(p, q)) - 6, x2: sx(X.get(p, q)) + 6, y1: sy(Y.get(p)) - 6, y2: sy(Y.get(p)) + 6 });
    for (const p of shown) {
      const x = sx(X.get(p, q)), y = sy(Y.get(p)), color = seriesColor.get(p.series);
      const prec = p.cfg ? p.cfg.identity.precision : '';
      const cls = ['pt', p.role, p.valid ? (onFront.has(p.uid) ? 'front' : 'dominated') : 'invalid'].join(' ');
      const g = sv('g', { class: cls, 'data-point': p.uid, 'data-x': X.get(p, q), 'data-y': Y.get(p),
        'data-frontier': onFront.has(p.uid) ? 1 : 0, tabindex: 0,
        onmouseenter: (ev) => showTip(ev, p, q), onmousemove: moveTip, onmouseleave: hideTip,
        onclick: () => selectPoint(p.uid) });
      if (!p.valid) {
        g.append(cross(x, y, 7, { stroke: '#fff', 'stroke-width': 6 }), cross(x, y, 7, { stroke: color }));
      } else if (p.role === 'base') {
        g.append(marker(shapeOf(prec), x, y, 6.5, { fill: '#fff', stroke: color, 'stroke-width': 2.2 }));
      } else {
        g.append(marker(shapeOf(prec), x, y, 6.5, { fill: color, stroke: '#111', 'stroke-width': 0.9 }));
      }
      if (state.point === p.uid) g.append(sv('circle', { cx: x, cy: y, r: 12, fill: 'none', stroke: '#111', 'stroke-width': 2 }));
      layer.append(g);
      const text = 'c' + p.concurrency + (p.valid ? '' : ' invalid');
      const w = text.length * 6.4 + 2;
      for (const [dx, dy, anchor] of [[9, -7, 'start'], [9, 15, 'start'], [-9, -7, 'end'], [-9, 15, 'end'], [0, -13, 'middle'], [0, 23, 'middle']]) {
        const x1 = anchor === 'start' ? x + dx : anchor === 'end' ? x + dx - w : x - w / 2;
        const b = { x1, x2: x1 + w, y1: y + dy - 11, y2: y + dy + 2 };
        if (b.x1 < M.l || b.x2 > W - M.r || b.y1 < M.t || b.y2 > H - M.b || !free(b)) continue;
        placed.push(b);
        labels.append(sv('text', { class: 'pt-label', x: x + dx, y: y + dy, 'text-anchor': anchor,
          fill: p.valid ? '#333' : '#c1121f' }, text));
        break;
      }
    }
    svg.append(layer, labels);
    return svg;
  }

  function legend(panel) {
    const box = el('div', { class: 'legend' });
    const seen = new Map();
    for (const p of panel.points) {
      const k = p.series + '\u0000' + p.role;
      if (!seen.has(k)) seen.set(k, { series: p.series, role: p.role, prec: p.cfg ? p.cfg.identity.precision : '' });
    }
    const items = [...seen.values()].sort((a, b) => a.series.localeCompare(b.series) || b.role.localeCompare(a.role));
    for (const it of items) {
      const off = state.hidden.has(it.series);
      box.append(el('div', { class: 'item' + (off ? ' off' : ''), 'data-legend': it.series,
        title: 'click to ' + (off ? 'show' : 'hide') + ' this series',
        onclick: () => { if (off) state.hidden.delete(it.series); else state.hidden.add(it.series); render(); } },
      swatch(it.series, it.role, it.prec),
      el('span', null, it.series + (DATA.comparison ? (it.role === 'base' ? ' (base)' : ' (head)') : ''))));
    }
    box.append(el('div', { class: 'key' },
      'Line: Pareto frontier of the series. Faded marker: dominated (on no frontier). ',
      '\u2715: invalid point, excluded from frontiers. Labels: concurrency.',
      DATA.comparison ? ' Solid line, filled marker: head run; dashed line, hollow marker: base run.' : ''));
    return box;
  }

  // ------------------------------------------------------------------------------------------
  // Tables

  function table(headers, rows, opts) {
    headers = headers.filter((h) => h != null);
    const t = el('table', opts && opts.attrs);
    t.append(el('thead', null, el('tr', null, headers.map((h) =>
      el('th', { class: h.num ? 'num' : null }, h.title || h)))));
    const body = el('tbody');
    for (const r of rows) body.append(r);
    t.append(body);
    return el('div', { class: 'table-wrap' }, t);
  }
  function cell(v, num, cls) { return el('td', { class: [num ? 'num' : '', cls || ''].join(' ').trim() || null }, v); }
  function deltaCell(d, higherBetter) {
    if (d == null) return cell('\u2013', true);
    const good = higherBetter ? d > 0 : d < 0;
    if (Math.abs(d) < 0.05) return cell('0.0%', true);
    return cell((d > 0 ? '+' : '') + d.toFixed(1) + '%', true, good ? 'delta-pos' : 'delta-neg');
  }

  function pointsTable(panel) {
    const q = panelPct(panel);
    const fronts = panelFrontiers(panel);
    const onFront = new Set();
    for (const f of fronts) for (const v of f.front) onFront.add(v.p.uid);
    const headers = [
      multiRun ? 'Run' : null, 'Config', 'Series', 'Parallelism', { title: 'Conc', num: true }, 'Status',
      { title: 'tok/s/GPU', num: true }, { title: 'out tok/s/GPU', num: true },
      { title: 'Intvty ' + q + ' (tok/s/user)', num: true },
      { title: 'TTFT ' + q + ' (ms)', num: true }, { title: 'E2E ' + q + ' (s)', num: true },
      { title: '$/M out tok', num: true }, anyEnergy ? { title: 'J/out tok', num: true } : null, 'Frontier', 'Note'];
    const rows = [];
    const sorted = panel.points.slice().sort((a, b) => a.role.localeCompare(b.role) ||
      a.series.localeCompare(b.series) || a.config_key.localeCompare(b.config_key) || a.concurrency - b.concurrency);
    for (const p of sorted) {
      const note = p.valid ? (p.reused_from_run ? 'reused from run ' + p.reused_from_run : '')
        : (validityText(p) || p.error);
      rows.push(el('tr', { class: 'clickable' + (p.valid ? '' : ' invalid'), 'data-row': p.uid,
        onclick: () => selectPoint(p.uid) },
      multiRun ? cell(DATA.comparison ? p.role : (runs.get(p.run) || {}).name, false, p.role === 'base' ? 'muted' : '') : null,
      cell(p.config_key), cell(p.series, false, 'nowrap'), cell(p.cfg ? p.cfg.identity.parallelism : ''),
      cell(p.concurrency, true), cell(p.valid ? p.status : '\u2715 ' + p.status),
      cell(fmt(p.m.tput_per_gpu), true), cell(fmt(p.m.output_tput_per_gpu), true),
      cell(fmt(p.m.intvty[q]), true), cell(fmt(p.m.ttft_ms[q]), true),
      cell(fmt(p.m.e2el_ms[q] == null ? null : p.m.e2el_ms[q] / 1000), true),
      cell(fmt(costPerMOut(p), 3), true), anyEnergy ? cell(fmt(p.m.j_per_output_token, 3), true) : null,
      cell(onFront.has(p.uid) ? 'yes' : p.valid ? 'dominated' : 'excluded'),
      cell(note.length > 140 ? note.slice(0, 137) + '...' : note)));
    }
    return table(headers, rows, { attrs: { class: 'points', 'data-panel': panel.id } });
  }

  // Base vs head on the frontier at equal x (iso-interactivity when x is interactivity): only
  // where both frontiers cover x, each interpolated with the monotone curve that is drawn.
  function isoDeltas(panel) {
    const fronts = panelFrontiers(panel), X = XS[state.x], Y = YS[state.y];
    const base = fronts.filter((f) => f.role === 'base' && f.front.length);
    const head = fronts.filter((f) => f.role === 'head' && f.front.length);
    const pairs = [];
    for (const h of head) {
      const b = base.find((f) => f.series === h.series);
      if (b) pairs.push([b, h, '']);
    }
    if (pairs.length === 0 && base.length === 1 && head.length === 1) {
      pairs.push([base[0], head[0], 'series differ: ' + base[0].series + ' (base) vs ' + head[0].series + ' (head)']);
    }
    const rows = [];
    const notes = [];
    for (const [b, h, note] of pairs) {
      if (note) notes.push(note);
      const bx = b.front.map((v) => v.x), by = b.front.map((v) => v.y);
      const hx = h.front.map((v) => v.x), hy = h.front.map((v) => v.y);
      const lo = Math.max(bx[0], hx[0]), hi = Math.min(bx[bx.length - 1], hx[hx.length - 1]);
      if (!(hi >= lo)) { notes.push(h.series + ': the frontiers do not overlap in x; no delta'); continue; }
      const xs = hi > lo ? [0, 0.25, 0.5, 0.75, 1].map((t) => lo + t * (hi - lo)) : [lo];
      for (const x of xs) {
        const yb = interpolate(bx, by, x), yh = interpolate(hx, hy, x);
        rows.push(el('tr', null, cell(h.series), cell(fmt(x), true), cell(fmt(yb), true), cell(fmt(yh), true),
          deltaCell(pctDelta(yb, yh), Y.higher)));
      }
    }
    const box = el('div', { class: 'iso' });
    box.append(el('h3', null, 'Frontier deltas at equal ' + X.name.toLowerCase() + ' (head vs base)'));
    if (rows.length === 0) {
      box.append(el('p', { class: 'sub' }, 'No series has a frontier in both runs over a common ' + X.name.toLowerCase() + ' range.'));
    } else {
      box.append(table(['Series', { title: X.name + ' (' + X.unit + ')', num: true },
        { title: 'base ' + Y.unit, num: true }, { title: 'head ' + Y.unit, num: true }, { title: '\u0394', num: true }], rows,
      { attrs: { class: 'iso-table' } }));
    }
    for (const n of notes) box.append(el('p', { class: 'sub' }, n));
    return box;
  }

  // Base and head points at the same configuration and concurrency.
  function matchedTable(panel) {
    const q = panelPct(panel), X = XS[state.x];
    // Another parallelism under one key (TP4 and TP8, 1P1D and 2P1D) is another configuration.
    const par = (p) => (p.cfg && p.cfg.identity.parallelism) || '';
    const key = (p) => p.config_key + '\u0000' + par(p) + '\u0000' + p.concurrency;
    const base = new Map(), head = new Map();
    for (const p of panel.points) (p.role === 'base' ? base : head).set(key(p), p);
    let matchBySeries = false;
    if (![...head.keys()].some((k) => base.has(k))) {
      matchBySeries = true;
      base.clear(); head.clear();
      for (const p of panel.points) (p.role === 'base' ? base : head).set(p.series + '\u0000' + p.concurrency, p);
    }
    const rows = [];
    for (const [k, h] of [...head.entries()].sort((a, b) => a[1].series.localeCompare(b[1].series) || a[1].concurrency - b[1].concurrency)) {
      const b = base.get(k);
      if (!b) continue;
      const mark = (p) => (p.valid ? '' : ' \u2715');
      rows.push(el('tr', { class: (b.valid && h.valid ? '' : 'invalid') },
        cell(matchBySeries ? h.series : h.config_key + (par(h) ? ' [' + par(h) + ']' : '')), cell(h.concurrency, true),
        cell(fmt(b.m.tput_per_gpu) + mark(b), true), cell(fmt(h.m.tput_per_gpu) + mark(h), true),
        deltaCell(pctDelta(b.m.tput_per_gpu, h.m.tput_per_gpu), true),
        cell(fmt(X.get(b, q)), true), cell(fmt(X.get(h, q)), true), deltaCell(pctDelta(X.get(b, q), X.get(h, q)), X.higher),
        cell(fmt(b.m.ttft_ms[q]), true), cell(fmt(h.m.ttft_ms[q]), true), deltaCell(pctDelta(b.m.ttft_ms[q], h.m.ttft_ms[q]), false),
        anyEnergy ? [cell(fmt(b.m.j_per_output_token, 3), true), cell(fmt(h.m.j_per_output_token, 3), true),
          deltaCell(pctDelta(b.m.j_per_output_token, h.m.j_per_output_token), false)] : null,
        cell(b.valid && h.valid ? '' : 'invalid: ' + [b, h].filter((p) => !p.valid).map((p) => p.role).join(', '))));
    }
    const box = el('div', { class: 'matched' });
    box.append(el('h3', null, 'Matched concurrency (same ' + (matchBySeries ? 'series' : 'configuration') + ' and concurrency)'));
    if (rows.length === 0) {
      box.append(el('p', { class: 'sub' }, 'No configuration ran at the same concurrency in both runs.'));
      return box;
    }
    box.append(table([matchBySeries ? 'Series' : 'Config', { title: 'Conc', num: true },
      { title: 'base tok/s/GPU', num: true }, { title: 'head tok/s/GPU', num: true }, { title: '\u0394', num: true },
      { title: 'base ' + X.name + ' ' + q, num: true }, { title: 'head', num: true }, { title: '\u0394', num: true },
      { title: 'base TTFT ' + q + ' ms', num: true }, { title: 'head', num: true }, { title: '\u0394', num: true },
      ...(anyEnergy ? [{ title: 'base J/out tok', num: true }, { title: 'head', num: true }, { title: '\u0394', num: true }] : []), 'Validity'],
    rows, { attrs: { class: 'matched-table' } }));
    box.append(el('p', { class: 'sub' }, 'Green: better, red: worse (throughput and interactivity higher is better; latency and energy lower). \u2715: invalid point: its numbers are shown but may not be used.'));
    return box;
  }

  // ------------------------------------------------------------------------------------------
  // Per-point detail

  function smallChart(title, unit, series, xs) {
    const w = 380, h = 170, m = { l: 50, r: 10, t: 8, b: 26 };
    const box = el('div', { class: 'sm' }, el('div', { class: 'sm-title' }, title + ' (' + unit + ')'));
    let ymax = 0, xmax = 0;
    for (const s of series) for (let i = 0; i < s.values.length; i++) {
      if (s.values[i] != null) { ymax = Math.max(ymax, s.values[i]); xmax = Math.max(xmax, xs[i]); }
    }
    if (!(xmax > 0)) xmax = 1;
    if (!(ymax > 0)) ymax = 1;
    ymax *= 1.1;
    const sx = (v) => m.l + v / xmax * (w - m.l - m.r), sy = (v) => h - m.b - v / ymax * (h - m.t - m.b);
    const s = sv('svg', { viewBox: `0 0 ${w} ${h}`, class: 'timeseries' });
    const axis = sv('g', { class: 'axis' }), grid = sv('g', { class: 'grid' });
    for (const t of niceTicks(0, ymax, 4)) {
      grid.append(sv('line', { x1: m.l, x2: w - m.r, y1: sy(t), y2: sy(t) }));
      axis.append(sv('text', { x: m.l - 5, y: sy(t) + 4, 'text-anchor': 'end', style: 'font-size:11px' }, tickText(t)));
    }
    for (const t of niceTicks(0, xmax, 5)) {
      axis.append(sv('text', { x: sx(t), y: h - m.b + 14, 'text-anchor': 'middle', style: 'font-size:11px' }, tickText(t)));
    }
    s.append(grid, axis);
    if (!series.some((ser) => ser.values.some((v) => v != null))) {
      s.append(sv('text', { x: (m.l + w - m.r) / 2, y: (m.t + h - m.b) / 2, 'text-anchor': 'middle', fill: '#555', style: 'font-size:13px' },
        'not reported by the server'));
    }
    series.forEach((ser, i) => {
      let d = '';
      let pen = false;
      for (let k = 0; k < xs.length; k++) {
        const v = ser.values[k];
        if (v == null) { pen = false; continue; }
        d += (pen ? 'L' : 'M') + sx(xs[k]).toFixed(1) + ',' + sy(v).toFixed(1);
        pen = true;
      }
      s.append(sv('path', { d, fill: 'none', stroke: PALETTE[i], 'stroke-width': 2 }));
      // Short points have few slices: mark each so a lone value is still seen.
      if (xs.length <= 40) {
        for (let k = 0; k < xs.length; k++) {
          if (ser.values[k] != null) s.append(sv('circle', { cx: sx(xs[k]), cy: sy(ser.values[k]), r: 2.8, fill: PALETTE[i] }));
        }
      }
    });
    box.append(s);
    if (series.length > 1) {
      box.append(el('div', { style: 'font-size:12px' }, series.map((ser, i) =>
        el('span', { style: 'margin-right:10px;color:' + PALETTE[i] }, '\u25a0 ' + ser.name))));
    }
    return box;
  }

  function kvTable(pairs) {
    return table(['Field', 'Value'], pairs.map(([k, v]) => el('tr', null, cell(k), cell(v == null || v === '' ? '\u2013' : String(v)))),
      { attrs: { class: 'kv' } });
  }

  // A disaggregated deployment's point: where TTFT went, which side requests waited for, each
  // role's energy, and each role's queue and token rate over time (docs/telemetry.md).
  function disaggDetail(d) {
    const box = el('div', { class: 'disagg', 'data-disagg': '1' });
    box.append(el('h3', null, 'Disaggregated deployment'));
    const att = d.ttft_attribution;
    if (att && att.parts) {
      const names = Object.keys(att.parts);
      box.append(el('p', { class: 'sub' }, 'TTFT by part over ' + att.requests + ' requests, as the router and the workers reported each (ms); unattributed is TTFT minus the parts: the network and HTTP between the processes.'));
      box.append(table(['Part', { title: 'median', num: true }, { title: 'mean', num: true }, { title: 'max', num: true }],
        names.map((n) => el('tr', null, cell(n.replace(/_/g, ' ')), cell(fmt(att.parts[n].median_ms), true), cell(fmt(att.parts[n].mean_ms), true), cell(fmt(att.parts[n].max_ms), true)))
          .concat(att.unattributed ? [el('tr', null, cell('unattributed'), cell(fmt(att.unattributed.median_ms), true), cell(fmt(att.unattributed.mean_ms), true), cell(fmt(att.unattributed.max_ms), true))] : []),
        { attrs: { 'data-ttft-parts': '1' } }));
    }
    const rm = d.rate_match;
    const e = d.energy || {};
    if (rm) {
      const side = (s, key) => (s ? s.workers + ' workers, ' + s.gpus + ' GPUs; ' + fmt(s[key + '_tokens_per_s_per_gpu']) + ' ' + key + ' tok/s/GPU; queue p50 ' + fmt(s.queue_ms_p50) + ' ms' : '');
      box.append(kvTable([
        ['rate match', rm.bound + (rm.basis ? ' (from the ' + rm.basis + ')' : '')],
        ['why', rm.why],
        ['prefill', side(rm.prefill, 'input')],
        ['decode', side(rm.decode, 'output')],
        ['KV transfer p50 (ms)', fmt(rm.kv_transfer_ms_p50)],
        ['prefill energy', e.prefill_gpu_energy_j != null ? fmt(e.prefill_avg_power_w) + ' W/GPU, ' + fmt(e.prefill_joules_per_input_token, 5) + ' J/input token' : 'not measured or not valid'],
        ['decode energy', e.decode_gpu_energy_j != null ? fmt(e.decode_avg_power_w) + ' W/GPU, ' + fmt(e.decode_joules_per_output_token, 4) + ' J/output token' : 'not measured or not valid'],
      ]));
    }
    const roles = d.roles || {};
    const grid = el('div', { class: 'small-multiples' });
    for (const name of ['prefill', 'decode']) {
      const r = roles[name];
      if (!r || !r.slices.length) continue;
      const xs = r.slices.map((x) => x.start_s);
      const col = (k) => r.slices.map((x) => x[k]);
      grid.append(smallChart('Requests at the ' + name + ' workers (' + (r.workers || []).length + ')', 'count', [{ name: 'running', values: col('running_mean') }, { name: 'waiting', values: col('waiting_mean') }], xs));
      grid.append(smallChart(name === 'prefill' ? 'Prompt tokens computed by prefill' : 'Tokens generated by decode', 'tok/s',
        [{ name: name === 'prefill' ? 'prompt' : 'generation', values: col(name === 'prefill' ? 'prompt_tokens_per_s' : 'generation_tokens_per_s') }], xs));
    }
    if (grid.children.length) box.append(grid);
    return box;
  }

  // A timed trace replay: how faithfully the trace was replayed (docs/trace-replay.md).
  function traceDetail(f) {
    const box = el('div', { class: 'trace-fidelity', 'data-trace-fidelity': f.valid ? 'valid' : 'invalid' });
    box.append(el('h3', null, 'Trace replay fidelity'));
    const a = f.arrivals || {}, i = f.input_tokens || {}, o = f.output_tokens || {}, p = f.prefix_cache || {};
    const counts = (c) => (c.server_counted ? fmt(c.exact) + ' of ' + fmt(c.server_counted) + ' exact' + (c.max_abs_error ? ', max error ' + fmt(c.max_abs_error) + ' tokens' : '') : 'not counted by the server');
    box.append(kvTable([
      ['requests sent', fmt(a.sent) + ' of ' + fmt(a.scheduled) + ' scheduled' + (a.not_sent ? ' (' + fmt(a.not_sent) + ' not sent)' : '')],
      ['rate', fmt(a.rate_factor) + '\u00d7 the trace\u2019s (time scale ' + fmt(a.time_scale) + '); ' + fmt(a.sent_rate, 4) + ' req/s sent against ' + fmt(a.target_rate, 4) + ' scheduled'],
      ['arrival lag (sent \u2212 scheduled)', 'p50 ' + fmt(a.lag_p50_ms, 3) + ' ms, p99 ' + fmt(a.lag_p99_ms, 3) + ' ms, max ' + fmt(a.lag_max_ms, 3) + ' ms; ' + fmt(a.late_over_1ms) + ' later than 1 ms'],
      ['concurrency cap', a.cap ? fmt(a.cap) + (a.cap_reached ? ' (reached: requests waited, and the wait is their lag)' : ' (never reached)') : 'none'],
      ['prompts', f.prompt_mode],
      ['input tokens (server vs trace)', counts(i)],
      ['output tokens (server vs trace)', counts(o)],
      ['prefix-cache hit', p.block_size ? 'theoretical ' + fmt(p.theoretical_hit_pct, 3) + ' %, server ' + (p.server_hit_pct == null ? 'not reported' : fmt(p.server_hit_pct, 3) + ' % (' + fmt(p.difference_points, 3) + ' points)') + '; blocks of ' + p.block_size + ' tokens' : (p.note || 'no prefix data')],
      ['verdict', f.valid ? 'within its bounds' : (f.invalid_reasons || []).map((r) => r.reason + ': ' + r.message).join('; ')],
    ]));
    return box;
  }

  function detail() {
    const p = points.find((x) => x.uid === state.point);
    const box = el('section', { class: 'detail', id: 'detail', 'data-point-detail': p ? p.uid : '' });
    if (!p) return null;
    const id = p.cfg ? p.cfg.identity : {};
    box.append(el('button', { class: 'close', onclick: () => selectPoint(null) }, 'close \u2715'));
    box.append(el('h2', null, 'Point: ' + p.series + ' \u00b7 ' + p.config_key + ' \u00b7 conc ' + p.concurrency));
    box.append(el('p', { class: 'sub' }, 'run ' + (runs.get(p.run) || {}).name + ' (point id ' + p.id + ', ' + p.role + ') \u00b7 ' + p.model + ' \u00b7 ' + p.workload));
    if (p.valid) {
      box.append(el('p', null, el('span', { class: 'badge ok' }, 'valid'), 'status ' + p.status));
    } else {
      box.append(el('div', { class: 'note warn' }, el('b', null, '\u2715 ' + p.status + ': excluded from frontiers'),
        el('ul', null, (p.validity || []).map((r) => el('li', null, r.kind + ': ' + r.message + (r.advice ? ' (' + r.advice + ')' : ''))),
          p.error && !(p.validity || []).length ? el('li', null, p.error) : null)));
    }
    const q = panelPct(panels.find((pn) => pn.points.includes(p)));
    const pcts = p.m.percentiles;
    box.append(el('h3', null, 'Metrics'));
    box.append(table(['Statistic', ...pcts.map((x) => ({ title: x, num: true }))], [
      ['Interactivity (tok/s/user)', (x) => p.m.intvty[x]],
      ['E2E-normalized interactivity (tok/s/user)', (x) => p.m.e2e_norm_intvty[x]],
      ['TTFT (ms)', (x) => p.m.ttft_ms[x]],
      ['E2E latency (s)', (x) => (p.m.e2el_ms[x] == null ? null : p.m.e2el_ms[x] / 1000)],
      ...(p.m.itl_ms ? [['ITL, per token (ms)', (x) => p.m.itl_ms[x]],
        ['inter-chunk latency, per event (ms)', (x) => p.m.icl_ms[x]]] : []),
    ].map(([name, f]) => el('tr', null, cell(name), pcts.map((x) => cell(fmt(f(x)), true, x === q ? 'sel' : ''))))));
    box.append(kvTable([
      ['throughput per GPU (tok/s/GPU)', fmt(p.m.tput_per_gpu) + ' total, ' + fmt(p.m.output_tput_per_gpu) + ' output, ' + fmt(p.m.input_tput_per_gpu) + ' input'],
      ['GPUs', p.m.num_gpus], ['requests completed / failed', fmt(p.m.completed) + ' / ' + fmt(p.m.failed)],
      ['duration (s)', fmt(p.m.duration_s)],
      ['$ per million output tokens', fmt(costPerMOut(p), 3) + ' at $' + prices[hardwareOf(p)].toFixed(2) + '/GPU-hour'],
      ['energy', p.energy ? (p.energy.power_valid ? fmt(p.m.avg_power_w) + ' W/GPU average, ' + fmt(p.m.j_per_output_token, 3) + ' J/output token, ' +
        fmt(p.m.j_per_total_token, 3) + ' J/token (' + (p.energy.tool || '') + ')' :
        'not valid: ' + (p.energy.note || (p.energy.reasons || []).map((r) => r.reason || r).join(', '))) : 'not measured'],
      ['engine timing (median)', p.server_timing ? 'queue ' + fmt(p.server_timing.queue.median_ms) + ' ms, engine TTFT ' + fmt(p.server_timing.engine_ttft.median_ms) +
        ' ms, outside the engine ' + fmt(p.server_timing.outside_engine.median_ms) + ' ms over ' + p.server_timing.requests + ' requests (the responses\u2019 metrics)' : 'not reported (vLLM: --enable-per-request-metrics)'],
      ['tokens per event', p.m.tokens_per_event == null ? 'not counted (no usage on every event)' : fmt(p.m.tokens_per_event)],
      ['acceptance length', specText(p)],
      ['time scale', p.time_scale !== 1 ? p.time_scale + '\u00d7 (a compressed replay)' : '1'],
      ['warnings', (p.warnings || []).join('; ')],
    ]));

    if (p.disagg) box.append(disaggDetail(p.disagg));
    if (p.trace_fidelity) box.append(traceDetail(p.trace_fidelity));

    box.append(el('h3', null, 'Telemetry over the point'));
    const sl = p.slices;
    if (sl && (sl.server.length || sl.client.length)) {
      const grid = el('div', { class: 'small-multiples' });
      if (sl.server.length) {
        const xs = sl.server.map((r) => r.start_s);
        const col = (k, scale) => sl.server.map((r) => (r[k] == null ? null : r[k] * (scale || 1)));
        grid.append(smallChart('KV cache usage', '%', [{ name: 'mean', values: col('kv_usage', 100) }, { name: 'peak', values: col('kv_usage_max', 100) }], xs));
        grid.append(smallChart('Requests', 'count', [{ name: 'running', values: col('running_mean') }, { name: 'waiting', values: col('waiting_mean') }], xs));
        grid.append(smallChart('Prefix-cache hit rate', '%', [{ name: 'hit rate', values: col('prefix_hit_rate', 100) }], xs));
        grid.append(smallChart('Server token throughput', 'tok/s', [{ name: 'generation', values: col('generation_tokens_per_s') }, { name: 'prompt', values: col('prompt_tokens_per_s') }], xs));
      }
      if (sl.client.length) {
        const xs = sl.client.map((r) => r.start_s);
        grid.append(smallChart('TTFT, mean of requests whose first token came in the slice', 'ms', [{ name: 'TTFT', values: sl.client.map((r) => r.mean_ttft_ms) }], xs));
        grid.append(smallChart('1/TPOT, mean of requests finishing in the slice', 'tok/s/user', [{ name: '1/TPOT', values: sl.client.map((r) => r.mean_inverse_tpot) }], xs));
      }
      box.append(grid);
      box.append(el('p', { class: 'sub' }, 'x axes: seconds from the start of the point\u2019s measured window (server slices from its metrics scrapes, client slices from the request records; docs/telemetry.md). GPU power: ' + (p.m.avg_power_w != null ? fmt(p.m.avg_power_w) + ' W per GPU on average over the window' : 'not measured') +
        '; the database keeps the energy summary, not the power samples (those are in the run folder).'));
    } else {
      box.append(el('p', { class: 'sub' }, 'No timeslices stored for this point.'));
    }
    if (p.cfg) {
      const left = el('div'), right = el('div');
      box.append(el('div', { class: 'two-col' }, left, right));
      left.append(el('h3', null, 'Identity'));
      left.append(kvTable([['model', id.model], ['image', id.image], ['engine', id.engine + (id.engine_version ? ' ' + id.engine_version : '')],
        ['hardware', id.hardware], ['runner', id.runner], ['precision', id.precision], ['spec decoding', id.spec_decoding],
        ['parallelism', id.parallelism], ['fingerprint', p.cfg.fingerprint], ['launcher', p.cfg.launcher]]));
      const ec = p.cfg.effective_config || {};
      const settings = ec.settings || {};
      right.append(el('h3', null, 'Effective configuration (what the server showed' + (ec.engine ? ', engine ' + ec.engine : '') + ')'));
      const keys = Object.keys(settings).sort();
      if (keys.length) {
        right.append(table(['Setting', 'Value'], keys.map((k) => el('tr', null, cell(k),
          cell(typeof settings[k] === 'object' ? JSON.stringify(settings[k]) : String(settings[k])))), { attrs: { class: 'kv' } }));
      } else {
        right.append(el('p', { class: 'sub' }, 'None captured.'));
      }
      for (const w of ec.warnings || []) right.append(el('div', { class: 'note warn' }, w));
      const env = p.cfg.env_reads;
      left.append(el('h3', null, 'Environment variables of the recipe'));
      if (!env.traced) {
        left.append(el('p', { class: 'sub' }, 'No environment reads recorded: the recipe sets no variables, or the launcher cannot trace the server\u2019s processes (docs/env-trace.md).'));
      } else {
        const rows = env.read.map((v) => el('tr', null, cell(v.name), cell('read by ' + v.readers.join(', '))))
          .concat(env.never_read.map((v) => el('tr', { class: 'invalid' }, cell(v.name), cell('never read'))));
        left.append(rows.length ? table(['Variable', 'Read'], rows) : el('p', { class: 'sub' }, 'The recipe sets no variables.'));
      }
    }
    return box;
  }

  function selectPoint(uid) {
    state.point = uid;
    render();
    const d = document.getElementById('detail');
    if (d && uid) d.scrollIntoView({ block: 'start' });
  }

  // ------------------------------------------------------------------------------------------
  // Downloads: the rows as CSV and the whole data as JSON, from the embedded data.

  // The acceptance length a speculating server realised (its /metrics), the client's inference,
  // and the golden check when the recipe asked for one.
  function specText(p) {
    const parts = [];
    if (p.m.spec_acceptance_length != null) parts.push(fmt(p.m.spec_acceptance_length) + ' (server /metrics)');
    if (p.m.client_acceptance_length != null && p.m.tokens_per_event != null && p.m.tokens_per_event > 1.0001) {
      parts.push(fmt(p.m.client_acceptance_length) + ' (client, tokens per decode event)');
    }
    if (p.m.response_acceptance_length != null) {
      parts.push(fmt(p.m.response_acceptance_length) + ' (server, summed over its responses)');
    }
    const sa = p.m.spec_acceptance;
    if (sa) {
      parts.push((sa.passed ? '\u2713' : '\u2715') + ' golden ' + fmt(sa.golden) + ' \u00b1 ' + fmt(sa.tolerance) +
        ' (' + sa.source + ')');
    }
    return parts.length ? parts.join('; ') : 'not speculating, or not exported';
  }

  function csvRows() {
    const cols = ['run', 'role', 'point_id', 'config_key', 'series', 'model', 'workload', 'hardware', 'engine',
      'engine_version', 'precision', 'spec_decoding', 'parallelism', 'image', 'concurrency', 'status', 'valid',
      'validity', 'tput_per_gpu', 'output_tput_per_gpu', 'input_tput_per_gpu'];
    for (const q of Object.keys(PCTS)) cols.push('intvty_' + q, 'e2e_norm_intvty_' + q, 'ttft_ms_' + q, 'e2el_ms_' + q);
    for (const q of Object.keys(PCTS)) cols.push('itl_ms_' + q, 'icl_ms_' + q);
    cols.push('tokens_per_event', 'spec_acceptance_length', 'client_acceptance_length', 'response_acceptance_length',
      'golden_acceptance_length');
    cols.push('j_per_output_token', 'avg_power_w_per_gpu', 'usd_per_gpu_hour', 'usd_per_m_output_tokens');
    const esc = (v) => {
      const s = v == null ? '' : String(v);
      return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
    };
    const lines = [cols.join(',')];
    for (const p of points) {
      const id = p.cfg ? p.cfg.identity : {};
      const r = { run: (runs.get(p.run) || {}).name, role: p.role, point_id: p.id, config_key: p.config_key,
        series: p.series, model: p.model, workload: p.workload, hardware: id.hardware, engine: id.engine,
        engine_version: id.engine_version, precision: id.precision, spec_decoding: id.spec_decoding,
        parallelism: id.parallelism, image: id.image, concurrency: p.concurrency, status: p.status, valid: p.valid,
        validity: validityText(p), tput_per_gpu: p.m.tput_per_gpu, output_tput_per_gpu: p.m.output_tput_per_gpu,
        input_tput_per_gpu: p.m.input_tput_per_gpu, j_per_output_token: p.m.j_per_output_token,
        avg_power_w_per_gpu: p.m.avg_power_w, usd_per_gpu_hour: prices[hardwareOf(p)],
        usd_per_m_output_tokens: costPerMOut(p) };
      for (const q of Object.keys(PCTS)) {
        r['intvty_' + q] = p.m.intvty[q]; r['e2e_norm_intvty_' + q] = p.m.e2e_norm_intvty[q];
        r['ttft_ms_' + q] = p.m.ttft_ms[q]; r['e2el_ms_' + q] = p.m.e2el_ms[q];
        r['itl_ms_' + q] = p.m.itl_ms ? p.m.itl_ms[q] : null; r['icl_ms_' + q] = p.m.icl_ms ? p.m.icl_ms[q] : null;
      }
      r.tokens_per_event = p.m.tokens_per_event; r.spec_acceptance_length = p.m.spec_acceptance_length;
      r.client_acceptance_length = p.m.client_acceptance_length;
      r.response_acceptance_length = p.m.response_acceptance_length;
      r.golden_acceptance_length = p.m.spec_acceptance ? p.m.spec_acceptance.golden : null;
      lines.push(cols.map((c) => esc(r[c])).join(','));
    }
    return lines.join('\n') + '\n';
  }
  function downloads() {
    const json = JSON.stringify(DATA, (k, v) => (k === 'cfg' ? undefined : v), 1);
    return el('p', { class: 'downloads' }, 'Download: ',
      el('a', { href: 'data:text/csv;charset=utf-8,' + encodeURIComponent(csvRows()), download: 'inferbench-points.csv', id: 'dl-csv' }, 'points (CSV)'),
      el('a', { href: 'data:application/json;charset=utf-8,' + encodeURIComponent(json), download: 'inferbench-report.json', id: 'dl-json' }, 'all data (JSON)'));
  }

  // ------------------------------------------------------------------------------------------
  // Page

  function segmented(name, options, current, onpick, disabled) {
    return el('span', null, el('label', null, name),
      el('span', { class: 'seg', role: 'group', 'data-control': name },
        options.map(([k, label]) => el('button', { type: 'button', 'data-value': k, 'aria-pressed': k === current ? 'true' : 'false',
          disabled: disabled && disabled(k), onclick: () => onpick(k) }, label))));
  }

  function controls() {
    const xs = [['intvty', 'Interactivity'], ['e2el', 'E2E latency'], ['ttft', 'TTFT']];
    xs.splice(1, 0, ['e2e_norm', 'E2E-norm. interactivity']);
    return el('div', { class: 'controls' },
      segmented('Percentile', offeredPcts.map((q) => [q, q === 'p50' ? 'Median' : q.toUpperCase()]), state.pct,
        (q) => { state.pct = q; render(); }),
      segmented('x', xs, state.x, (k) => { state.x = k; render(); }),
      segmented('y', [['tput', 'tok/s/GPU'], ['out_tput', 'output tok/s/GPU'], ['cost', '$/M output tok'], ['energy', 'J/output tok']],
        state.y, (k) => { state.y = k; render(); }));
  }

  function semanticsNote() {
    return el('div', { class: 'note', id: 'tail-semantics' },
      el('b', null, 'Percentiles are the slow tail. '),
      'The selector (', el('b', { id: 'pct-now' }, PCTS[state.pct]), ') applies to every chart and table. ',
      'Each point\u2019s statistic is over its requests: TTFT and E2E latency at pXX are the times XX% of requests stayed within; ',
      'interactivity at pXX is 1 / pXX(TPOT) for fixed-sequence points (1 / pXX(ITL) for agentic ones), the speed XX% of requests decoded at or above, ',
      'so a higher percentile shows a lower interactivity; E2E-normalized interactivity at pXX is 1 / pXX(E2EL\u1d62 / output tokens\u1d62). ',
      'Throughput is per point and does not change with the percentile. ',
      'Fixed-sequence points have p50, p90, p99; agentic points p50, p75, p90, p95: a panel without the selected one shows its nearest and says so.');
  }

  function costBox() {
    const box = el('section', { id: 'cost' }, el('h2', null, 'Cost and energy assumptions'));
    const rows = hardwareKinds.map((h) => {
      const known = TCO[h.toUpperCase()] != null;
      return el('tr', null, cell(h),
        el('td', null, '$ ', el('input', { type: 'number', step: '0.01', min: '0', value: prices[h].toFixed(2), 'data-hardware': h,
          onchange: (ev) => { const v = parseFloat(ev.target.value); if (v > 0) { prices[h] = v; render(); } } }), ' per GPU-hour'),
        cell(known ? 'InferenceX dashboard default for ' + h + ' (\u201cOwning \u2013 Hyperscaler\u201d TCO tier; credited there to SemiAnalysis Market August 2025 Pricing Surveys & AI Cloud TCO Model). A TCO figure, not an on-demand price: edit it to yours.'
          : 'Placeholder ($' + PLACEHOLDER_PRICE.toFixed(2) + '): no source for this hardware. Edit it.'));
    });
    box.append(table(['Hardware', '$/GPU-hour', 'Source of the default'], rows));
    box.append(el('p', { class: 'sub' }, '$ per million output tokens = ($/GPU-hour \u00d7 10\u2076) / (output tok/s/GPU \u00d7 3600). ',
      'Joules per output token are measured (GPU energy over the point\u2019s window / output tokens) and shown only where the power measurement is valid; nothing is estimated.'));
    return box;
  }

  function provenance() {
    const box = el('section', { id: 'provenance' }, el('h2', null, 'Provenance'));
    for (const r of DATA.runs) {
      const cfgs = DATA.configs.filter((c) => c.run === r.uid);
      box.append(el('h3', null, 'Run ' + r.name + ' (id ' + r.id + (DATA.comparison ? ', ' + r.role : '') + ')'));
      box.append(kvTable([
        ['status', r.status], ['started / ended', r.started_text + ' / ' + (r.ended_text || '\u2013')],
        ['tool version', r.tool_version], ['git revision of the recipes', r.git_revision], ['host', r.host],
        ['command line', r.command_line], ['labels', (r.labels || []).join(', ')],
        ['recipe files', ((r.options || {}).recipes || []).join(', ')],
        ['images', [...new Set(cfgs.map((c) => c.identity.image))].join(', ')],
        ['points', r.points.ok + ' ok, ' + r.points.invalid + ' invalid, ' + r.points.failed + ' failed, ' + r.points.reused + ' reused'],
      ]));
      box.append(table(['Config', 'Fingerprint', 'Series', 'Parallelism', 'Launcher', 'Status', 'Recipe row'],
        cfgs.map((c) => el('tr', null, cell(c.config_key), cell(c.fingerprint.slice(0, 12)), cell(c.series),
          cell(c.identity.parallelism), cell(c.launcher), cell(c.status + (c.error ? ': ' + c.error : '')),
          el('td', null, el('details', null, el('summary', null, 'show'), el('pre', null, JSON.stringify(c.row, null, 1))))))));
      if (r.failures.length) {
        box.append(el('h3', null, 'Failures'));
        box.append(table(['At', 'Kind', 'Point', 'Message'], r.failures.map((f) =>
          el('tr', { class: 'invalid' }, cell(f.at), cell(f.kind), cell(f.point_id == null ? '\u2013' : f.point_id), cell(f.message)))));
      }
    }
    box.append(el('p', { class: 'sub' }, 'This report: ' + DATA.command_line + ' \u00b7 inferbench ' + DATA.tool_version + ' \u00b7 generated ' + DATA.generated_at));
    return box;
  }

  function confounderBox() {
    const box = el('section', { id: 'confounders' }, el('h2', null, 'Confounders: what differs besides the change'));
    if (!DATA.confounders.length) {
      box.append(el('p', null, el('span', { class: 'badge ok' }, 'none'),
        'Base and head agree on image, model, engine and version, hardware, precision, spec decoding, workload, tool version, host and time scale.'));
      return box;
    }
    box.append(el('div', { class: 'note warn' }, 'These identity fields differ between the base and head runs: a difference in the numbers may come from them, not from the change under test.'));
    box.append(table(['Field', 'Base', 'Head'], DATA.confounders.map((c) =>
      el('tr', { 'data-confounder': c.field }, cell(c.title), cell(c.base.join(', ') || '\u2013'), cell(c.head.join(', ') || '\u2013')))));
    return box;
  }

  function panelBox(panel) {
    const q = panelPct(panel);
    const measured = panel.points.filter((p) => p.measured);
    const invalid = panel.points.filter((p) => !p.valid && p.measured);
    const unmeasured = panel.points.filter((p) => !p.measured);
    const unplotted = panel.points.filter((p) => p.measured && (XS[state.x].get(p, q) == null || YS[state.y].get(p) == null));
    const box = el('section', { class: 'panel', id: panel.id, 'data-agentic': panel.agentic ? 1 : 0 });
    box.append(el('p', { class: 'panel-title' }, panel.model + ' \u00b7 ' + (panel.agentic ? 'agentic: ' : '') + panel.workload));
    const cap = [measured.length + ' of ' + panel.points.length + ' points measured',
      invalid.length + ' invalid (\u2715, excluded from frontiers)'];
    if (unmeasured.length) cap.push(unmeasured.length + ' failed without numbers (listed in the table)');
    if (unplotted.length) cap.push(unplotted.length + ' without a value on these axes (listed in the table, not drawn)');
    if (q !== state.pct) cap.push(state.pct + ' is not measured for ' + (panel.agentic ? 'agentic' : 'fixed-sequence') + ' points: showing ' + q);
    box.append(el('p', { class: 'panel-caption' }, cap.join(' \u00b7 ')));
    if (panel.agentic) {
      box.append(el('div', { class: 'note' }, el('b', null, 'North-Star rule (AgentX). '),
        'The canonical frontier is in (E2E-normalized interactivity at ' + q + ', y). In the interactivity, E2E-latency and TTFT views a point is on the frontier only when it is on that view\u2019s own Pareto set and on the canonical one, so the views agree on which configurations win.'));
    }
    box.append(el('div', { class: 'chart-wrap' }, el('div', { class: 'chart' }, drawChart(panel)), legend(panel)));
    if (DATA.comparison) box.append(isoDeltas(panel), matchedTable(panel));
    box.append(el('h3', null, 'Points'));
    box.append(pointsTable(panel));
    return box;
  }

  // Accuracy (docs/evals.md): exact match of both filters with standard errors, the threshold and
  // the gate; in a comparison each head eval beside its base with the change.
  function accuracyBox() {
    const box = el('section', { id: 'accuracy' }, el('h2', null, 'Accuracy'));
    const score = (v, se) => v == null ? '\u2013' : v.toFixed(4) + (se == null ? '' : ' \u00b1 ' + se.toFixed(4));
    const gate = (e) => e.gate_passed == null ? '\u2013' : e.gate_passed ? 'passed' : 'FAILED';
    const key = (p) => p.config_key + '\u0000' + p.workload + '\u0000' + p.concurrency;
    const base = new Map(evals.filter((p) => p.role === 'base').map((p) => [key(p), p]));
    const rows = evals.filter((p) => !DATA.comparison || p.role !== 'base').map((p) => {
      const b = base.get(key(p));
      const delta = b && b.eval.em_strict != null && p.eval.em_strict != null
        ? ((p.eval.em_strict - b.eval.em_strict) * 100).toFixed(1) + ' pts' : '\u2013';
      return el('tr', { class: p.eval.gate_passed === false ? 'invalid' : '', 'data-eval': p.uid },
        multiRun && !DATA.comparison ? cell((runs.get(p.run) || {}).name) : null,
        cell(p.config_key), cell(p.series, false, 'nowrap'), cell(p.eval.task + ' (' + p.workload + ')'),
        cell(p.concurrency, true), cell(score(p.eval.em_strict, p.eval.em_strict_se), true),
        cell(score(p.eval.em_flexible, p.eval.em_flexible_se), true),
        cell(p.eval.n_eff + ' / ' + p.eval.problems, true),
        DATA.comparison ? cell(b ? score(b.eval.em_strict, b.eval.em_strict_se) : '\u2013', true) : null,
        DATA.comparison ? cell(delta, true) : null,
        cell(p.eval.threshold == null ? '\u2013' : p.eval.threshold.toFixed(2), true),
        cell(gate(p.eval), false, p.eval.gate_passed === false ? 'delta-neg' : ''),
        cell(p.eval.threshold_source || ''));
    });
    box.append(table([multiRun && !DATA.comparison ? 'Run' : null, 'Config', 'Series', 'Task',
      { title: 'Conc', num: true }, { title: 'strict-match', num: true }, { title: 'flexible-extract', num: true },
      { title: 'Answered', num: true }, DATA.comparison ? { title: 'base strict-match', num: true } : null,
      DATA.comparison ? { title: '\u0394 strict', num: true } : null, { title: 'Threshold', num: true }, 'Gate',
      'Threshold from'], rows, { attrs: { class: 'accuracy' } }));
    box.append(el('p', { class: 'sub' }, 'Exact match after lm-eval\u2019s normalisation, \u00b1 its standard error; the gate needs both filters at or above the threshold (InferenceX).'));
    return box;
  }

  // ------------------------------------------------------------------------------------------
  // Trends (docs/history.md): each reported series over every stored run, its change points marked
  // with their step and what changed, and the latest value against the last stable segment.

  function trendChart(t) {
    const w = 560, h = 190, m = { l: 56, r: 12, t: 10, b: 28 };
    const pos = t.positions, n = pos.length;
    let lo = Infinity, hi = -Infinity;
    for (const p of pos) for (const v of p.values) if (v != null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    const pad = (hi - lo) * 0.15 || Math.abs(hi) * 0.05 || 1;
    lo -= pad; hi += pad;
    const sx = (i) => m.l + (n <= 1 ? 0.5 : i / (n - 1)) * (w - m.l - m.r);
    const sy = (v) => h - m.b - (v - lo) / (hi - lo) * (h - m.t - m.b);
    const s = sv('svg', { viewBox: `0 0 ${w} ${h}`, class: 'trend-chart' });
    const axis = sv('g', { class: 'axis' }), grid = sv('g', { class: 'grid' });
    for (const v of niceTicks(lo, hi, 4)) {
      grid.append(sv('line', { x1: m.l, x2: w - m.r, y1: sy(v), y2: sy(v) }));
      axis.append(sv('text', { x: m.l - 5, y: sy(v) + 4, 'text-anchor': 'end', style: 'font-size:11px' }, tickText(v)));
    }
    pos.forEach((p, i) => {
      if (n <= 24 || i % Math.ceil(n / 24) === 0) {
        axis.append(sv('text', { x: sx(i), y: h - m.b + 14, 'text-anchor': 'middle', style: 'font-size:10px' }, String(i + 1)));
      }
    });
    s.append(grid, axis);
    // Each segment's mean between change points, then the change points.
    const cuts = [0, ...t.change_points.map((c) => c.index), n];
    for (let k = 0; k + 1 < cuts.length; k++) {
      const vals = pos.slice(cuts[k], cuts[k + 1]).flatMap((p) => p.values.filter((v) => v != null));
      if (!vals.length) continue;
      const mean = vals.reduce((a, b) => a + b, 0) / vals.length;
      s.append(sv('line', { x1: sx(cuts[k]), x2: sx(cuts[k + 1] - 1), y1: sy(mean), y2: sy(mean), stroke: '#999', 'stroke-dasharray': '4 3' }));
    }
    let d = '';
    pos.forEach((p, i) => { if (p.mean != null) d += (d ? 'L' : 'M') + sx(i).toFixed(1) + ',' + sy(p.mean).toFixed(1); });
    s.append(sv('path', { d, fill: 'none', stroke: PALETTE[0], 'stroke-width': 2 }));
    pos.forEach((p, i) => {
      for (const v of p.values) if (v != null) s.append(sv('circle', { cx: sx(i), cy: sy(v), r: 2.6, fill: PALETTE[0] }));
    });
    for (const c of t.change_points) {
      const x = (sx(c.index - 1) + sx(c.index)) / 2;
      const col = c.regression ? '#c0392b' : '#1e8449';
      s.append(sv('line', { x1: x, x2: x, y1: m.t, y2: h - m.b, stroke: col, 'stroke-width': 1.5, 'data-change-point': c.index }));
      s.append(sv('text', { x: x + 3, y: m.t + 10, fill: col, style: 'font-size:11px' }, (c.step_pct > 0 ? '+' : '') + c.step_pct.toFixed(1) + '%'));
    }
    return s;
  }

  function changeText(t, c) {
    const a = c.attribution || {};
    const parts = [];
    for (const e of a.changelog_entries || []) parts.push('changelog: ' + (e.description || []).join(' ') + (e.pr_link ? ' (' + e.pr_link + ')' : ''));
    for (const k of a.key_changes || []) parts.push('recipe: ' + k);
    for (const f of a.confounders || []) parts.push(f.field + ': ' + (f.base || []).join(', ') + ' \u2192 ' + (f.head || []).join(', '));
    if (!parts.length) parts.push('nothing recorded changed between these runs');
    if (a.unread) parts.push('not read: ' + a.unread);
    const ci = c.step_ci_pct || [];
    return el('li', { class: c.regression ? 'delta-neg' : 'delta-pos' },
      'at position ' + (c.index + 1) + ' (' + (c.revision || 'no revision').slice(0, 12) + '): ' + (c.step_pct > 0 ? '+' : '') + c.step_pct.toFixed(2) + '%' +
      (ci[0] != null ? ' [' + ci[0].toFixed(2) + ', ' + ci[1].toFixed(2) + ']' : '') + (c.regression ? ', worse' : ', better') + ' \u2014 ' + parts.join('; '));
  }

  function trendsBox() {
    const box = el('section', { id: 'trends' }, el('h2', null, 'Trends'));
    box.append(el('p', { class: 'sub' }, 'Each series over every stored run in git or time order (one position per revision; repeats pooled). Change points: E-Divisive means with a t-test between the segments (docs/history.md); dashed lines are the segments\u2019 means.'));
    const trends = DATA.trends.slice().sort((a, b) => b.change_points.length - a.change_points.length);
    const grid = el('div', { class: 'trends-grid' });
    box.append(grid);
    for (const t of trends) {
      const card = el('div', { class: 'trend', 'data-trend': t.config_key + '|' + t.metric });
      card.append(el('div', { class: 'sm-title' }, t.config_key + ' \u00b7 ' + t.workload + ' \u00b7 conc ' + t.concurrency + ' \u00b7 ' + t.metric +
        ' (' + (t.higher_is_better ? 'higher' : 'lower') + ' is better)'));
      card.append(trendChart(t));
      const l = t.latest || {};
      card.append(el('p', { class: 'sub' }, 'latest ' + fmt(l.value, 3) + ' against the last stable segment\u2019s ' + fmt(l.last_segment_mean, 3) +
        (l.delta_pct != null ? ' (' + (l.delta_pct > 0 ? '+' : '') + l.delta_pct.toFixed(2) + '%)' : '')));
      if (t.change_points.length) card.append(el('ul', { class: 'changes' }, ...t.change_points.map((c) => changeText(t, c))));
      grid.append(card);
    }
    return box;
  }

  function header() {
    const heads = DATA.runs.filter((r) => r.role === 'head'), base = DATA.runs.find((r) => r.role === 'base');
    const models = [...new Set(points.map((p) => p.model))];
    const h = el('header');
    h.append(el('h1', null, 'inferbench report: ' + heads.map((r) => r.name).join(', ') + (base ? ' vs base ' + base.name : '')));
    const total = points.length, invalid = points.filter((p) => !p.valid).length;
    h.append(el('p', { class: 'sub' }, models.join(', ') + ' \u00b7 ' + panels.length + ' workload panel' + (panels.length === 1 ? '' : 's') +
      ' \u00b7 ' + total + ' points, ' + invalid + ' invalid \u00b7 generated ' + DATA.generated_at + ' by inferbench ' + DATA.tool_version));
    const badges = el('p');
    if (DATA.comparison) badges.append(el('span', { class: 'badge info' }, 'comparison'));
    if (invalid) badges.append(el('span', { class: 'badge bad', id: 'invalid-count' }, invalid + ' invalid point' + (invalid === 1 ? '' : 's')));
    const gated = evals.filter((p) => p.eval.gate_passed != null && (!DATA.comparison || p.role !== 'base'));
    if (gated.length) {
      const failed = gated.filter((p) => !p.eval.gate_passed).length;
      badges.append(failed
        ? el('span', { class: 'badge bad', id: 'accuracy-badge' }, 'accuracy gate failed: ' + failed + ' of ' + gated.length + ' eval' + (gated.length === 1 ? '' : 's'))
        : el('span', { class: 'badge ok', id: 'accuracy-badge' }, 'accuracy gate passed (' + gated.length + ' eval' + (gated.length === 1 ? '' : 's') + ')'));
    }
    if (points.some((p) => p.time_scale !== 1)) badges.append(el('span', { class: 'badge bad' }, 'time-scaled replay'));
    if (DATA.comparison && DATA.confounders.length) badges.append(el('span', { class: 'badge bad' }, DATA.confounders.length + ' confounder' + (DATA.confounders.length === 1 ? '' : 's')));
    h.append(badges, downloads());
    return h;
  }

  function method() {
    return el('section', { id: 'method' }, el('h2', null, 'How the charts are made'),
      el('p', null, 'A series is hardware \u00d7 engine \u00d7 precision \u00d7 spec decoding, from each server configuration\u2019s stored recipe row and effective configuration. ',
        'Its frontier is the Pareto set of its valid points on the current axes: sorted by x from best to worst, a point joins when its y beats every point with a better or equal x. ',
        'The line through the frontier is a monotone cubic (Steffen), so it never promises more than the points it joins; frontier deltas between runs interpolate on the same curve and only where both frontiers cover x. ',
        'Invalid points are drawn (\u2715) but never join a frontier.'));
  }

  const app = document.getElementById('app');
  function render() {
    writeHash();
    const main = el('main');
    main.append(header(), controls());
    // The selected point's detail opens at the top, under the controls.
    const d = detail();
    if (d) main.append(d);
    main.append(semanticsNote());
    if (DATA.comparison) main.append(confounderBox());
    if (!points.length && !evals.length) main.append(el('div', { class: 'note warn' }, 'These runs stored no points.'));
    for (const panel of panels) main.append(panelBox(panel));
    if (evals.length) main.append(accuracyBox());
    if (DATA.trends && DATA.trends.length) main.append(trendsBox());
    main.append(costBox(), method(), provenance());
    app.replaceChildren(main, tip);
    markOverflow();
  }
  // A table wider than the page scrolls sideways inside its frame; say so on the frame, so that a
  // reader knows columns are out of view (and a test can see it: data-overflow).
  function markOverflow() {
    for (const w of document.querySelectorAll('.table-wrap')) {
      if (w.scrollWidth > w.clientWidth + 1) w.setAttribute('data-overflow', 'yes');
      else w.removeAttribute('data-overflow');
    }
  }
  readHash();
  render();
  window.addEventListener('hashchange', () => { readHash(); render(); });
  window.addEventListener('resize', markOverflow);
})();
