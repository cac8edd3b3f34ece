import { difficultyText } from '../core/difficulty.js';
import type { RewardEnvironment } from '../core/evaluationManifest.js';
import type { EvaluationReport } from '../core/evaluationReport.js';
import { formatNumber, html, type SafeHtml } from './html.js';
import { dialogueRows } from '../core/dialogueKeys.js';

/** The evaluation's manifest as a card: what produced the numbers, so two reports can be told comparable. */
export function manifestCard(report: EvaluationReport): SafeHtml {
  const m = report.manifest;
  const intervals = report.intervals;
  const method = html`<p>Intervals: ${formatNumber(intervals.level * 100, 0)} % ${intervals.method}, ${intervals.resamples} resamples; ${report.repeats} dialogue${report.repeats === 1 ? '' : 's'} per scenario.</p>`;
  if (!m)
    return html`<section class="card" id="manifest"><div class="card-head"><div><h2>Manifest</h2>${method}<p>This evaluation was written before manifests were stored.</p></div></div></section>`;
  const [simulator, ...protocol] = environmentRows(m);
  const rows: [string, string][] = [
    ['Attune version', m.attuneVersion],
    simulator!,
    ['Policy', `${m.policy.model} at ${m.policy.baseURL}`],
    ...protocol,
    ['Seeds', `base ${m.seeds.base} · ${m.seeds.repeats} per scenario`],
  ];
  return html`<section class="card" id="manifest"><div class="card-head"><div><h2>Manifest</h2>${method}</div></div>
<dl class="kv">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl></section>`;
}

/** What a reward was measured in, as label and value rows (an evaluation's manifest, a run's steps). */
export function environmentRows(env: RewardEnvironment): [string, string][] {
  const p = env.protocol;
  const served = env.simulator.served;
  const listed: [string, string][] = !served
    ? []
    : 'unavailable' in served
      ? [['Simulator as served', `not listed: ${served.unavailable}`]]
      : [['Simulator as served', [served.id, served.root, served.ownedBy].filter(Boolean).join(' · ')]];
  return [
    ['Simulator', `${env.simulator.model} at ${env.simulator.baseURL}`],
    ...listed,
    ['Simulator prompt hash', env.promptHash],
    ['Simulator difficulty', difficultyText(env.simulator)],
    ...dialogueRows(p),
    ['Temperatures', `simulator ${p.simulatorTemperature} · policy ${p.policyTemperature}`],
    ['Max tokens', `simulator ${p.simulatorMaxTokens} · policy ${p.policyMaxTokens}`],
    ['Simulator output', p.structuredOutput],
    ['Policy system prompt', p.policySystemPrompt],
  ];
}
