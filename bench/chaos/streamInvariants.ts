import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { DialogueStreamStatus } from '../../src/core/training/dialogueStream.js';
import type { Transcript } from '../../src/core/transcript.js';
import type { Check } from './invariants.js';

/**
 * What the soak knows of a run whose steps take the first finished dialogues
 * (`training.stepDialogues: firstFinished`): which dialogues finish first depends on timing, so the
 * disturbed run cannot be compared with an undisturbed one. Its invariants are exactly-once's instead.
 */
export interface StreamOutcome {
  /** A step's dialogues: scenariosPerStep x samplesPerScenario. */
  dialoguesPerStep: number;
  samplesPerScenario: number;
  maxStaleness: number;
  metrics: StepMetricsRecord[];
  transcripts: Transcript[];
  /** The run's `attune status` stream counts at its end (null: the status query failed). */
  stream: DialogueStreamStatus | null;
}

/** A stream id's group: the id without its sample suffix. */
const groupOf = (id: string): string => id.replace(/--k\d+$/, '');

const versionIn = (name: string): number => Number(/@(\d+)$/.exec(name)?.[1] ?? 0);

/**
 * The version each turn sampled: the weight version vLLM labelled it with (full weights published to
 * vLLM: a dialogue's later turns may sample newer weights), else the transcript's policy model
 * (`name@N`; the base model is 0).
 */
const turnVersions = (t: Transcript): number[] =>
  t.turns.map((turn) =>
    turn.policy.weightVersion !== undefined ? versionIn(turn.policy.weightVersion) : versionIn(t.policyModel),
  );

/** The first-finished run's invariants, each with what was found. */
export function checkStreamInvariants(o: StreamOutcome): Check[] {
  const takenBy = new Map<string, number>();
  const twice: string[] = [];
  const short: string[] = [];
  const brokenGroups: string[] = [];
  for (const m of o.metrics) {
    const taken = m.dialogues?.taken ?? [];
    if (taken.length < o.dialoguesPerStep || m.rollouts.ok !== taken.length)
      short.push(`step ${m.step}: took ${taken.length}, trained on ${m.rollouts.ok}`);
    for (const id of taken) {
      if (takenBy.has(id)) twice.push(`${id} by steps ${takenBy.get(id)} and ${m.step}`);
      takenBy.set(id, m.step);
    }
    const groups = new Map<string, number>();
    for (const id of taken) groups.set(groupOf(id), (groups.get(groupOf(id)) ?? 0) + 1);
    for (const [group, n] of groups)
      if (n !== o.samplesPerScenario) brokenGroups.push(`step ${m.step}: ${n} of ${group}'s ${o.samplesPerScenario}`);
  }
  const byId = new Map(o.transcripts.map((t) => [t.rolloutId, t]));
  const missing = [...takenBy.keys()].filter((id) => !byId.has(id));
  // Each turn counted by the staleness of the version its dialogue sampled, against the step that trained on it.
  const expected = new Map<number, Record<string, number>>();
  const stale: string[] = [];
  for (const [id, step] of takenBy) {
    const t = byId.get(id);
    if (!t) continue;
    const histogram = expected.get(step) ?? {};
    for (const version of turnVersions(t)) {
      const behind = step - 1 - version;
      if (behind < 0 || behind > o.maxStaleness) stale.push(`${id}: version ${version} trained by step ${step}`);
      histogram[String(behind)] = (histogram[String(behind)] ?? 0) + 1;
    }
    expected.set(step, histogram);
  }
  const sorted = (h: Record<string, number> | undefined) =>
    JSON.stringify(Object.entries(h ?? {}).sort(([a], [b]) => Number(a) - Number(b)));
  const weighed = o.metrics.filter((m) => sorted(m.trainer.staleness_histogram) !== sorted(expected.get(m.step)));
  const s = o.stream;
  const accounted = s
    ? s.taken + s.droppedStale + s.droppedShortGroup + s.failed + s.cancelled + s.inFlight + s.waiting
    : null;
  return [
    {
      name: `each step trained on at least ${o.dialoguesPerStep} dialogues it took`,
      ok: short.length === 0,
      detail: short.join('; '),
    },
    { name: 'no dialogue trained on twice', ok: twice.length === 0, detail: twice.join('; ') },
    { name: 'GRPO groups trained whole', ok: brokenGroups.length === 0, detail: brokenGroups.join('; ') },
    {
      name: 'every dialogue trained on left its transcript',
      ok: missing.length === 0,
      detail: missing.length > 0 ? `missing: ${missing.join(', ')}` : `${takenBy.size} dialogues`,
    },
    {
      name: `every dialogue trained on within maxStaleness ${o.maxStaleness}`,
      ok: stale.length === 0,
      detail: stale.join('; '),
    },
    {
      name: "the trainer weighed each turn by its own dialogue's version",
      ok: weighed.length === 0,
      detail: weighed
        .map(
          (m) =>
            `step ${m.step}: trainer ${sorted(m.trainer.staleness_histogram)}, transcripts ${sorted(expected.get(m.step))}`,
        )
        .join('; '),
    },
    {
      name: 'every dialogue started is counted once: trained on, dropped, failed or cancelled',
      ok: s !== null && accounted === s.started && s.taken === takenBy.size && s.inFlight === 0,
      detail: s
        ? `started ${s.started}: taken ${s.taken} (steps took ${takenBy.size}), dropped ${s.droppedStale} stale + ${s.droppedShortGroup} short group, failed ${s.failed}, cancelled ${s.cancelled}, in flight ${s.inFlight}, waiting ${s.waiting}`
        : 'no status',
    },
  ];
}
