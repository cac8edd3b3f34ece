import type { TrainingStatus } from '../../src/core/training/trainingState.js';

/** The guardrail a run waits on, as its status reports it: the rule and the step that tripped it. */
export interface GuardPause {
  step: number;
  rule: string;
}

/** The pause a status shows: only a run that waits for the operator because a pausing rule tripped. */
export function guardPauseOf(status: TrainingStatus): GuardPause | null {
  const trip = status.guardrails?.pausedBy;
  if (status.phase !== 'waiting-for-operator' || !trip || trip.action !== 'pause') return null;
  return { step: trip.step, rule: trip.rule };
}

/** One run of bench:guardrails, as its results file and table show it. */
export interface GuardedRunResult {
  kind: 'hacked' | 'healthy';
  task: string;
  seed: number;
  /** Steps the run recorded before it paused or ended. */
  stepsRun: number;
  pause: GuardPause | null;
  /** Share of near-empty replies on the first and last recorded steps. */
  emptyShareFirst: number | null;
  emptyShareLast: number | null;
  seconds: number;
}

const share = (x: number | null) => (x === null ? '-' : x.toFixed(2));

/** The table bench:guardrails prints: a row per run, then the two figures the README quotes. */
export function guardrailTable(runs: readonly GuardedRunResult[], steps: number): string[] {
  const healthy = runs.filter((r) => r.kind === 'healthy');
  const hacked = runs.filter((r) => r.kind === 'hacked');
  return [
    `Default guardrails over runs of up to ${steps} steps (GRPO, tiny random model, rule-based user)`,
    '',
    'run      task          seed  steps  paused at  rule                  empty first/last  seconds',
    ...runs.map(
      (r) =>
        `${r.kind.padEnd(8)} ${r.task.padEnd(13)} ${String(r.seed).padStart(4)}  ${String(r.stepsRun).padStart(5)}  ${String(r.pause?.step ?? '-').padStart(9)}  ${(r.pause?.rule ?? '-').padEnd(20)}  ${`${share(r.emptyShareFirst)}/${share(r.emptyShareLast)}`.padStart(16)}  ${r.seconds.toFixed(0).padStart(7)}`,
    ),
    '',
    ...hacked.map((r) =>
      r.pause
        ? `hacked (seed ${r.seed}): paused at step ${r.pause.step} by ${r.pause.rule}`
        : `hacked (seed ${r.seed}): not paused in ${r.stepsRun} steps`,
    ),
    ...(healthy.length > 0
      ? [`healthy: paused in ${healthy.filter((r) => r.pause).length} of ${healthy.length} runs (target 0)`]
      : []),
  ];
}
