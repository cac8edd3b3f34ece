import { emotionState, type EmotionState } from '../core/emotion.js';
import type { EvaluationEntry, EvaluationReport, ScoreGroup } from '../core/evaluationReport.js';
import type { Transcript, TranscriptTurn } from '../core/transcript.js';
import type { GroupIntervals } from '../core/evaluationStatistics.js';
import { barChart } from './barChart.js';
import { manifestCard } from './evaluationManifest.js';
import { lineChart, type LineSeries } from './charts.js';
import { sparkline } from './sparkline.js';
import { formatInt, formatNumber, formatSigned, formatTime, html, join, uniqueSlug, type SafeHtml } from './html.js';
import { renderPage } from './page.js';
import { STATE_COLORS, STATES, stateColor } from './theme.js';
import { dialoguePhrases } from '../core/dialogueKeys.js';

export interface EvaluationPageInput {
  report: EvaluationReport;
  /** Transcripts by artifact key; a missing one is noted in its dialogue. */
  transcripts: ReadonlyMap<string, Transcript>;
  /** Problems met while loading (shown at the top of the page). */
  notes?: string[];
  /** Time the page was generated (defaults to now). */
  generatedAt?: string;
}

type OkEntry = Extract<EvaluationEntry, { status: 'ok' }>;
type FailedEntry = Extract<EvaluationEntry, { status: 'failed' }>;

interface Row {
  entry: EvaluationEntry;
  slug: string;
  transcript: Transcript | undefined;
}

function stateBadge(emotion: number, big = false): SafeHtml {
  const state = emotionState(emotion);
  return html`<span class="state st-${state}${big ? ' big' : ''}" title="emotion state ${state}">${state}</span>`;
}

function emotionPill(emotion: number): SafeHtml {
  return html`<span class="emo-pill st-${emotionState(emotion)}">${stateBadge(emotion)}${formatNumber(emotion)}</span>`;
}

function outcomeBadge(outcome: string): SafeHtml {
  return html`<span class="outcome ${outcome.replace(/[^a-z-]/g, '')}">${outcome}</span>`;
}

function personaLine(t: Transcript | undefined): string {
  if (!t) return '';
  const p = t.scenario.persona;
  return [p.name, p.age !== undefined ? String(p.age) : undefined, p.occupation].filter(Boolean).join(', ');
}

function groupNote(g: ScoreGroup): string {
  return `n=${g.count} · ${g.success} success · ${g.failure} failure`;
}

function ciText(ci: { low: number; high: number } | undefined): string {
  return ci ? ` (95 % CI ${formatNumber(ci.low)}–${formatNumber(ci.high)})` : '';
}

function rateDetail(rate: GroupIntervals['successRate']): string {
  return `${formatNumber(rate.value * 100, 1)} %, 95 % CI ${formatNumber(rate.ci.low * 100, 1)}–${formatNumber(rate.ci.high * 100, 1)} %`;
}

function breakdown(
  title: string,
  caption: string,
  groups: Record<string, ScoreGroup>,
  intervals: Record<string, GroupIntervals>,
  overall: number,
  png: string,
): SafeHtml {
  const entries = Object.entries(groups).filter(([, g]) => g.count > 0);
  const chart =
    entries.length === 0
      ? html`<div class="empty">No finished dialogues.</div>`
      : barChart({
          ariaLabel: title,
          width: 540,
          max: 100,
          ref: { value: overall, label: `overall ${formatNumber(overall)}` },
          rows: entries.map(([label, g]) => ({
            label,
            value: g.score,
            color: stateColor(g.score),
            note: `n=${g.count}  ✓${g.success}  ✗${g.failure}`,
            title: `${label}: score ${formatNumber(g.score)}${ciText(intervals[label]?.score)}; ${groupNote(g)}; mean turns ${formatNumber(g.meanTurns)}`,
            ...(intervals[label] ? { interval: intervals[label].score } : {}),
          })),
          valueFormat: (v) => formatNumber(v, 1),
        });
  return html`<figure class="card" data-png="${png}">
  <div class="card-head"><div><h2>${title}</h2><p>${caption}</p></div></div>
  <div class="chart-box">${chart}</div>
</figure>`;
}

function distribution(ok: OkEntry[]): SafeHtml {
  const counts = new Map<EmotionState, number>(STATES.map((s) => [s, 0]));
  for (const e of ok) counts.set(emotionState(e.finalEmotion), (counts.get(emotionState(e.finalEmotion)) ?? 0) + 1);
  const total = Math.max(1, ok.length);
  return html`<div>
  <div class="dist" role="img" aria-label="final emotion states">${STATES.filter((s) => (counts.get(s) ?? 0) > 0).map((s) => html`<span class="st-${s}" style="width:${(((counts.get(s) ?? 0) / total) * 100).toFixed(2)}%" title="${s}: ${counts.get(s) ?? 0}"></span>`)}</div>
  <div class="dist-legend">${STATES.map((s) => html`<span><span class="swatch" style="background:${STATE_COLORS[s].fg}"></span>${s} <b>${counts.get(s) ?? 0}</b></span>`)}</div>
</div>`;
}

function stat(label: string, value: SafeHtml | string | number, detail: string, state?: EmotionState): SafeHtml {
  return html`<div class="stat${state ? ` st-${state}` : ''}"><div class="k">${label}</div><div class="v">${value}</div><div class="d">${detail}</div></div>`;
}

/** Initial emotion followed by the emotion after each turn, from the entry (or its transcript). */
function trajectory(row: Row): number[] {
  if (row.entry.status === 'ok' && row.entry.emotions.length > 0) return row.entry.emotions;
  const t = row.transcript;
  if (t) return [t.initialEmotion, ...t.turns.filter((turn) => turn.analysis).map((turn) => turn.emotionAfter)];
  return [];
}

function trajectoryChart(rows: Row[], report: EvaluationReport): SafeHtml {
  const ok = rows.filter((r) => r.entry.status === 'ok');
  const lines = ok.map((r) => ({ row: r, values: trajectory(r) })).filter((l) => l.values.length > 0);
  if (lines.length === 0) return html`<div class="empty">No finished dialogues to draw.</div>`;
  const maxLen = Math.max(report.settings.maxTurns + 1, ...lines.map((l) => l.values.length));
  // The mean, with each dialogue's final emotion carried forward after it ended: it ends at the score.
  const mean: number[] = [];
  for (let i = 0; i < maxLen; i++) {
    const vals = lines.map((l) => l.values[Math.min(i, l.values.length - 1)] ?? 0);
    mean.push(vals.reduce((a, b) => a + b, 0) / vals.length);
  }
  const crowded = lines.length > 30;
  const series: LineSeries[] = lines.map(({ row, values }) => {
    const e = row.entry as OkEntry;
    const label = `${e.scenarioId} · ${e.goalType} · ${e.personality} · ${values.join(' → ')} (${e.outcome})`;
    return {
      name: e.scenarioId,
      color: stateColor(e.finalEmotion),
      points: values.map((y, x) => ({ x, y })),
      width: crowded ? 1.5 : 2,
      opacity: crowded ? 0.55 : 0.75,
      markers: !crowded,
      className: 'traj',
      attrs: { target: row.slug, label },
      title: label,
      hitArea: true,
      noHover: true,
    };
  });
  series.push({
    name: 'mean (final emotion carried forward)',
    color: '#1b2331',
    points: mean.map((y, x) => ({ x, y: Math.round(y * 10) / 10 })),
    width: 2.5,
    dashed: true,
    markers: false,
    className: 'mean',
    noHover: true,
    halo: true,
  });
  return lineChart({
    ariaLabel: 'Emotion trajectory of every dialogue',
    className: 'trajectories',
    width: 1100,
    height: 400,
    series,
    xDomain: [0, maxLen - 1],
    yDomain: [0, 100],
    integerX: true,
    xLabel: 'assistant turn',
    yLabel: 'emotion',
    bands: [
      { from: 0, to: 10, color: STATE_COLORS.F.tint, label: 'F' },
      { from: 10, to: 40, color: STATE_COLORS.C.tint, label: 'C' },
      { from: 40, to: 70, color: STATE_COLORS.B.tint, label: 'B' },
      { from: 70, to: 100, color: STATE_COLORS.A.tint, label: 'A' },
    ],
    refLines: [{ y: 100, label: 'S: success (100)', color: STATE_COLORS.S.fg }],
  });
}

function table(rows: Row[]): SafeHtml {
  if (rows.length === 0) return html`<div class="empty">This evaluation has no dialogues.</div>`;
  return html`<div class="table-wrap tall"><table class="sortable dialogues">
<thead><tr><th data-sortable>Scenario</th><th data-sortable>Goal type</th><th data-sortable>Personality</th><th>Trajectory</th><th class="num" data-sortable>Final emotion</th><th data-sortable>Outcome</th><th class="num" data-sortable>Turns</th></tr></thead>
<tbody>${rows.map((r) => {
    const e = r.entry;
    if (e.status === 'failed') {
      return html`<tr data-target="${r.slug}" data-status="failed"><td data-v="${e.scenarioId}"><a href="#${r.slug}">${e.scenarioId}</a></td><td data-v="${e.goalType}">${e.goalType}</td><td data-v="${e.personality}">${e.personality}</td><td class="muted">–</td><td class="num" data-v="-1"><span class="muted">–</span></td><td data-v="failed" title="${e.error}">${outcomeBadge('failed')}</td><td class="num" data-v="-1"><span class="muted">–</span></td></tr>`;
    }
    const values = trajectory(r);
    return html`<tr data-target="${r.slug}" data-status="ok"><td data-v="${e.scenarioId}"><a href="#${r.slug}">${e.scenarioId}</a></td><td data-v="${e.goalType}">${e.goalType}</td><td data-v="${e.personality}">${e.personality}</td><td>${sparkline(values, { color: stateColor(e.finalEmotion), title: values.join(' → '), baseline: values[0] })}</td><td class="num" data-v="${e.finalEmotion}">${emotionPill(e.finalEmotion)}</td><td data-v="${e.outcome}">${outcomeBadge(e.outcome)}</td><td class="num" data-v="${e.turns}">${e.turns}</td></tr>`;
  })}</tbody></table></div>`;
}

function deltaBox(change: number): SafeHtml {
  const cls = change > 0 ? 'up' : change < 0 ? 'down' : 'flat';
  return html`<div class="delta ${cls}" title="emotion change">${formatSigned(change)}<small>emotion</small></div>`;
}

function renderTurn(turn: TranscriptTurn, userName: string, first: boolean): SafeHtml {
  const policy = turn.policy;
  const assistant = policy.malformed
    ? html`<div class="msg assistant malformed"><div class="who">Assistant · malformed output${policy.problem ? `: ${policy.problem}` : ''}</div><div class="bubble">${policy.raw || policy.reply}</div></div>`
    : html`<div class="msg assistant"><div class="who">Assistant</div>${policy.thinking ? html`<details class="thinking"><summary>Thinking</summary><div class="pre">${policy.thinking}</div></details>` : ''}<div class="bubble">${policy.reply}</div></div>`;
  const a = turn.analysis?.analysis;
  const state = turn.state ?? emotionState(turn.emotionAfter);
  const inner = a
    ? html`<div class="inner st-${state}">${deltaBox(a.emotionChange)}<div>
  <div class="inner-label">${userName} thinks</div>
  <p class="thought">${a.innerThoughts || '(no inner thoughts)'}</p>
  <div class="emo-after">emotion ${formatNumber(turn.emotionBefore)} → <b>${formatNumber(turn.emotionAfter)}</b> ${stateBadge(turn.emotionAfter)}</div>
  <details><summary>Simulator analysis</summary><dl class="kv"><dt>Assistant's intent</dt><dd>${a.assistantIntent || '–'}</dd><dt>Goal fit</dt><dd>${a.goalFit || '–'}</dd></dl></details>
</div></div>`
    : html`<div class="inner"><div class="delta flat">–<small>emotion</small></div><div><div class="inner-label">No analysis</div><p class="thought">The simulator did not analyse this turn${policy.malformed ? ' (the policy output was malformed)' : ''}.</p></div></div>`;
  return html`<li class="turn" data-turn="${turn.turn}">
<div class="turn-label">Turn ${turn.turn}</div>
<div class="msg user"><div class="who">${userName}${first ? ' · opening' : ''}</div><div class="bubble">${turn.userMessage}</div></div>
${assistant}
${inner}
</li>`;
}

function dialogue(row: Row, prev: Row | undefined, next: Row | undefined, index: number, total: number): SafeHtml {
  const e = row.entry;
  const t = row.transcript;
  const nav = html`<div class="dlg-nav"><span class="muted">${index + 1} / ${total}</span><span class="spacer"></span>${prev ? html`<a class="prev" href="#${prev.slug}" title="previous dialogue (←)">‹ Prev</a>` : ''}${next ? html`<a class="next" href="#${next.slug}" title="next dialogue (→)">Next ›</a>` : ''}<a class="close" href="#dialogues" title="close (Esc)">Close ✕</a></div>`;
  const persona = personaLine(t);
  const sub = html`<p class="persona">${persona ? html`${persona} · ` : ''}${e.goalType} · ${e.personality}</p>`;
  if (e.status === 'failed') {
    const f = e as FailedEntry;
    return html`<article class="dialogue" id="${row.slug}" tabindex="-1" aria-label="Dialogue ${f.scenarioId}">
<header class="dlg-head">${nav}<h2>${f.scenarioId}</h2>${sub}<div class="dlg-stats">${outcomeBadge('failed')}<span>excluded from the score</span></div></header>
<div class="dlg-body"><p>This dialogue failed to run:</p><div class="error-box">${f.error}</div></div>
</article>`;
  }
  const values = trajectory(row);
  const head = html`<header class="dlg-head">${nav}<h2>${e.scenarioId}</h2>${sub}
<div class="dlg-stats">${outcomeBadge(e.outcome)}<span>final emotion ${emotionPill(e.finalEmotion)}</span><span>${e.turns} turn${e.turns === 1 ? '' : 's'}</span>${sparkline(values, { width: 140, height: 28, color: stateColor(e.finalEmotion), title: values.join(' → '), baseline: values[0] })}</div></header>`;
  if (!t) {
    return html`<article class="dialogue" id="${row.slug}" tabindex="-1" aria-label="Dialogue ${e.scenarioId}">${head}
<div class="dlg-body"><div class="notes">The transcript <code>${e.artifact}</code> was not found in the artifact store; the emotions were ${values.join(' → ')}.</div></div></article>`;
  }
  const s = t.scenario;
  const userName = s.persona.name ?? 'User';
  const scenarioDetails = html`<details class="scenario"><summary>Scenario: persona, goal and hidden intention</summary><dl class="kv">
${s.persona.description ? html`<dt>Persona</dt><dd>${s.persona.description}</dd>` : ''}
${s.persona.habits ? html`<dt>Habits</dt><dd>${s.persona.habits}</dd>` : ''}
${s.persona.speakingStyle ? html`<dt>Speaks</dt><dd>${s.persona.speakingStyle}</dd>` : ''}
<dt>Background</dt><dd>${s.background}</dd>
<dt>Goal</dt><dd>${s.goal}</dd>
<dt>Hidden intention</dt><dd>${s.hiddenIntention}</dd>
${s.traits.length > 0 ? html`<dt>Traits</dt><dd>${s.traits.join(', ')}</dd>` : ''}
<dt>Models</dt><dd>policy ${t.policyModel} · simulator ${t.simulatorModel}${t.difficulty ? ` (difficulty ${t.difficulty})` : ''}${t.think ? ' · think-then-say' : ''}</dd>
</dl></details>`;
  const last = t.turns[t.turns.length - 1];
  const opening =
    t.turns.length === 0
      ? html`<li class="turn"><div class="msg user"><div class="who">${userName} · opening</div><div class="bubble">${t.opening.text}</div></div></li>`
      : '';
  const tokens =
    t.tokens.policyPrompt + t.tokens.policyCompletion + t.tokens.simulatorPrompt + t.tokens.simulatorCompletion;
  return html`<article class="dialogue" id="${row.slug}" tabindex="-1" aria-label="Dialogue ${e.scenarioId}">${head}
<div class="dlg-body">
${scenarioDetails}
<div class="start-emo">emotion starts at ${emotionPill(t.initialEmotion)}</div>
<ol class="turns">${opening}${t.turns.map((turn, i) => renderTurn(turn, userName, i === 0))}
${last?.userReply ? html`<li class="turn final-reply"><div class="msg user"><div class="who">${userName}</div><div class="bubble">${last.userReply.text}</div></div></li>` : ''}</ol>
<div class="dlg-end">Ended: ${outcomeBadge(t.outcome)} at emotion <b>${formatNumber(t.finalEmotion)}</b> after ${t.turns.length} of at most ${t.maxTurns} turns · reward ${formatNumber(t.reward, 2)} · ${formatInt(tokens)} tokens</div>
</div></article>`;
}

/** The evaluation report: score, breakdowns, trajectories, a table and a transcript viewer. */
export function renderEvaluationPage(input: EvaluationPageInput): string {
  const { report } = input;
  const taken = new Set<string>(['dialogues']);
  const rows: Row[] = report.results.map((entry) => ({
    entry,
    slug: uniqueSlug(entry.scenarioId, taken),
    transcript: entry.status === 'ok' ? input.transcripts.get(entry.artifact) : undefined,
  }));
  const ok = report.results.filter((e): e is OkEntry => e.status === 'ok');
  const scoreState = emotionState(report.score);
  const tokens =
    report.tokens.policyPrompt +
    report.tokens.policyCompletion +
    report.tokens.simulatorPrompt +
    report.tokens.simulatorCompletion;
  const source = report.runName ? `${report.runName}${report.step !== null ? `@${report.step}` : ''}` : null;
  const notes = input.notes ?? [];

  const body = html`<header class="top"><div class="wrap">
<div class="brand">Attune <span>· evaluation report</span></div>
<h1>${report.evalId}</h1>
<div class="meta"><span>policy <b>${report.policyModel}</b></span>${source ? html`<span>run <b>${source}</b></span>` : ''}<span>simulator <b>${report.simulatorModel}</b></span><span>scenarios <b>${report.scenarios}</b></span><span>${formatTime(report.createdAt)}</span></div>
</div></header>
<main class="wrap">
${notes.length > 0 ? html`<div class="notes"><b>Notes</b><ul>${notes.map((n) => html`<li>${n}</li>`)}</ul></div>` : ''}
<section class="hero">
  <div class="card score-card st-${scoreState}" data-png="sentient-score">
    <div>
      <div class="score-label">Sentient score</div>
      <div class="score-line"><div class="score" id="score">${formatNumber(report.score)}<small> / 100</small></div>${stateBadge(report.score, true)}</div>
      <div class="score-sub">mean final emotion of ${report.count} finished dialogue${report.count === 1 ? '' : 's'}${report.failed > 0 ? html` · <b>${report.failed}</b> failed, excluded` : ''}</div>
      <div class="score-sub" id="score-ci">95 % CI ${formatNumber(report.ci.low)}–${formatNumber(report.ci.high)} (bootstrap over ${report.intervals.overall.scenarios} scenario${report.intervals.overall.scenarios === 1 ? '' : 's'}${report.repeats > 1 ? ` × ${report.repeats} repeats` : ''})</div>
    </div>
    ${distribution(ok)}
  </div>
  <div class="stats">
    ${stat('Success', html`${report.success}<small> / ${report.count}</small>`, `reached emotion 100 · ${rateDetail(report.intervals.overall.successRate)}`, 'S')}
    ${stat('Failure', html`${report.failure}<small> / ${report.count}</small>`, `ended below 10 · ${rateDetail(report.intervals.overall.failureRate)}`, 'F')}
    ${stat('Failed to run', report.failed, report.failed > 0 ? 'reported, excluded from the score' : 'every dialogue finished', report.failed > 0 ? 'C' : undefined)}
    ${stat('Mean turns', formatNumber(report.meanTurns, 1), `of at most ${report.settings.maxTurns}`)}
    ${stat('Start emotion', report.settings.initialEmotion, `simulator temperature ${formatNumber(report.settings.simulatorTemperature)}`)}
    ${stat('Tokens', formatInt(tokens), `policy ${formatInt(report.tokens.policyPrompt + report.tokens.policyCompletion)} · simulator ${formatInt(report.tokens.simulatorPrompt + report.tokens.simulatorCompletion)}`)}
  </div>
</section>
<section class="grid2">
${breakdown('Score by goal type', 'mean final emotion per goal type with its 95 % interval; ✓ success, ✗ failure', report.byGoalType, report.intervals.byGoalType, report.score, 'score-by-goal-type')}
${breakdown('Score by personality', 'mean final emotion per personality type with its 95 % interval', report.byPersonality, report.intervals.byPersonality, report.score, 'score-by-personality')}
</section>
<figure class="card" data-png="emotion-trajectories">
  <div class="card-head"><div><h2>Emotion trajectories</h2><p>one line per dialogue, coloured by its final state; dashed: the mean (final emotion carried forward)</p></div>
  <div class="legend">${STATES.map((s) => html`<span><span class="swatch line" style="background:${STATE_COLORS[s].fg}"></span>${STATE_COLORS[s].label}</span>`)}<span><span class="swatch dash"></span>mean</span></div></div>
  <div class="traj-info" id="traj-info">Point at a line to see its dialogue; click it to read the transcript.</div>
  <div class="chart-box">${trajectoryChart(rows, report)}</div>
</figure>
<section class="card" id="dialogues">
  <div class="card-head"><div><h2>Dialogues</h2><p>${rows.length} scenario${rows.length === 1 ? '' : 's'}; open one to read the transcript, the user's inner thoughts and each emotion change</p></div></div>
  ${table(rows)}
</section>
${manifestCard(report)}
<footer class="page">${join(dialoguePhrases(report.settings).map((phrase) => html`<span>${phrase}</span>`))}<span>simulator temperature ${formatNumber(report.settings.simulatorTemperature)}</span><span>generated by attune report · ${input.generatedAt ?? new Date().toISOString()}</span></footer>
</main>
<div class="viewer">
<a class="backdrop" href="#dialogues" aria-label="close the dialogue"></a>
${join(
  rows.map((r, i) => dialogue(r, rows[i - 1], rows[i + 1], i, rows.length)),
  '\n',
)}
</div>`;
  return renderPage({ title: `${report.evalId} · Sentient score ${formatNumber(report.score)} · Attune`, body });
}
