import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { RecordedCall } from '../../test/support/fakeOpenAI.js';
import { essentials, sameStepEssentials } from '../../test/support/runEssentials.js';
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
  /**
   * The undisturbed run's metrics; null when steps take the first finished dialogues, which depend on
   * timing (streamInvariants.ts checks those runs instead of the per-step counts and the comparison).
   */
  baseline: StepMetricsRecord[] | null;
  faults: InjectedFault[];
  /**
   * The first step whose transcripts hold a sampling simulator's second answer to a request (a call
   * made again because its first answer was lost with the worker killed as it arrived), or null. From
   * that step on the run legitimately differs from the undisturbed one: another answer, other weights.
   */
  resampledFromStep: number | null;
}

/** The answer the fake gives a request made again while it samples (test/support/fakeOpenAI.ts). */
export const RESAMPLED_MARK = /\(sample \d+\)/;

/** The soak's invariants, each with what was found. */
export function checkInvariants(o: DisturbedOutcome): Check[] {
  const steps = Array.from({ length: o.steps }, (_, i) => i + 1);
  const base = essentials(o.baseline ?? []);
  const got = essentials(o.metrics);
  const compared =
    o.baseline === null ? 0 : o.resampledFromStep === null ? got.length : Math.min(got.length, o.resampledFromStep - 1);
  // The trainer's floats within FLOAT_METRIC_RTOL (MKL's rounding moves from run to run), the rest exactly.
  const firstDiff = got.slice(0, compared).findIndex((g, i) => !sameStepEssentials(g, base[i]!));
  const notInjected = o.faults.filter((f) => !f.injected || f.error);
  const miscounted = o.metrics.filter(
    (m) => m.rollouts.ok !== o.rolloutsPerStep || m.rollouts.failed !== 0 || m.rollouts.dropped !== 0,
  );
  const checks: Check[] = [
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
  ];
  if (o.baseline === null) return checks;
  return [
    ...checks,
    {
      name: `${o.rolloutsPerStep} dialogues trained on per step, none lost or counted twice`,
      ok: miscounted.length === 0,
      detail: miscounted.map((m) => `step ${m.step}: ${JSON.stringify(m.rollouts)}`).join('; '),
    },
    {
      name: 'metrics identical to the undisturbed run of the same seed',
      ok: base.length === got.length && firstDiff === -1,
      detail:
        firstDiff !== -1
          ? `step ${firstDiff + 1}: ${JSON.stringify(got[firstDiff])} vs undisturbed ${JSON.stringify(base[firstDiff])}`
          : compared < got.length
            ? `${compared} of ${base.length} steps: from step ${o.resampledFromStep} a sampling simulator answered a request made again (its first answer was lost with its killed worker) differently`
            : `${got.length} of ${base.length} steps`,
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
    // Back only after the run ended: nothing was left to recover.
    if (after.length === 0 && runEndMs < f.backAtMs) continue;
    out.set(f.fault.n, ((after.length > 0 ? Math.min(...after) : runEndMs) - f.backAtMs) / 1000);
  }
  return out;
}

/** The persona a simulator call plays (its dialogue, within a step). */
const personaOf = (call: RecordedCall): string | null =>
  /Name: (.+)/.exec(call.messages[0]?.content ?? '')?.[1] ?? null;

/** A transcript as the takeover measure needs it: whose, which step, when its workflow finished it. */
export interface EndedDialogue {
  persona: string | undefined;
  step: number | null;
  /** The workflow's clock: the start of the workflow task that finished it, not the moment it did. */
  finishedAtMs: number;
}

/**
 * Hole 5's measure, per fault that struck a worker process: seconds from the fault (the kill, the
 * SIGSTOP, the cut) until the run goes on with every dialogue of the fault's step that worker held
 * (it had a call of it in the 3 s before the fault): each one's next answered simulator call made
 * by another worker, or, for a dialogue with no call left, its transcript's end. Faults whose
 * worker held none fall back to `recoverySeconds`.
 *
 * A dialogue is told by its persona within the fault's step. One that finished before the fault is
 * not held: its transcript's time, the workflow's clock, is that of a task the struck worker started
 * before the fault, whereas a dialogue taken over finishes in a task started after it. (Comparing
 * with the worker's last call instead counted a dialogue that had ended as held, since the workflow's
 * clock lags the calls its task made, and then waited for the persona's call in a later step.)
 */
export function takeoverSeconds(
  faults: InjectedFault[],
  calls: RecordedCall[],
  ownerOf: (port: number, atMs: number) => number | null,
  ended: readonly EndedDialogue[],
): Map<number, number> {
  const out = new Map<number, number>();
  for (const f of faults) {
    if (f.atMs === undefined || f.pid === undefined) continue;
    const at = f.atMs;
    const ofStep = ended.filter((d) => d.step === f.fault.step);
    const endsAfter = (persona: string) =>
      ofStep.filter((d) => d.persona === persona && d.finishedAtMs >= at).map((d) => d.finishedAtMs);
    const held = new Set<string>();
    for (const c of calls.filter((c) => c.arrivedAtMs <= at && c.arrivedAtMs >= at - 3000)) {
      const persona = personaOf(c);
      if (persona === null || ownerOf(c.remotePort, c.answeredAtMs) !== f.pid) continue;
      // A dialogue of this step that had not finished: every dialogue of the run ends with a transcript.
      if (endsAfter(persona).length > 0) held.add(persona);
    }
    const resumed = [...held].map((persona) => {
      // Made by another worker: a paused or cut-off one may still finish the call it had under way.
      const next = calls.find(
        (c) =>
          c.arrivedAtMs > at &&
          c.status === 200 &&
          c.delivered &&
          personaOf(c) === persona &&
          ownerOf(c.remotePort, c.answeredAtMs) !== f.pid,
      );
      return Math.min(next?.arrivedAtMs ?? Infinity, ...endsAfter(persona));
    });
    const last = Math.max(...resumed);
    if (resumed.length > 0 && Number.isFinite(last)) out.set(f.fault.n, (last - at) / 1000);
  }
  return out;
}
