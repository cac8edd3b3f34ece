import type { StepMetricsRecord } from '../../core/runMetrics.js';
import type { UnpolledQueue } from '../../temporal/pollers.js';
import type { TrainingStatus } from '../../workflows/training.js';
import { trackingStatusLine } from '../../core/tracking/trackingHealth.js';

function duration(ms: number | null): string {
  if (ms === null) return '-';
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

const fmt = (n: number | undefined, digits = 3) =>
  n === undefined || Number.isNaN(n) ? '-' : Number(n.toFixed(digits)).toString();

function waitingOnLines(waitingOn: UnpolledQueue[]): [string, string][] {
  return waitingOn.map((q) => ['no worker polls', `${q.queue} (${q.serves}): start ${q.start}`]);
}

function table(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

/** Per endpoint, how often and how long the last step's calls waited for their tokens-per-minute budget. */
export function rateLimitWaitsText(waits: NonNullable<StepMetricsRecord['rateLimitWaits']>): string {
  return (['policy', 'simulator'] as const)
    .map((e) => `${e} waited ${waits[e].waits} time${waits[e].waits === 1 ? '' : 's'}, ${fmt(waits[e].seconds, 1)} s`)
    .join('; ');
}

/** When no workflow worker runs, the run cannot answer: say so and what to start. */
export function renderWaitingOn(error: string, waitingOn: UnpolledQueue[]): string {
  return table([['needs attention', error], ...waitingOnLines(waitingOn)]);
}

/** `attune status` as a readable two-column table. */
export function renderStatus(s: TrainingStatus & { waitingOn?: UnpolledQueue[] }): string {
  const m = s.lastMetrics;
  const rows: [string, string][] = [
    ['run', `${s.runName} (${s.algorithm})`],
    [
      'step',
      `${Math.min(s.step, s.steps)} of ${s.steps}${s.phase === 'done' || s.phase === 'stopped' ? ` (${s.step - 1} applied)` : ''}`,
    ],
    [
      'phase',
      `${s.phase}${s.paused ? ' (paused: in-flight rollouts finish, no new ones start)' : ''}${s.stopRequested ? ' (stopping after this step)' : ''}`,
    ],
    ['policy version', s.version],
    [
      'rollouts this step',
      `${s.rollouts.done} done, ${s.rollouts.failed} failed, ${s.rollouts.inFlight} in flight${s.rollouts.waiting ? ` (${s.rollouts.waiting} waiting at a failed call: attune rollouts list ${s.runName} --waiting)` : ''}, of ${s.rollouts.total}`,
    ],
    ['ETA', duration(s.etaMs)],
  ];
  if (s.stream) rows.push(['dialogue stream', streamLine(s.stream)]);
  if (s.finishing)
    rows.push([
      'beside the next step',
      `step ${s.finishing.step} (${s.finishing.version}) is published and recorded while step ${s.finishing.step + 1} gathers and trains`,
    ]);
  if (s.blockedReason) rows.push(['needs attention', s.blockedReason]);
  for (const w of s.guardrails?.warnings.slice(-3) ?? []) rows.push(['guardrail warning', w.message]);
  rows.push(...waitingOnLines(s.waitingOn ?? []));
  const tracking = trackingStatusLine(s.tracking);
  if (tracking) rows.push(['tracking', tracking]);
  if (m) {
    rows.push([
      'last step',
      `${m.step}: reward ${fmt(m.reward.mean)} ± ${fmt(m.reward.std)}, success ${fmt(m.successRate * 100, 1)}%, failure ${fmt(m.failureRate * 100, 1)}%, turns ${fmt(m.meanTurns, 1)}`,
    ]);
    rows.push([
      'trainer',
      `loss ${fmt(m.trainer.loss)}, kl ${fmt(m.trainer.kl, 4)}, entropy ${fmt(m.trainer.entropy)}, grad norm ${fmt(m.trainer.grad_norm)}, ${fmt(m.trainer.seconds, 1)} s`,
    ]);
    if (m.publishLatencyMs !== undefined)
      rows.push([
        'publish latency',
        m.publishLatencyMs === null
          ? 'not measured (the trainer serves its own weights)'
          : `${m.publishLatencyMs} ms from the publish's start to ${m.run}@${m.step}'s first token (step ${m.step})${
              typeof m.commitToAnswerMs === 'number'
                ? `; the trainer answered ${m.commitToAnswerMs} ms after its commit`
                : ''
            }`,
      ]);
    if (m.turnReward && m.turnReturn)
      rows.push([
        'per turn',
        `reward ${fmt(m.turnReward.mean)} ± ${fmt(m.turnReward.std)} [${fmt(m.turnReward.min)}, ${fmt(m.turnReward.max)}], trained on ${fmt(m.turnReturn.mean)} ± ${fmt(m.turnReturn.std)}`,
      ]);
    if (m.signals)
      rows.push([
        'replies',
        `length ${fmt(m.signals.replyLengthMean, 1)} ± ${fmt(m.signals.replyLengthStd, 1)}, empty ${fmt(m.signals.emptyShare * 100, 1)}%, repetition ${fmt(m.signals.repetition)}, distinct bigrams ${fmt(m.signals.distinctBigrams)}`,
      ]);
    if (m.rateLimitWaits) rows.push(['rate-limit waits', `${rateLimitWaitsText(m.rateLimitWaits)} (step ${m.step})`]);
    if (m.eval)
      rows.push([
        'last evaluation',
        `${m.eval.evalId}: score ${m.eval.score}, success ${m.eval.success}, failure ${m.eval.failure} of ${m.eval.count}`,
      ]);
  }
  if (Object.keys(s.live).length > 0)
    rows.push([
      'operator changes',
      Object.entries(s.live)
        .map(([k, v]) => `${k}=${v}`)
        .join(', '),
    ]);
  return table(rows);
}

/** Steps that take the first finished dialogues: where the stream stands over the run. */
function streamLine(t: NonNullable<TrainingStatus['stream']>): string {
  return (
    `${t.inFlight} in flight, ${t.waiting} finished and waiting; over the run ${t.started} started, ` +
    `${t.taken} trained on (${t.carriedOver} carried over to a later step), ${t.droppedStale} dropped as stale ` +
    `(${t.abandoned} of them cancelled in flight), ${t.droppedShortGroup} dropped with a short group, ${t.failed} failed` +
    (t.cancelled > 0 ? `, ${t.cancelled} cancelled when the run ended` : '')
  );
}
