import { mean, percentile } from './history.js';
import { dialogueGaps } from './gaps.js';
import { runAttune, type AttuneResult } from './attuneRun.js';
import { addedLatencies, dialogueCalls, emptyEntry, round, type Entry, type VariantEntry } from './entry.js';
import type { LoopResult, ReferenceResult } from './loops.js';
import { ALTERNATIVES, DEFAULT_MODE } from './options.js';
import { cpuSeconds, systemBusySeconds } from './procfs.js';
import { progress } from './progress.js';
import type { LoopJob, ToParent } from './protocol.js';
import { specsFor, type Cell, type RunContext } from './runContext.js';
import type { LevelStacks } from './stack.js';

/** One cell of the grid: every chosen variant at one latency and concurrency, in turn, into one entry. */
export async function runCell(
  ctx: RunContext,
  cell: Cell,
  index: number,
  stacks: LevelStacks,
  configSet: string[],
): Promise<Entry> {
  const { options } = ctx;
  const tag = `l${cell.latencyMs}-c${cell.concurrency}-${index}`;
  const entry = emptyEntry(options, cell, DEFAULT_MODE);

  if (stacks.attune) {
    progress('attune: start', { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
    const a = await runAttune(ctx, cell, stacks.attune, `attune-${tag}`);
    fillAttune(entry, a, cell, options.turns);
    progress('attune: done', {
      latency_ms: cell.latencyMs,
      concurrency: cell.concurrency,
      wall_s: entry.attune_s,
      calls_per_s: entry.calls_per_s,
      p50_ms: entry.p50_ms,
      p95_ms: entry.p95_ms,
      worker_rss_mb: entry.worker_rss_mb,
      dev_server_rss_mb: entry.dev_server_rss_mb,
      cpu_s: entry.cpu_s,
      gaps_ms: entry.gaps_ms,
    });
  }

  for (const [variant, { key }] of Object.entries(ALTERNATIVES)) {
    const alternative = stacks.alternatives[key];
    if (!alternative) continue;
    progress(`${variant}: start`, { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
    const a = await runAttune(ctx, cell, alternative, `${key}-${tag}`);
    const variantEntry = alternativeEntry(a, cell, options.turns);
    entry[key] = variantEntry;
    progress(`${variant}: done`, {
      latency_ms: cell.latencyMs,
      concurrency: cell.concurrency,
      wall_s: variantEntry.attune_s,
      calls_per_s: variantEntry.calls_per_s,
      repeated_calls: variantEntry.repeated_calls,
      cpu_s: variantEntry.cpu_s,
      gaps_ms: variantEntry.gaps_ms,
    });
  }

  const loopCell: LoopCell = { ctx, cell, index, tag, configSet };
  if (options.variants.has('plain')) await runPlainInto(entry, loopCell);
  if (options.variants.has('reference')) await runReferenceInto(entry, loopCell);

  for (const variant of [entry.per_call, entry.local, entry.turn, entry.turn_local]) {
    if (variant && entry.plain_s !== null) variant.attune_over_plain = round(variant.attune_s / entry.plain_s, 3);
  }
  if (entry.attune_s !== null && entry.plain_s !== null)
    entry.attune_over_plain = round(entry.attune_s / entry.plain_s, 3);
  if (entry.attune_s !== null && entry.reference_s !== null)
    entry.attune_over_reference = round(entry.attune_s / entry.reference_s, 4);
  return entry;
}

/** CPU seconds per process of an attune run, and what other processes on the machine used meanwhile. */
function attuneCpu(a: AttuneResult): Record<string, number | null> {
  return {
    attune_worker: a.cpu.worker === null ? null : round(a.cpu.worker, 2),
    attune_dev_server: a.cpu.devServer === null ? null : round(a.cpu.devServer, 2),
    attune_fake_and_client: round(a.cpu.parent, 2),
    // CPU that other processes on the machine used meanwhile (this is a shared 2-core box).
    attune_other_processes:
      a.cpu.machine === null
        ? null
        : round(a.cpu.machine - (a.cpu.worker ?? 0) - (a.cpu.devServer ?? 0) - a.cpu.parent, 2),
  };
}

function attuneCpuMsPerCall(a: AttuneResult): number {
  return round((((a.cpu.worker ?? 0) + (a.cpu.devServer ?? 0) + a.cpu.parent) * 1000) / a.calls, 2);
}

/** The default variant's figures: everything the alternatives have, plus per-turn latencies from the histories. */
function fillAttune(entry: Entry, a: AttuneResult, cell: Cell, turnsPerDialogue: number): void {
  const turns = a.timings.flatMap((t) => t.turns);
  const added = addedLatencies(turns, cell.latencyMs);
  const orchestration = turns.map((t) => t.ms - t.llmMs);
  const calls = a.timings.flatMap((t) => t.calls);
  const wfts = a.timings.flatMap((t) => t.workflowTasks);
  const expected = dialogueCalls(cell.concurrency, turnsPerDialogue);
  Object.assign(entry, {
    attune_s: round(a.wallS, 3),
    dialogues_per_s: round(cell.concurrency / a.wallS, 2),
    calls_per_s: round(expected / a.wallS, 1),
    llm_calls: a.calls,
    repeated_calls: a.calls - expected,
    http_connections: a.connections,
    p50_ms: round(percentile(added, 50), 1),
    p95_ms: round(percentile(added, 95), 1),
    orchestration_p50_ms: round(percentile(orchestration, 50), 1),
    orchestration_p95_ms: round(percentile(orchestration, 95), 1),
    worker_rss_mb: a.workerPeakMb,
    dev_server_rss_mb: a.devServerPeakMb,
    breakdown_ms:
      calls.length === 0
        ? null
        : {
            activity_queue: round(mean(calls.map((c) => c.queueMs)), 1),
            activity_overhead: round(mean(calls.map((c) => c.activityOverheadMs)), 1),
            workflow_task_round_trip: round(mean(calls.map((c) => c.workflowTaskMs)), 1),
            workflow_task_dispatch: round(mean(wfts.map((w) => w.dispatchMs)), 1),
            workflow_task_run: round(mean(wfts.map((w) => w.runMs)), 1),
          },
    p50_ms_by_turn:
      turns.length === 0
        ? null
        : Array.from({ length: turnsPerDialogue }, (_, k) =>
            round(
              percentile(
                a.timings.map((t) => (t.turns[k] ? t.turns[k].ms - cell.latencyMs * t.turns[k].calls : NaN)),
                50,
              ),
              1,
            ),
          ),
    history_events_per_workflow: round(mean(a.timings.map((t) => t.events)), 1),
    workflow_task_timeouts: a.timings.reduce((n, t) => n + t.workflowTaskTimeouts, 0),
    workflow_task_failures: a.timings.reduce((n, t) => n + t.workflowTaskFailures, 0),
    payload_kb_per_workflow: round(mean(a.timings.map((t) => t.payloadBytes)) / 1024, 1),
    gaps_ms: a.gaps,
  });
  Object.assign(entry.cpu_s, attuneCpu(a));
  entry.cpu_ms_per_call = attuneCpuMsPerCall(a);
}

/** An alternative's figures (`ALTERNATIVES`): no per-turn latencies (see `Entry`). */
function alternativeEntry(a: AttuneResult, cell: Cell, turnsPerDialogue: number): VariantEntry {
  const expected = dialogueCalls(cell.concurrency, turnsPerDialogue);
  const added = addedLatencies(
    a.timings.flatMap((t) => t.turns),
    cell.latencyMs,
  );
  return {
    attune_s: round(a.wallS, 3),
    attune_over_plain: null,
    calls_per_s: round(expected / a.wallS, 1),
    repeated_calls: a.calls - expected,
    worker_rss_mb: a.workerPeakMb,
    dev_server_rss_mb: a.devServerPeakMb,
    cpu_s: attuneCpu(a),
    cpu_ms_per_call: attuneCpuMsPerCall(a),
    history_events_per_workflow: round(mean(a.timings.map((t) => t.events)), 1),
    payload_kb_per_workflow: round(mean(a.timings.map((t) => t.payloadBytes)) / 1024, 1),
    gaps_ms: a.gaps,
    p50_ms: added.length === 0 ? null : round(percentile(added, 50), 1),
    p95_ms: added.length === 0 ? null : round(percentile(added, 95), 1),
  };
}

/** Runs a job in the loop process (child.ts loops) and waits for its result. */
export async function runLoop(ctx: RunContext, job: LoopJob): Promise<LoopResult | ReferenceResult> {
  const done = ctx.loops.next(
    (m): m is Extract<ToParent, { kind: 'plain-done' | 'reference-done' }> =>
      (m.kind === 'plain-done' || m.kind === 'reference-done') && m.id === job.id,
    30 * 60_000,
  );
  ctx.loops.send(job);
  return (await done).result;
}

/** A cell as the loops run it: `index` and `tag` name its jobs and dialogues, `configSet` is the level's config. */
interface LoopCell {
  ctx: RunContext;
  cell: Cell;
  index: number;
  tag: string;
  configSet: string[];
}

/** (a) the plain loop: wall time, added latency per turn, where the time goes, CPU. */
async function runPlainInto(entry: Entry, { ctx, cell, index, tag, configSet }: LoopCell): Promise<void> {
  const { options } = ctx;
  progress('plain: start', { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
  ctx.fake.behaviour.latencyMs = cell.latencyMs;
  const cpu0 = { loop: cpuSeconds(ctx.loops.pid), parent: process.cpuUsage(), machine: systemBusySeconds() };
  const specs = specsFor(ctx.scenarios, cell.concurrency, `plain-${tag}`);
  const recorded0 = ctx.fake.calls.length;
  const startedAtMs = Date.now();
  const p = await runLoop(ctx, { kind: 'plain', id: index * 10 + 1, configSet, maxTurns: options.turns, specs });
  const loopCpu = cpuSeconds(ctx.loops.pid);
  const parentCpu = process.cpuUsage(cpu0.parent);
  const machineCpu = systemBusySeconds();
  const added = addedLatencies(p.turns, cell.latencyMs);
  Object.assign(entry, {
    plain_s: round(p.wallS, 3),
    plain_calls_per_s: round(p.calls / p.wallS, 1),
    plain_p50_ms: round(percentile(added, 50), 1),
    plain_p95_ms: round(percentile(added, 95), 1),
    plain_gaps_ms: dialogueGaps(
      ctx.fake.calls.slice(recorded0),
      specs.map((s) => s.seed),
      options.turns,
      cell.latencyMs,
      startedAtMs,
      null,
    ),
  });
  entry.cpu_s.plain_loop = loopCpu !== null && cpu0.loop !== null ? round(loopCpu - cpu0.loop, 2) : null;
  entry.cpu_s.plain_fake = round((parentCpu.user + parentCpu.system) / 1e6, 2);
  if (machineCpu !== null && cpu0.machine !== null)
    entry.cpu_s.plain_other_processes = round(
      machineCpu - cpu0.machine - (entry.cpu_s.plain_loop ?? 0) - entry.cpu_s.plain_fake,
      2,
    );
  entry.plain_cpu_ms_per_call = round((((entry.cpu_s.plain_loop ?? 0) + entry.cpu_s.plain_fake) * 1000) / p.calls, 2);
  if (entry.llm_calls !== null && entry.llm_calls !== p.calls)
    progress('warning: plain made a different number of calls', { attune: entry.llm_calls, plain: p.calls });
  progress('plain: done', {
    latency_ms: cell.latencyMs,
    concurrency: cell.concurrency,
    wall_s: entry.plain_s,
    calls_per_s: entry.plain_calls_per_s,
    gaps_ms: entry.plain_gaps_ms,
  });
}

/** (b) the loop shaped like the reference implementation: wall time, partly extrapolated (see loops.ts). */
async function runReferenceInto(entry: Entry, { ctx, cell, index, tag, configSet }: LoopCell): Promise<void> {
  const { options } = ctx;
  progress('reference: start', { latency_ms: cell.latencyMs, concurrency: cell.concurrency });
  ctx.fake.behaviour.latencyMs = cell.latencyMs;
  const r = (await runLoop(ctx, {
    kind: 'reference',
    id: index * 10 + 2,
    configSet,
    maxTurns: options.turns,
    specs: specsFor(ctx.scenarios, cell.concurrency, `ref-${tag}`),
    budgetS: options.referenceBudgetS,
    sparse: cell.latencyMs >= 500,
  })) as ReferenceResult;
  Object.assign(entry, {
    reference_s: round(r.wallS, 3),
    reference_measured_s: round(r.measuredS, 3),
    reference_extrapolated: r.extrapolated,
    reference_sequential_measured_fraction: round(r.sequentialMeasuredFraction, 4),
  });
  progress('reference: done', {
    latency_ms: cell.latencyMs,
    concurrency: cell.concurrency,
    wall_s: entry.reference_s,
    measured_s: entry.reference_measured_s,
    extrapolated: r.extrapolated,
  });
}
