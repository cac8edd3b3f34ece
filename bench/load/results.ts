import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CallFigures } from './calls.js';
import type { CpuSnapshot } from './processes.js';

/** The results file of a load run (bench/results/load.json) and the table printed from it. */

export interface LoadParameters {
  dialogues: number;
  turns: number;
  worker_processes: number;
  latency_model: {
    distribution: 'lognormal';
    median_ms: number;
    p99_ms: number;
    mu: number;
    sigma: number;
    cap_ms: number;
    seed: number;
  };
  failure_rate: number;
  mode: { llmCalls: string; activityPer: string };
  /** The --set overrides given (after the bench's own config). */
  set: string[];
  /** Endpoint concurrency per worker process (policy.maxConcurrency and simulator.maxConcurrency). */
  endpoint_max_concurrency: { policy: number; simulator: number };
  server: 'postgres-cluster';
  machine_cores: number;
  load_average_1m: { start: number; end: number | null };
  quick: boolean;
}

/** The fake's figures (CallFigures, bench/load/calls.ts) and the run's. */
export interface LoadResults extends CallFigures {
  benchmark: 'load';
  measured_at: string;
  parameters: LoadParameters;
  /** True when every dialogue completed all its turns and no call was answered twice. */
  ok: boolean;
  /** Why not, in words. */
  errors: string[];
  dialogues_started: number;
  dialogues_completed: number;
  /** Started minus completed successfully. */
  lost_dialogues: number;
  /** Rollouts by final status (COMPLETED, FAILED, RUNNING, ...). */
  dialogues_by_status: Record<string, number>;
  /** Completed with fewer turns than asked (none expected: the fake's analysis never ends a dialogue). */
  dialogues_short: number;
  /** Successful LLM calls the dialogues make: dialogues x (3 x turns - 1). */
  expected_calls: number;
  /** From the first start request to the last rollout's close event (server time). */
  wall_s: number | null;
  /** Successful LLM calls / wall_s. */
  calls_per_s: number | null;
  /** CPU seconds over the timed run: the four Temporal services, PostgreSQL (postmaster and its children), the worker processes, this process (fake LLM, starter), the whole machine. */
  cpu_s: {
    temporal: number | null;
    database: number | null;
    workers: number | null;
    bench: number;
    machine: number | null;
  };
  /** cpu_s per 1,000 successful LLM calls. */
  cpu_s_per_1000_calls: { temporal: number | null; database: number | null; workers: number | null };
  /** Peak RSS (VmHWM, reset before the run) of each worker process, and their sum. */
  worker_rss_mb: { peak_per_process: (number | null)[]; total: number | null };
  /** History per rollout from DescribeWorkflowExecution (historySizeBytes, historyLength), over the described ones. */
  history: {
    described: number;
    bytes: { mean: number | null; max: number | null };
    events: { mean: number | null; max: number | null };
  };
}

const round = (value: number | null, digits = 2): number | null =>
  value === null || !Number.isFinite(value) ? null : Number(value.toFixed(digits));

/** Mean and max, rounded. */
export function meanMax(values: number[]): { mean: number | null; max: number | null } {
  if (values.length === 0) return { mean: null, max: null };
  return { mean: round(values.reduce((a, b) => a + b, 0) / values.length, 1), max: Math.max(...values) };
}

/** The CPU figures of a run from its CPU delta and its successful calls. */
export function cpuFigures(
  delta: CpuSnapshot,
  successfulCalls: number,
): Pick<LoadResults, 'cpu_s' | 'cpu_s_per_1000_calls'> {
  const per = (v: number | null) =>
    v === null || successfulCalls === 0 ? null : round((v * 1000) / successfulCalls, 3);
  return {
    cpu_s: {
      temporal: round(delta.groups.temporal),
      database: round(delta.groups.database),
      workers: round(delta.groups.workers),
      bench: round(delta.bench)!,
      machine: round(delta.machine),
    },
    cpu_s_per_1000_calls: {
      temporal: per(delta.groups.temporal),
      database: per(delta.groups.database),
      workers: per(delta.groups.workers),
    },
  };
}

function fmt(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);
}

export function table(r: LoadResults): string {
  const p = r.parameters;
  const rows: [string, string][] = [
    ['dialogues started / completed', `${r.dialogues_started} / ${r.dialogues_completed}`],
    ['lost dialogues', String(r.lost_dialogues)],
    ['repeated calls', `${r.repeated_calls} (${r.repeated_requests} requests)`],
    [
      'LLM calls (ok / 500 injected / expected)',
      `${r.llm_calls} (${r.successful_calls} / ${r.failed_calls_injected} / ${r.expected_calls})`,
    ],
    ['wall s', fmt(r.wall_s)],
    ['calls/s', fmt(r.calls_per_s)],
    ['orchestration delay p50 / p99 ms', `${fmt(r.orchestration_delay_ms.p50)} / ${fmt(r.orchestration_delay_ms.p99)}`],
    ['retry delay p50 / p99 ms', `${fmt(r.retry_delay_ms.p50)} / ${fmt(r.retry_delay_ms.p99)}`],
    ['LLM latency drawn p50 / p99 ms', `${fmt(r.latency_drawn_ms.p50, 0)} / ${fmt(r.latency_drawn_ms.p99, 0)}`],
    [
      'CPU s per 1,000 calls: temporal / database / workers',
      `${fmt(r.cpu_s_per_1000_calls.temporal, 2)} / ${fmt(r.cpu_s_per_1000_calls.database, 2)} / ${fmt(r.cpu_s_per_1000_calls.workers, 2)}`,
    ],
    [
      'CPU s: temporal / database / workers / bench / machine',
      `${fmt(r.cpu_s.temporal)} / ${fmt(r.cpu_s.database)} / ${fmt(r.cpu_s.workers)} / ${fmt(r.cpu_s.bench)} / ${fmt(r.cpu_s.machine)}`,
    ],
    [
      'worker peak RSS MB (per process; total)',
      `${r.worker_rss_mb.peak_per_process.map((v) => fmt(v, 0)).join(', ')}; ${fmt(r.worker_rss_mb.total, 0)}`,
    ],
    [
      'history per dialogue: bytes mean / max',
      `${fmt(r.history.bytes.mean, 0)} / ${fmt(r.history.bytes.max, 0)} (${r.history.described} described)`,
    ],
    ['history per dialogue: events mean / max', `${fmt(r.history.events.mean, 1)} / ${fmt(r.history.events.max, 0)}`],
    ['load average 1m start / end', `${fmt(p.load_average_1m.start, 2)} / ${fmt(p.load_average_1m.end, 2)}`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const head =
    `Load benchmark: ${p.dialogues} dialogues x ${p.turns} turns, ${p.worker_processes} worker processes, ` +
    `${p.server}, mode llmCalls=${p.mode.llmCalls} activityPer=${p.mode.activityPer}\n` +
    `LLM latency lognormal median ${p.latency_model.median_ms} ms, p99 ${p.latency_model.p99_ms} ms, ` +
    `${(p.failure_rate * 100).toFixed(1)} % answered 500, seed ${p.latency_model.seed}; ${p.machine_cores} cores`;
  const lines = rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`);
  const verdict = r.ok ? 'OK' : `FAILED:\n${r.errors.map((e) => `  - ${e}`).join('\n')}`;
  return `${head}\n\n${lines.join('\n')}\n\n${verdict}`;
}

export function writeResults(file: string, results: LoadResults): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}
