import type { Transcript } from '../../src/core/transcript.js';
import { checkInvariants, type Check, type DisturbedOutcome } from '../chaos/invariants.js';
import { HISTORY_LIMITS, type HistorySize } from './histories.js';
import type { InjectedSoakFault } from './inject.js';
import { servedTag, type ReplicaAnswer } from './replicaProtocol.js';
import type { WindowFigures } from './windows.js';

export type { Check };

/**
 * RSS may rise this much from the first window to the last before it counts as growth: the last
 * window's median against the first's median times RSS_GROWTH_FACTOR plus RSS_GROWTH_SLACK_MIB.
 * Medians, because one sample can land on a GC's peak or a checkpoint being written. The slack is
 * for what moves without a leak: a Node worker's heap settles over its first steps (JIT code, V8
 * growing its heap limits once) and the trainer's allocator keeps pages it freed, tens of MiB either
 * way (200 steps moved the llm worker +33 MiB, the trainer +33 MiB). A leak of one step's data (its
 * transcripts, samples, tensors or histories, tens of KiB to MiBs) over 150 steps passes the bound.
 */
export const RSS_GROWTH_FACTOR = 1.1;
export const RSS_GROWTH_SLACK_MIB = 32;
/**
 * Disk flat: a later window's median bytes (between commits) may exceed the first window's largest by
 * this factor: per-step results (about a kilobyte each, never pruned by design) add up, while an
 * export, snapshot or download kept past retention is a whole model copy (the tiny model's is about
 * a megabyte against 8 MB held), and keeping one per step would double the bytes within ten steps.
 */
export const DISK_GROWTH_FACTOR = 1.25;

/** Every planned fault struck. */
export function faultsCheck(faults: InjectedSoakFault[]): Check {
  const missed = faults.filter((f) => !f.injected || f.error);
  return {
    name: 'every planned fault was injected',
    ok: missed.length === 0,
    detail: missed.length
      ? missed
          .map((f) => `fault ${f.fault.n} (${f.fault.kind}, step ${f.fault.step}): ${f.error ?? 'never reached'}`)
          .join('; ')
      : `${faults.length} of ${faults.length}`,
  };
}

/**
 * Every step applied once: chaos's invariants (the run's result, the trainer's step, one metrics line
 * and every dialogue of each step trained on once), less the two that need chaos's undisturbed twin
 * and fault plan, which the soak checks its own way.
 */
export function stepsChecks(o: Omit<DisturbedOutcome, 'baseline' | 'faults' | 'resampledFromStep'>): Check[] {
  return checkInvariants({ ...o, baseline: o.metrics, faults: [], resampledFromStep: null })
    .filter((c) => c.name !== 'every planned fault was injected' && !c.name.startsWith('metrics identical'))
    .map((c) => (c.ok && c.detail.startsWith('steps recorded:') ? { ...c, detail: `steps 1-${o.steps} recorded` } : c));
}

/**
 * Every turn's recorded weight version is the version the replica served when it answered: its reply
 * carries the replica's tag for that version, and a replica logged that very answer under it. Full
 * weights are on-policy here, so each turn of step k was sampled from NAME@(k-1).
 */
export function versionsCheck(
  runName: string,
  transcripts: Transcript[],
  answers: ReplicaAnswer[],
  steps: number,
  rolloutsPerStep: number,
): Check {
  const served = new Map<string, Set<string>>();
  for (const a of answers) served.set(a.answer, (served.get(a.answer) ?? new Set()).add(a.version));
  const problems: string[] = [];
  let turns = 0;
  for (const t of transcripts)
    for (const turn of t.turns) {
      turns++;
      const recorded = turn.policy.weightVersion;
      const where = `step ${t.step} ${t.scenario.persona.name} turn ${turn.turn}`;
      if (recorded !== `${runName}@${(t.step ?? 1) - 1}`) problems.push(`${where}: recorded ${recorded}`);
      else if (!turn.policy.raw.endsWith(servedTag(recorded)))
        problems.push(`${where}: reply not served by ${recorded}: ${turn.policy.raw.slice(-60)}`);
      else if (!served.get(turn.policy.raw)?.has(recorded))
        problems.push(`${where}: no replica logged this answer under ${recorded}`);
    }
  const enough = transcripts.length >= steps * rolloutsPerStep;
  return {
    name: "every turn's weight version is the one its replica served",
    ok: problems.length === 0 && enough,
    detail:
      problems.length > 0
        ? `${problems.length} of ${turns} turns: ${problems.slice(0, 5).join('; ')}`
        : `${turns} turns of ${transcripts.length} transcripts${enough ? '' : ` (expected ${steps * rolloutsPerStep})`}`,
  };
}

export function pausedCheck(paused: { name: string; paused: boolean | null }[]): Check {
  const bad = paused.filter((p) => p.paused !== false);
  return {
    name: 'no replica left paused',
    ok: bad.length === 0,
    detail: paused
      .map((p) => `${p.name}: ${p.paused === null ? 'no answer' : p.paused ? 'paused' : 'serving'}`)
      .join(', '),
  };
}

export function tmpDirsCheck(left: string[]): Check {
  return {
    name: 'no .tmp-* directory left in a download dir',
    ok: left.length === 0,
    detail: left.length ? left.join(', ') : 'none',
  };
}

/**
 * Disk flat: no later window's median bytes exceed DISK_GROWTH_FACTOR times the first window's
 * largest, under the trainer's state directory or the publishers' downloads, and at the end the
 * trainer keeps at most its retention (checkpoints, exports) and so do the publishers.
 * `growthJudged` false (--quick): the windows' growth is reported only. Its first window of 4 steps
 * (a snapshot every 2) ends before retention is full: one run held 5.6 MB there and 8.4 MB in steps
 * 5-8, which is the retention's two snapshots beside step 0, not growth. The counts kept at the end
 * are judged in both forms.
 */
export function diskCheck(
  windows: WindowFigures[],
  kept: { checkpoints: number; exports: number; downloads: number },
  retention: { checkpoints: number; exports: number; downloads: number },
  growthJudged = true,
): Check {
  const first = windows[0];
  const problems: string[] = [];
  const growth: string[] = [];
  for (const w of windows.slice(1)) {
    if (first && w.medianTrainerStateBytes > first.maxTrainerStateBytes * DISK_GROWTH_FACTOR)
      growth.push(
        `trainer state ${w.medianTrainerStateBytes} B (median) in steps ${w.fromStep}-${w.toStep} against at most ${first.maxTrainerStateBytes} B in the first`,
      );
    if (first && w.medianDownloadBytes > first.maxDownloadBytes * DISK_GROWTH_FACTOR)
      growth.push(
        `downloads ${w.medianDownloadBytes} B (median) in steps ${w.fromStep}-${w.toStep} against at most ${first.maxDownloadBytes} B in the first`,
      );
  }
  if (growthJudged) problems.push(...growth);
  for (const key of ['checkpoints', 'exports', 'downloads'] as const)
    if (kept[key] > retention[key]) problems.push(`${kept[key]} ${key} kept, retention ${retention[key]}`);
  const note = !growthJudged && growth.length ? `growth not judged in --quick: ${growth.join('; ')}; ` : '';
  return {
    name: 'disk flat: at most what retention keeps',
    ok: problems.length === 0,
    detail: problems.length
      ? problems.join('; ')
      : `${note}median per window: trainer ${windows.map((w) => w.medianTrainerStateBytes).join(', ')} B, downloads ${windows.map((w) => w.medianDownloadBytes).join(', ')} B; kept ${JSON.stringify(kept)}`,
  };
}

/**
 * RSS not growing: per process role, the last window's median within the tolerance of the first's.
 * `judged` false (--quick): reported only. Its windows are a few steps, so a process that a fault
 * restarted in the first one is still warming up there (the trainer killed at step 2 went 755 -> 951
 * MiB over 8 steps in one run), and a leak needs the full form's 50-step windows to show.
 */
export function rssCheck(windows: WindowFigures[], judged = true): Check {
  const first = windows[0];
  const last = windows.at(-1);
  const problems: string[] = [];
  const lines: string[] = [];
  if (!first || !last || first === last) problems.push('fewer than two windows to compare');
  else
    for (const [role, start] of Object.entries(first.rssMiB)) {
      const end = last.rssMiB[role as keyof typeof first.rssMiB];
      if (!end) {
        problems.push(`${role}: no sample in the last window`);
        continue;
      }
      const bound = start.median * RSS_GROWTH_FACTOR + RSS_GROWTH_SLACK_MIB;
      lines.push(`${role} ${start.median} -> ${end.median} MiB`);
      if (end.median > bound)
        problems.push(`${role}: ${start.median} -> ${end.median} MiB (bound ${bound.toFixed(0)})`);
    }
  const detail = problems.length ? problems.join('; ') : lines.join(', ');
  return {
    name: 'worker and trainer RSS not growing from the first window to the last',
    ok: !judged || problems.length === 0,
    detail: judged ? detail : `not judged in --quick (windows of a few steps): ${detail}`,
  };
}

export function historiesCheck(
  histories: HistorySize[],
  limits: { events: number; bytes: number } = HISTORY_LIMITS,
): Check {
  const over = histories.filter((h) => h.events >= limits.events || h.bytes >= limits.bytes);
  const max = (kind: HistorySize['kind']) => {
    const of = histories.filter((h) => h.kind === kind);
    return `${kind} max ${Math.max(0, ...of.map((h) => h.events))} events, ${Math.max(0, ...of.map((h) => h.bytes))} B (${of.length} executions)`;
  };
  return {
    name: `every workflow history within Temporal's limits (${limits.events} events, ${limits.bytes} B)`,
    ok: over.length === 0 && histories.some((h) => h.kind === 'training'),
    detail: over.length
      ? over
          .slice(0, 5)
          .map((h) => `${h.workflowId}/${h.runId}: ${h.events} events, ${h.bytes} B`)
          .join('; ')
      : `${max('training')}; ${max('rollout')}`,
  };
}
