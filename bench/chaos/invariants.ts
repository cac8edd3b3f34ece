import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { RecordedCall } from '../../test/support/fakeOpenAI.js';
import { essentials } from '../../test/support/runEssentials.js';
import type { InjectedFault } from './inject.js';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface DisturbedOutcome {
  steps: number;
  rolloutsPerStep: number;
  stepsApplied: number | null;
  runError: string | null;
  trainerStep: number | null;
  metrics: StepMetricsRecord[];
  baseline: StepMetricsRecord[];
  faults: InjectedFault[];
}

/** The soak's invariants, each with what was found. */
export function checkInvariants(o: DisturbedOutcome): Check[] {
  const steps = Array.from({ length: o.steps }, (_, i) => i + 1);
  const base = essentials(o.baseline);
  const got = essentials(o.metrics);
  const firstDiff = got.findIndex((g, i) => JSON.stringify(g) !== JSON.stringify(base[i]));
  const notInjected = o.faults.filter((f) => !f.injected || f.error);
  const miscounted = o.metrics.filter(
    (m) => m.rollouts.ok !== o.rolloutsPerStep || m.rollouts.failed !== 0 || m.rollouts.dropped !== 0,
  );
  return [
    {
      name: 'every planned fault was injected',
      ok: notInjected.length === 0,
      detail: notInjected
        .map((f) => `fault ${f.fault.n} (${f.fault.kind}, step ${f.fault.step}): ${f.error ?? 'never reached'}`)
        .join('; '),
    },
    {
      name: `the run completed all ${o.steps} steps`,
      ok: o.runError === null && o.stepsApplied === o.steps,
      detail: o.runError ?? `${o.stepsApplied} steps applied`,
    },
    {
      name: 'each step applied once by the trainer',
      ok: o.trainerStep === o.steps,
      detail: `trainer at step ${o.trainerStep}`,
    },
    {
      name: 'one metrics line per step',
      ok: JSON.stringify(o.metrics.map((m) => m.step)) === JSON.stringify(steps),
      detail: `steps recorded: ${o.metrics.map((m) => m.step).join(',')}`,
    },
    {
      name: `${o.rolloutsPerStep} dialogues trained on per step, none lost or counted twice`,
      ok: miscounted.length === 0,
      detail: miscounted.map((m) => `step ${m.step}: ${JSON.stringify(m.rollouts)}`).join('; '),
    },
    {
      name: 'metrics identical to the undisturbed run of the same seed',
      ok: base.length === got.length && firstDiff === -1,
      detail:
        firstDiff === -1
          ? `${got.length} of ${base.length} steps`
          : `step ${firstDiff + 1}: ${JSON.stringify(got[firstDiff])} vs undisturbed ${JSON.stringify(base[firstDiff])}`,
    },
  ];
}

/**
 * Per fault that brought something back: seconds from its return to the run's next successful
 * LLM call at the fake server (or to the run's end when none followed).
 */
export function recoverySeconds(faults: InjectedFault[], calls: RecordedCall[], runEndMs: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const f of faults) {
    if (f.backAtMs === null) continue;
    const after = calls.filter((c) => c.status === 200 && c.arrivedAtMs >= f.backAtMs!).map((c) => c.arrivedAtMs);
    out.set(f.fault.n, ((after.length > 0 ? Math.min(...after) : runEndMs) - f.backAtMs) / 1000);
  }
  return out;
}
