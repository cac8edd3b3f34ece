/**
 * The page shell shared by the evaluation and run reports: inline CSS, one inline script allowed by
 * a Content-Security-Policy hash (nothing else can run, nothing can be fetched), and the markup.
 */
import { createHash } from 'node:crypto';
import { html, raw, type SafeHtml } from './html.js';
import { STATE_COLORS } from './theme.js';

const stateCss = Object.entries(STATE_COLORS)
  .map(([state, c]) => `.st-${state}{--st:${c.fg};--st-tint:${c.tint}}`)
  .join('\n');

export const CSS = `
:root{--ink:#1b2331;--ink-2:#3b4557;--muted:#6b7383;--faint:#9aa1ad;--line:#e4e7ec;--line-2:#eef0f3;--bg:#f5f6f8;--card:#fff;--accent:#2f5bd3;--radius:12px;
--font:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","DejaVu Sans",sans-serif;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
${stateCss}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.55 var(--font);font-variant-numeric:tabular-nums}
body:has(.dialogue:target){overflow:hidden}
a{color:var(--accent);text-decoration:none}
a:hover{text-decoration:underline}
code{font:13px var(--mono);background:var(--line-2);padding:1px 5px;border-radius:4px}
h1,h2,h3{margin:0;line-height:1.25;letter-spacing:-.01em}
h1{font-size:26px;font-weight:700;word-break:break-word}
h2{font-size:16px;font-weight:650}
.wrap{max-width:1180px;margin:0 auto;padding:0 28px}
header.top{background:var(--card);border-bottom:1px solid var(--line)}
header.top .wrap{padding-top:22px;padding-bottom:20px}
.brand{font-size:12px;font-weight:700;letter-spacing:.08em;text-transform:uppercase;color:var(--accent);margin-bottom:6px}
.brand span{color:var(--muted);font-weight:600}
.meta{margin-top:8px;color:var(--muted);font-size:14px;display:flex;flex-wrap:wrap;gap:4px 18px}
.meta b{color:var(--ink-2);font-weight:600}
main.wrap{padding-top:24px;padding-bottom:56px}
section,figure{margin:0 0 22px}
.card{background:var(--card);border:1px solid var(--line);border-radius:var(--radius);padding:18px 20px;box-shadow:0 1px 2px rgba(16,24,40,.04)}
.card-head{display:flex;align-items:baseline;justify-content:space-between;gap:12px;flex-wrap:wrap;margin-bottom:10px}
.card-head p{margin:2px 0 0;color:var(--muted);font-size:13px}
.grid2{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:22px}
.grid2>figure,.grid2>section{margin:0}
@media (max-width:900px){.grid2{grid-template-columns:1fr}.wrap{padding:0 16px}}
.chart-box{position:relative}
svg.chart{display:block;width:100%;height:auto;overflow:visible;font-family:var(--font)}
svg.chart .grid{stroke:var(--line);stroke-width:1}
svg.chart .axis{stroke:#c5cad3;stroke-width:1}
svg.chart .tick-mark{stroke:#c5cad3}
svg.chart .tick{fill:var(--muted);font-size:11.5px}
svg.chart .axis-label{fill:var(--muted);font-size:12px}
svg.chart .yband-label{fill:var(--faint);font-size:11px;font-weight:700}
svg.chart .ref{stroke-dasharray:5 4;stroke-width:1.3;stroke:#4b5563}
svg.chart .ref-label{font-size:11.5px;fill:#4b5563;font-weight:600}
svg.chart .bar-track{fill:var(--line-2)}
svg.chart .bar-label{fill:var(--ink-2);font-size:13px}
svg.chart .bar-value{fill:var(--ink);font-size:13px;font-weight:700}
svg.chart .bar-note{fill:var(--muted);font-size:12px}
svg.chart .crosshair{stroke:#9aa1ad;stroke-width:1;stroke-dasharray:3 3;pointer-events:none}
svg.chart .hover-dot{stroke:#fff;stroke-width:1.5;pointer-events:none}
.tooltip{position:absolute;z-index:5;pointer-events:none;background:rgba(27,35,49,.94);color:#fff;font-size:12.5px;line-height:1.45;padding:7px 10px;border-radius:8px;white-space:nowrap;box-shadow:0 6px 20px rgba(0,0,0,.18)}
.tooltip .tip-head{font-weight:700;margin-bottom:2px}
.swatch{display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:6px;vertical-align:0}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12.5px;color:var(--muted)}
.legend .swatch.line{height:3px;width:14px;vertical-align:3px}
.legend .swatch.dash{height:0;width:14px;border-top:2px dashed currentColor;background:none!important;vertical-align:3px}
.hero{display:grid;grid-template-columns:minmax(300px,380px) 1fr;gap:22px;align-items:stretch}
@media (max-width:900px){.hero{grid-template-columns:1fr}}
.score-card{display:flex;flex-direction:column;justify-content:space-between;gap:14px}
.score-label{font-size:12px;font-weight:700;letter-spacing:.07em;text-transform:uppercase;color:var(--muted)}
.score-line{display:flex;align-items:center;gap:14px}
.score{font-size:64px;font-weight:750;line-height:1;letter-spacing:-.03em;color:var(--st)}
.score small{font-size:22px;color:var(--faint);font-weight:600;letter-spacing:0}
.score-sub{color:var(--muted);font-size:13.5px}
.state{display:inline-flex;align-items:center;justify-content:center;min-width:22px;height:22px;padding:0 6px;border-radius:6px;font-size:12px;font-weight:800;color:#fff;background:var(--st)}
.state.big{min-width:40px;height:40px;font-size:22px;border-radius:10px}
.dist{display:flex;height:14px;border-radius:7px;overflow:hidden;background:var(--line-2)}
.dist>span{display:block;background:var(--st);min-width:3px}
.dist-legend{display:flex;flex-wrap:wrap;gap:2px 12px;margin-top:7px;font-size:12px;color:var(--muted)}
.dist-legend b{color:var(--ink-2)}
.stats{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:14px}
@media (max-width:700px){.stats{grid-template-columns:repeat(2,minmax(0,1fr))}}
.stat{background:var(--card);border:1px solid var(--line);border-radius:var(--radius);padding:14px 16px;position:relative;overflow:hidden}
.stat::before{content:"";position:absolute;left:0;top:0;bottom:0;width:4px;background:var(--st,transparent)}
.stat .k{font-size:12px;font-weight:650;color:var(--muted);text-transform:uppercase;letter-spacing:.06em}
.stat .v{font-size:28px;font-weight:720;line-height:1.2;margin-top:4px;letter-spacing:-.02em}
.stat .v small{font-size:14px;color:var(--faint);font-weight:600;letter-spacing:0}
.stat .d{font-size:12.5px;color:var(--muted)}
.traj-info{min-height:22px;font-size:13px;color:var(--muted);margin:2px 0 6px}
.traj-info b{color:var(--ink)}
svg.trajectories .traj .line{transition:stroke-opacity .12s,stroke-width .12s}
svg.trajectories .traj{cursor:pointer}
svg.trajectories.has-hl .traj .line{stroke-opacity:.16}
svg.trajectories.has-hl .traj .marker{fill-opacity:.16}
svg.trajectories .traj.hl .line,svg.trajectories .traj.sel .line{stroke-opacity:1!important;stroke-width:3.5}
svg.trajectories .traj.hl .marker,svg.trajectories .traj.sel .marker{fill-opacity:1!important}
svg.trajectories .mean{pointer-events:none}
.table-wrap{overflow:auto;border:1px solid var(--line);border-radius:10px}
.table-wrap.tall{max-height:560px}
table{border-collapse:collapse;width:100%;font-size:14px;background:var(--card)}
table.steps{font-size:13px}
table.steps th,table.steps td{padding:7px 7px}
.emo-pill.tinted{color:var(--st)}
table.steps th{white-space:normal;vertical-align:bottom;letter-spacing:.03em;font-size:11.5px}
th,td{padding:8px 11px;text-align:left;border-bottom:1px solid var(--line-2);white-space:nowrap}
th{position:sticky;top:0;background:#fafbfc;font-size:12px;font-weight:700;color:var(--muted);text-transform:uppercase;letter-spacing:.05em;z-index:1;border-bottom:1px solid var(--line)}
th.num,td.num{text-align:right}
th[data-sortable]{cursor:pointer;user-select:none}
th[data-sortable]::after{content:"\\2195";opacity:.35;margin-left:4px;font-size:11px}
th[aria-sort=ascending]::after{content:"\\2191";opacity:.9}
th[aria-sort=descending]::after{content:"\\2193";opacity:.9}
tbody tr:last-child td{border-bottom:none}
tbody tr.clickable{cursor:pointer}
tbody tr:hover,tbody tr.hl{background:#f4f7ff}
td .spark{vertical-align:middle}
svg.spark .spark-base{stroke:var(--line);stroke-dasharray:2 2}
.emo-pill{display:inline-flex;align-items:center;gap:6px;font-weight:700}
.emo-pill .state{min-width:20px;height:20px;font-size:11px}
.outcome{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:650;background:var(--line-2);color:var(--ink-2)}
.outcome.success{background:${STATE_COLORS.S.tint};color:${STATE_COLORS.S.fg}}
.outcome.failure,.outcome.failed,.outcome.malformed{background:${STATE_COLORS.F.tint};color:${STATE_COLORS.F.fg}}
.outcome.goodbye{background:#eef2ff;color:#4338ca}
.muted{color:var(--muted)}
.empty{padding:28px;text-align:center;color:var(--muted);background:var(--line-2);border-radius:10px}
.notes{margin:0 0 22px;padding:12px 16px;border-radius:10px;background:#fff8e6;border:1px solid #f5dfa3;color:#6b4e00;font-size:13.5px}
.notes ul{margin:4px 0 0;padding-left:18px}
footer.page{color:var(--muted);font-size:12.5px;border-top:1px solid var(--line);padding-top:14px;display:flex;flex-wrap:wrap;gap:4px 18px}
/* transcript viewer: a drawer opened by the URL fragment (works without JavaScript) */
.dialogue{display:none}
.backdrop{display:none}
body:has(.dialogue:target) .backdrop{display:block;position:fixed;inset:0;background:rgba(17,24,39,.38);z-index:20}
.dialogue:target{display:block;position:fixed;top:0;right:0;bottom:0;width:min(760px,100vw);overflow-y:auto;background:var(--bg);z-index:21;box-shadow:-12px 0 40px rgba(0,0,0,.18);animation:slide .18s ease-out}
@keyframes slide{from{transform:translateX(32px)}to{transform:none}}
@media (prefers-reduced-motion:reduce){.dialogue:target{animation:none}}
.dialogue:focus{outline:none}
.dlg-head{position:sticky;top:0;z-index:2;background:var(--card);border-bottom:1px solid var(--line);padding:16px 24px 14px}
.dlg-nav{display:flex;gap:8px;justify-content:flex-end;align-items:center;margin-bottom:4px;font-size:13px}
.dlg-nav a{padding:3px 10px;border:1px solid var(--line);border-radius:7px;color:var(--ink-2);background:var(--card)}
.dlg-nav a:hover{text-decoration:none;background:var(--line-2)}
.dlg-nav .spacer{flex:1}
.dlg-head h2{font-size:20px}
.dlg-head .persona{margin:3px 0 8px;color:var(--muted);font-size:14px}
.dlg-stats{display:flex;flex-wrap:wrap;align-items:center;gap:8px 16px;font-size:13.5px;color:var(--ink-2)}
.dlg-body{padding:18px 24px 40px}
details.scenario{margin:0 0 16px;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 14px;font-size:14px}
details.scenario summary{cursor:pointer;font-weight:650;color:var(--ink-2)}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:6px 14px;margin:10px 0 2px}
dl.kv dt{color:var(--muted);font-size:12.5px;font-weight:650;text-transform:uppercase;letter-spacing:.04em;padding-top:1px}
dl.kv dd{margin:0;white-space:pre-wrap}
ol.turns{list-style:none;margin:0;padding:0}
.turn{margin:0 0 18px}
.turn-label{display:flex;align-items:center;gap:10px;font-size:11.5px;font-weight:750;color:var(--faint);text-transform:uppercase;letter-spacing:.08em;margin:6px 0 10px}
.turn-label::after{content:"";flex:1;border-top:1px solid var(--line)}
.msg{display:flex;flex-direction:column;margin:0 0 10px;max-width:88%}
.msg .who{font-size:12px;font-weight:650;color:var(--muted);margin:0 4px 3px}
.bubble{padding:10px 14px;border-radius:14px;white-space:pre-wrap;overflow-wrap:anywhere;line-height:1.5}
.msg.user .bubble{background:var(--card);border:1px solid var(--line);border-top-left-radius:4px}
.msg.assistant{margin-left:auto;align-items:flex-end}
.msg.assistant .bubble{background:#2f5bd3;color:#fff;border-top-right-radius:4px}
.msg.assistant.malformed .bubble{background:${STATE_COLORS.F.tint};color:${STATE_COLORS.F.fg};border:1px dashed ${STATE_COLORS.F.fg}}
details.thinking{max-width:100%;margin:0 0 6px;font-size:13px;align-self:stretch}
details.thinking summary{cursor:pointer;color:var(--muted);text-align:right;list-style-position:inside}
details.thinking .pre{margin-top:6px;padding:9px 12px;background:#eef1f8;border-radius:10px;white-space:pre-wrap;overflow-wrap:anywhere;color:var(--ink-2);font-style:italic}
.inner{display:grid;grid-template-columns:auto 1fr;gap:12px;align-items:start;margin:4px 0 14px;padding:10px 14px;border-radius:12px;background:var(--st-tint,#f3f4f6);border:1px solid rgba(0,0,0,.04)}
.delta{font-size:20px;font-weight:800;min-width:52px;text-align:center;padding:6px 4px;border-radius:10px;background:var(--card);line-height:1.1}
.delta.up{color:${STATE_COLORS.A.fg}}
.delta.down{color:${STATE_COLORS.F.fg}}
.delta.flat{color:var(--muted)}
.delta small{display:block;font-size:10.5px;font-weight:650;color:var(--muted);text-transform:uppercase;letter-spacing:.05em;margin-top:2px}
.inner-label{font-size:11.5px;font-weight:700;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.thought{margin:2px 0 6px;font-style:italic;white-space:pre-wrap;overflow-wrap:anywhere;color:var(--ink)}
.emo-after{font-size:13px;color:var(--ink-2);display:flex;align-items:center;gap:8px}
.inner details{margin-top:6px;font-size:13px}
.inner details summary{cursor:pointer;color:var(--muted)}
.start-emo{display:flex;align-items:center;gap:8px;justify-content:center;margin:2px 0 14px;font-size:12.5px;color:var(--muted)}
.dlg-end{margin-top:10px;padding:12px 14px;border-radius:10px;background:var(--card);border:1px solid var(--line);font-size:13.5px;color:var(--ink-2)}
.error-box{padding:12px 14px;border-radius:10px;background:${STATE_COLORS.F.tint};color:${STATE_COLORS.F.fg};white-space:pre-wrap;overflow-wrap:anywhere;font:13px var(--mono)}
@media print{.dialogue:target,.backdrop{display:none!important}}
`;

/** Progressive enhancement only: hover read-outs, highlighting, sorting, keyboard. The page works without it. */
export const SCRIPT = `(function () {
  'use strict';
  function num(v, d) {
    if (v === null || v === undefined || !isFinite(v)) return '\\u2013';
    if (Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3)) return v.toExponential(2);
    return String(Number(v.toFixed(d === undefined ? 3 : d)));
  }
  function hoverChart(svg) {
    var data;
    try { data = JSON.parse(svg.getAttribute('data-hover')); } catch (e) { return; }
    if (!data || !data.xs || !data.xs.length) return;
    var NS = 'http://www.w3.org/2000/svg';
    var box = svg.parentNode;
    var line = document.createElementNS(NS, 'line');
    line.setAttribute('class', 'crosshair');
    line.setAttribute('y1', data.plot[1]);
    line.setAttribute('y2', data.plot[3]);
    line.style.display = 'none';
    svg.appendChild(line);
    var dots = data.series.map(function (s) {
      var c = document.createElementNS(NS, 'circle');
      c.setAttribute('r', '4.5');
      c.setAttribute('class', 'hover-dot');
      c.setAttribute('fill', s.c);
      c.style.display = 'none';
      svg.appendChild(c);
      return c;
    });
    var tip = document.createElement('div');
    tip.className = 'tooltip';
    tip.hidden = true;
    box.appendChild(tip);
    function sx(x) { return data.plot[0] + (x - data.x[0]) / (data.x[1] - data.x[0]) * (data.plot[2] - data.plot[0]); }
    function sy(y) { return data.plot[3] - (y - data.y[0]) / (data.y[1] - data.y[0]) * (data.plot[3] - data.plot[1]); }
    function hide() { line.style.display = 'none'; dots.forEach(function (d) { d.style.display = 'none'; }); tip.hidden = true; }
    svg.addEventListener('mouseleave', hide);
    svg.addEventListener('mousemove', function (ev) {
      var r = svg.getBoundingClientRect();
      var vx = (ev.clientX - r.left) / r.width * data.vb[0];
      if (vx < data.plot[0] - 10 || vx > data.plot[2] + 10) { hide(); return; }
      var best = 0, bd = Infinity;
      for (var i = 0; i < data.xs.length; i++) {
        var dd = Math.abs(sx(data.xs[i]) - vx);
        if (dd < bd) { bd = dd; best = i; }
      }
      var px = sx(data.xs[best]);
      line.setAttribute('x1', px); line.setAttribute('x2', px); line.style.display = '';
      tip.textContent = '';
      var head = document.createElement('div');
      head.className = 'tip-head';
      head.textContent = data.xl + ' ' + num(data.xs[best], 3);
      tip.appendChild(head);
      var shown = [];
      data.series.forEach(function (s, k) {
        var y = s.ys[best];
        if (y === null || y === undefined) { dots[k].style.display = 'none'; return; }
        dots[k].setAttribute('cx', px); dots[k].setAttribute('cy', sy(y)); dots[k].style.display = '';
        shown.push({ s: s, y: y });
      });
      // Listed top to bottom as the lines lie on the chart.
      shown.sort(function (a, b) { return b.y - a.y; });
      shown.forEach(function (item) {
        var s = item.s, y = item.y;
        var row = document.createElement('div');
        var sw = document.createElement('span');
        sw.className = 'swatch';
        sw.style.background = s.c;
        row.appendChild(sw);
        row.appendChild(document.createTextNode(s.n + ': ' + num(y, data.d)));
        tip.appendChild(row);
      });
      tip.hidden = false;
      var scale = r.width / data.vb[0];
      var b = box.getBoundingClientRect();
      var left = r.left - b.left + px * scale;
      var w = tip.offsetWidth;
      tip.style.left = (left + 14 + w > b.width ? left - 14 - w : left + 14) + 'px';
      tip.style.top = (r.top - b.top + data.plot[1] * scale + 4) + 'px';
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('svg[data-hover]'), hoverChart);

  // Emotion trajectories: hover a line or a table row to highlight the dialogue; click to open it.
  var traj = document.querySelector('svg.trajectories');
  var info = document.getElementById('traj-info');
  var infoDefault = info ? info.textContent : '';
  function groups() { return traj ? traj.querySelectorAll('.traj') : []; }
  function highlight(target) {
    if (traj) traj.classList.toggle('has-hl', !!target || !!traj.querySelector('.traj.sel'));
    Array.prototype.forEach.call(groups(), function (g) {
      var on = g.getAttribute('data-target') === target;
      g.classList.toggle('hl', on);
      if (on) g.parentNode.appendChild(g);
    });
    Array.prototype.forEach.call(document.querySelectorAll('tr[data-target]'), function (tr) {
      tr.classList.toggle('hl', tr.getAttribute('data-target') === target);
    });
    if (info) {
      var g = target && traj ? traj.querySelector('.traj[data-target="' + target + '"]') : null;
      info.textContent = g ? g.getAttribute('data-label') : infoDefault;
    }
  }
  function open(target) { if (target) location.hash = target; }
  Array.prototype.forEach.call(groups(), function (g) {
    g.addEventListener('mouseenter', function () { highlight(g.getAttribute('data-target')); });
    g.addEventListener('mouseleave', function () { highlight(null); });
    g.addEventListener('click', function () { open(g.getAttribute('data-target')); });
  });
  Array.prototype.forEach.call(document.querySelectorAll('tr[data-target]'), function (tr) {
    tr.classList.add('clickable');
    tr.addEventListener('mouseenter', function () { highlight(tr.getAttribute('data-target')); });
    tr.addEventListener('mouseleave', function () { highlight(null); });
    tr.addEventListener('click', function (ev) {
      if (ev.target && ev.target.closest && ev.target.closest('a')) return;
      open(tr.getAttribute('data-target'));
    });
  });
  function syncSelection() {
    var id = location.hash.slice(1);
    var el = id ? document.getElementById(id) : null;
    var isDialogue = !!(el && el.classList.contains('dialogue'));
    Array.prototype.forEach.call(groups(), function (g) {
      var on = isDialogue && g.getAttribute('data-target') === id;
      g.classList.toggle('sel', on);
      if (on) g.parentNode.appendChild(g);
    });
    if (traj) traj.classList.toggle('has-hl', isDialogue);
    if (isDialogue) { el.scrollTop = 0; el.focus({ preventScroll: true }); }
  }
  window.addEventListener('hashchange', syncSelection);
  syncSelection();
  document.addEventListener('keydown', function (ev) {
    var id = location.hash.slice(1);
    var el = id ? document.getElementById(id) : null;
    if (!el || !el.classList.contains('dialogue')) return;
    var link = null;
    if (ev.key === 'Escape') link = el.querySelector('a.close');
    else if (ev.key === 'ArrowRight' || ev.key === 'j') link = el.querySelector('a.next');
    else if (ev.key === 'ArrowLeft' || ev.key === 'k') link = el.querySelector('a.prev');
    if (link) { ev.preventDefault(); location.hash = link.getAttribute('href').slice(1); }
  });

  // Sortable tables: click a header; cells carry their sort value in data-v.
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    var heads = table.querySelectorAll('th');
    Array.prototype.forEach.call(heads, function (th, col) {
      if (!th.hasAttribute('data-sortable')) return;
      th.addEventListener('click', function () {
        var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col] ? a.cells[col].getAttribute('data-v') : '';
          var y = b.cells[col] ? b.cells[col].getAttribute('data-v') : '';
          var nx = parseFloat(x), ny = parseFloat(y);
          var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
          return c * dir;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
`;

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

export interface PageOptions {
  title: string;
  body: SafeHtml;
}

/** A complete, self-contained HTML document. */
export function renderPage(options: PageOptions): string {
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${sha256(SCRIPT)}'; img-src data:; base-uri 'none'; form-action 'none'`;
  return `<!DOCTYPE html>\n${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta http-equiv="Content-Security-Policy" content="${csp}" />
        <meta name="generator" content="attune report" />
        <title>${options.title}</title>
        <style>
          ${raw(CSS)}
        </style>
      </head>
      <body>
        ${options.body}
        <script>
          ${raw(SCRIPT)};
        </script>
      </body>
    </html> `.value
  }`;
}
