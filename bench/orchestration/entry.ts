import { loadavg } from 'node:os';
import { LIMITS } from '../../src/config/limits.js';
import type { DialogueGaps } from './gaps.js';
import type { TurnTiming } from './loops.js';
import type { Options } from './options.js';
import type { Cell } from './runContext.js';

/** One entry of bench/results/orchestration.json: a cell's figures for every variant. */

export interface Entry {
  measured_at: string;
  /** The machine's 1-minute load average when the cell began (other work on a shared machine skews timings). */
  load_average_1m: number;
  latency_ms: number;
  concurrency: number;
  turns: number;
  attune_s: number | null;
  plain_s: number | null;
  reference_s: number | null;
  attune_over_plain: number | null;
  attune_over_reference: number | null;
  dialogues_per_s: number | null;
  calls_per_s: number | null;
  llm_calls: number | null;
  /** TCP connections the fake server accepted during the timed attune run. */
  http_connections: number | null;
  plain_calls_per_s: number | null;
  /** Added latency per turn: turn wall time minus L x the turn's LLM calls (attune, from workflow histories). */
  p50_ms: number | null;
  p95_ms: number | null;
  /** The same for the plain loop. */
  plain_p50_ms: number | null;
  plain_p95_ms: number | null;
  /** Turn wall time minus the HTTP time the activities measured themselves: Temporal's own share. */
  orchestration_p50_ms: number | null;
  orchestration_p95_ms: number | null;
  /** Median added latency of turn 1, 2, ... (turn 1 includes starting the workflow). */
  p50_ms_by_turn: number[] | null;
  /** Where each dialogue's time beyond L x its calls goes (see gaps.ts): attune, then the plain loop. */
  gaps_ms: DialogueGaps | null;
  plain_gaps_ms: DialogueGaps | null;
  worker_rss_mb: number | null;
  dev_server_rss_mb: number | null;
  cpu_s: Record<string, number | null>;
  /** CPU of worker + dev server + fake server and client, per LLM call (attune); loop + fake (plain). */
  cpu_ms_per_call: number | null;
  plain_cpu_ms_per_call: number | null;
  /** Means over all LLM activities and workflow tasks of the timed run (server timestamps). */
  breakdown_ms: Record<string, number> | null;
  history_events_per_workflow: number | null;
  /** Workflow tasks that timed out or failed in the timed run (each costs a retry, possibly a replay). */
  workflow_task_timeouts: number | null;
  workflow_task_failures: number | null;
  payload_kb_per_workflow: number | null;
  reference_measured_s: number | null;
  reference_extrapolated: boolean | null;
  reference_sequential_measured_fraction: number | null;
  dev_server: string;
  workflow_bundle: string;
  /** LLM-I/O worker processes per attune variant (`worker_rss_mb` and `cpu_s` sum over them). */
  worker_processes: number;
  worker_overrides: Record<string, unknown>;
  worker_limits: Record<string, number>;
  /** How the default variant (`attune_s` and the figures beside it) runs its calls: the config's defaults. */
  mode: { llmCalls: string; activityPer: string };
  /** Calls the default variant made again (a retried local turn whose journal missed a call, say). */
  repeated_calls: number | null;
  /**
   * The same workflows run otherwise (`ALTERNATIVES`, every mode but the default's, which is null):
   * `per_call` an activity per LLM call, `local` a local activity per call, `turn` an activity per
   * turn on the turns queue, `turn_local` a local activity per turn. Per-turn latencies (`p50_ms`,
   * ...) need call boundaries in the history: only `per_call` has them.
   */
  per_call: VariantEntry | null;
  local: VariantEntry | null;
  turn: VariantEntry | null;
  turn_local: VariantEntry | null;
}

export interface VariantEntry {
  attune_s: number;
  attune_over_plain: number | null;
  /** Dialogue calls per second (C x (3 x turns - 1) / attune_s), repeated calls not counted. */
  calls_per_s: number;
  /**
   * Calls made again: when an overloaded worker lets a workflow task time out, the local
   * activities it had not yet recorded run again (and a retried local turn repeats its calls).
   */
  repeated_calls: number;
  worker_rss_mb: number | null;
  dev_server_rss_mb: number | null;
  cpu_s: Record<string, number | null>;
  cpu_ms_per_call: number;
  history_events_per_workflow: number;
  payload_kb_per_workflow: number;
  gaps_ms: DialogueGaps | null;
  /** Added latency per turn from the histories' call boundaries (null without them). */
  p50_ms: number | null;
  p95_ms: number | null;
}

export const round = (value: number, digits = 2): number =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : NaN;

/** The LLM calls C dialogues of `turns` turns make: per turn a policy call and an analysis, a reply in all but the last. */
export function dialogueCalls(dialogues: number, turns: number): number {
  return dialogues * (3 * turns - 1);
}

/** Added latency per turn: its wall time minus L x the LLM calls in it. */
export function addedLatencies(turns: TurnTiming[], latencyMs: number): number[] {
  return turns.map((t) => t.ms - latencyMs * t.calls);
}

/** An entry for `cell` with nothing measured yet. */
export function emptyEntry(options: Options, cell: Cell, mode: Entry['mode']): Entry {
  return {
    measured_at: new Date().toISOString(),
    load_average_1m: round(loadavg()[0] ?? NaN, 2),
    latency_ms: cell.latencyMs,
    concurrency: cell.concurrency,
    turns: options.turns,
    attune_s: null,
    plain_s: null,
    reference_s: null,
    attune_over_plain: null,
    attune_over_reference: null,
    dialogues_per_s: null,
    calls_per_s: null,
    llm_calls: null,
    http_connections: null,
    plain_calls_per_s: null,
    p50_ms: null,
    p95_ms: null,
    plain_p50_ms: null,
    plain_p95_ms: null,
    orchestration_p50_ms: null,
    orchestration_p95_ms: null,
    p50_ms_by_turn: null,
    gaps_ms: null,
    plain_gaps_ms: null,
    worker_rss_mb: null,
    dev_server_rss_mb: null,
    cpu_s: {},
    cpu_ms_per_call: null,
    plain_cpu_ms_per_call: null,
    breakdown_ms: null,
    history_events_per_workflow: null,
    workflow_task_timeouts: null,
    workflow_task_failures: null,
    payload_kb_per_workflow: null,
    reference_measured_s: null,
    reference_extrapolated: null,
    reference_sequential_measured_fraction: null,
    dev_server: [
      options.db === 'memory' ? 'in-memory SQLite' : 'SQLite file',
      ...options.sqlitePragmas.map((p) => `pragma ${p}`),
      ...options.dynamicConfig,
    ].join(', '),
    workflow_bundle: options.bundle,
    worker_processes: options.workerProcesses,
    worker_overrides: Object.fromEntries(options.workerOverrides.map((o) => [`${o.queue}.${o.key}`, o.value])),
    worker_limits: {
      maxConcurrentWorkflowTaskExecutions: LIMITS.maxConcurrentWorkflowTasks,
      maxCachedWorkflows: LIMITS.maxCachedWorkflows,
      policyMaxConcurrency: cell.concurrency,
      simulatorMaxConcurrency: cell.concurrency,
    },
    mode,
    repeated_calls: null,
    per_call: null,
    local: null,
    turn: null,
    turn_local: null,
  };
}
