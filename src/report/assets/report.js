// @ts-check
/*
 * The report pages' script, inlined as it is here: the page's Content-Security-Policy allows exactly this
 * text by its hash. Progressive enhancement only: hover read-outs, highlighting, sorting, keyboard. The page
 * works without it. Plain JavaScript (checked by tsc with JSDoc types) so that no compiler is needed to
 * write a report.
 */
(function () {
  'use strict';

  /**
   * What a line chart carries in its data-hover attribute (written by charts.ts).
   * @typedef {object} HoverSeries
   * @property {string} n name
   * @property {string} c colour
   * @property {(number | null)[]} ys the value at each of HoverData.xs (null: none)
   *
   * @typedef {object} HoverData
   * @property {[number, number]} vb viewBox width and height
   * @property {[number, number, number, number]} plot plot area: left, top, right, bottom
   * @property {[number, number]} x x domain
   * @property {[number, number]} y y domain
   * @property {number[]} xs every x that has a value, ascending
   * @property {string} xl x-axis label
   * @property {number} d digits to show
   * @property {HoverSeries[]} series
   */

  /**
   * @param {number | null | undefined} v
   * @param {number} [d]
   */
  function num(v, d) {
    if (v === null || v === undefined || !isFinite(v)) return '\u2013';
    if (Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3)) return v.toExponential(2);
    return String(Number(v.toFixed(d === undefined ? 3 : d)));
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';

  /**
   * The chart's hover data, or null when it has none to show.
   * @param {SVGSVGElement} svg
   * @returns {HoverData | null}
   */
  function hoverData(svg) {
    /** @type {HoverData | null} */
    let parsed;
    try {
      parsed = JSON.parse(/** @type {string} */ (svg.getAttribute('data-hover')));
    } catch {
      return null;
    }
    if (!parsed || !parsed.xs || !parsed.xs.length) return null;
    return parsed;
  }

  /**
   * What the read-out draws: a crosshair line and a dot per series on the chart, a tooltip in its box; all hidden.
   * @typedef {object} HoverLayer
   * @property {SVGLineElement} line
   * @property {{ s: HoverSeries, dot: SVGCircleElement }[]} marks
   * @property {HTMLDivElement} tip
   *
   * @param {SVGSVGElement} svg
   * @param {HoverData} data
   * @param {HTMLElement} box
   * @returns {HoverLayer}
   */
  function hoverLayer(svg, data, box) {
    const line = document.createElementNS(SVG_NS, 'line');
    line.setAttribute('class', 'crosshair');
    line.setAttribute('y1', String(data.plot[1]));
    line.setAttribute('y2', String(data.plot[3]));
    line.style.display = 'none';
    svg.appendChild(line);
    const marks = data.series.map(function (s) {
      const c = document.createElementNS(SVG_NS, 'circle');
      c.setAttribute('r', '4.5');
      c.setAttribute('class', 'hover-dot');
      c.setAttribute('fill', s.c);
      c.style.display = 'none';
      svg.appendChild(c);
      return { s: s, dot: c };
    });
    const tip = document.createElement('div');
    tip.className = 'tooltip';
    tip.hidden = true;
    box.appendChild(tip);
    return { line: line, marks: marks, tip: tip };
  }

  /**
   * Where x and y of the data lie in the chart's viewBox.
   * @param {HoverData} data
   */
  function hoverScales(data) {
    return {
      /** @param {number} x */
      sx: function (x) {
        return data.plot[0] + ((x - data.x[0]) / (data.x[1] - data.x[0])) * (data.plot[2] - data.plot[0]);
      },
      /** @param {number} y */
      sy: function (y) {
        return data.plot[3] - ((y - data.y[0]) / (data.y[1] - data.y[0])) * (data.plot[3] - data.plot[1]);
      },
    };
  }

  /**
   * The index of the x nearest to the pointer (the first of equals).
   * @param {number[]} xs
   * @param {(x: number) => number} sx
   * @param {number} vx the pointer's x in the viewBox
   */
  function nearestIndex(xs, sx, vx) {
    let best = 0;
    let bd = Infinity;
    xs.forEach(function (x, i) {
      const dd = Math.abs(sx(x) - vx);
      if (dd < bd) {
        bd = dd;
        best = i;
      }
    });
    return best;
  }

  /**
   * Puts each series' dot on its value at the index (hidden where it has none); returns the values shown.
   * @param {HoverLayer['marks']} marks
   * @param {number} index
   * @param {number} px
   * @param {(y: number) => number} sy
   * @returns {{ s: HoverSeries, y: number }[]}
   */
  function placeDots(marks, index, px, sy) {
    /** @type {{ s: HoverSeries, y: number }[]} */
    const shown = [];
    marks.forEach(function (m) {
      const y = m.s.ys[index];
      if (y === null || y === undefined) {
        m.dot.style.display = 'none';
        return;
      }
      m.dot.setAttribute('cx', String(px));
      m.dot.setAttribute('cy', String(sy(y)));
      m.dot.style.display = '';
      shown.push({ s: m.s, y: y });
    });
    return shown;
  }

  /**
   * The tooltip's text: the x, then one row per value shown, top to bottom as the lines lie on the chart.
   * @param {HTMLDivElement} tip
   * @param {HoverData} data
   * @param {number} x
   * @param {{ s: HoverSeries, y: number }[]} shown
   */
  function fillTip(tip, data, x, shown) {
    tip.textContent = '';
    const head = document.createElement('div');
    head.className = 'tip-head';
    head.textContent = data.xl + ' ' + num(x, 3);
    tip.appendChild(head);
    shown.sort(function (a, b) {
      return b.y - a.y;
    });
    shown.forEach(function (item) {
      const row = document.createElement('div');
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = item.s.c;
      row.appendChild(sw);
      row.appendChild(document.createTextNode(item.s.n + ': ' + num(item.y, data.d)));
      tip.appendChild(row);
    });
  }

  /**
   * Shows the tooltip beside the crosshair: on its right, or on its left where the box ends.
   * @param {HTMLDivElement} tip
   * @param {HTMLElement} box
   * @param {DOMRect} r the chart's rectangle
   * @param {HoverData} data
   * @param {number} px the crosshair's x in the viewBox
   */
  function placeTip(tip, box, r, data, px) {
    tip.hidden = false;
    const scale = r.width / data.vb[0];
    const b = box.getBoundingClientRect();
    const left = r.left - b.left + px * scale;
    const w = tip.offsetWidth;
    tip.style.left = (left + 14 + w > b.width ? left - 14 - w : left + 14) + 'px';
    tip.style.top = r.top - b.top + data.plot[1] * scale + 4 + 'px';
  }

  /**
   * The crosshair read-out of a line chart: the values of every series at the x nearest the pointer.
   * @param {SVGSVGElement} svg
   */
  function hoverChart(svg) {
    const data = hoverData(svg);
    if (!data) return;
    const box = /** @type {HTMLElement} */ (svg.parentNode);
    const layer = hoverLayer(svg, data, box);
    const scales = hoverScales(data);
    function hide() {
      layer.line.style.display = 'none';
      layer.marks.forEach(function (m) {
        m.dot.style.display = 'none';
      });
      layer.tip.hidden = true;
    }
    svg.addEventListener('mouseleave', hide);
    svg.addEventListener('mousemove', function (ev) {
      const r = svg.getBoundingClientRect();
      const vx = ((ev.clientX - r.left) / r.width) * data.vb[0];
      if (vx < data.plot[0] - 10 || vx > data.plot[2] + 10) {
        hide();
        return;
      }
      const best = nearestIndex(data.xs, scales.sx, vx);
      const bestX = /** @type {number} */ (data.xs[best]);
      const px = scales.sx(bestX);
      layer.line.setAttribute('x1', String(px));
      layer.line.setAttribute('x2', String(px));
      layer.line.style.display = '';
      fillTip(layer.tip, data, bestX, placeDots(layer.marks, best, px, scales.sy));
      placeTip(layer.tip, box, r, data, px);
    });
  }
  /** @type {NodeListOf<SVGSVGElement>} */ (document.querySelectorAll('svg[data-hover]')).forEach(hoverChart);

  // Emotion trajectories: hover a line or a table row to highlight the dialogue; click to open it.
  const traj = document.querySelector('svg.trajectories');
  const info = document.getElementById('traj-info');
  const infoDefault = info ? info.textContent : '';
  /** @returns {Element[]} */
  function groups() {
    return traj ? Array.from(traj.querySelectorAll('.traj')) : [];
  }
  /** @returns {Element[]} */
  function rowsWithTarget() {
    return Array.from(document.querySelectorAll('tr[data-target]'));
  }
  /** @param {string | null} target */
  function highlight(target) {
    if (traj) traj.classList.toggle('has-hl', !!target || !!traj.querySelector('.traj.sel'));
    groups().forEach(function (g) {
      const on = g.getAttribute('data-target') === target;
      g.classList.toggle('hl', on);
      if (on) g.parentNode?.appendChild(g);
    });
    rowsWithTarget().forEach(function (tr) {
      tr.classList.toggle('hl', tr.getAttribute('data-target') === target);
    });
    if (info) {
      const g = target && traj ? traj.querySelector('.traj[data-target="' + target + '"]') : null;
      info.textContent = g ? g.getAttribute('data-label') : infoDefault;
    }
  }
  /** @param {string | null} target */
  function open(target) {
    if (target) location.hash = target;
  }
  groups().forEach(function (g) {
    g.addEventListener('mouseenter', function () {
      highlight(g.getAttribute('data-target'));
    });
    g.addEventListener('mouseleave', function () {
      highlight(null);
    });
    g.addEventListener('click', function () {
      open(g.getAttribute('data-target'));
    });
  });
  rowsWithTarget().forEach(function (tr) {
    tr.classList.add('clickable');
    tr.addEventListener('mouseenter', function () {
      highlight(tr.getAttribute('data-target'));
    });
    tr.addEventListener('mouseleave', function () {
      highlight(null);
    });
    tr.addEventListener('click', function (ev) {
      if (ev.target instanceof Element && ev.target.closest('a')) return;
      open(tr.getAttribute('data-target'));
    });
  });
  function syncSelection() {
    const id = location.hash.slice(1);
    const el = id ? document.getElementById(id) : null;
    const isDialogue = !!(el && el.classList.contains('dialogue'));
    groups().forEach(function (g) {
      const on = isDialogue && g.getAttribute('data-target') === id;
      g.classList.toggle('sel', on);
      if (on) g.parentNode?.appendChild(g);
    });
    if (traj) traj.classList.toggle('has-hl', isDialogue);
    if (el && isDialogue) {
      el.scrollTop = 0;
      el.focus({ preventScroll: true });
    }
  }
  window.addEventListener('hashchange', syncSelection);
  syncSelection();
  document.addEventListener('keydown', function (ev) {
    const id = location.hash.slice(1);
    const el = id ? document.getElementById(id) : null;
    if (!el || !el.classList.contains('dialogue')) return;
    let link = null;
    if (ev.key === 'Escape') link = el.querySelector('a.close');
    else if (ev.key === 'ArrowRight' || ev.key === 'j') link = el.querySelector('a.next');
    else if (ev.key === 'ArrowLeft' || ev.key === 'k') link = el.querySelector('a.prev');
    if (link) {
      ev.preventDefault();
      location.hash = /** @type {string} */ (link.getAttribute('href')).slice(1);
    }
  });

  // Sortable tables: click a header; cells carry their sort value in data-v.
  /** @type {NodeListOf<HTMLTableElement>} */ (document.querySelectorAll('table.sortable')).forEach(function (table) {
    const heads = table.querySelectorAll('th');
    heads.forEach(function (th, col) {
      if (!th.hasAttribute('data-sortable')) return;
      /** @param {HTMLTableRowElement} row */
      function sortValue(row) {
        const cell = row.cells[col];
        return String(cell ? cell.getAttribute('data-v') : '');
      }
      th.addEventListener('click', function () {
        const dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
        heads.forEach(function (h) {
          h.removeAttribute('aria-sort');
        });
        th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
        const body = /** @type {HTMLTableSectionElement} */ (table.tBodies[0]);
        const rows = Array.from(body.rows);
        rows.sort(function (a, b) {
          const x = sortValue(a);
          const y = sortValue(b);
          const nx = parseFloat(x);
          const ny = parseFloat(y);
          const c = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
          return c * dir;
        });
        rows.forEach(function (r) {
          body.appendChild(r);
        });
      });
    });
  });
})();
