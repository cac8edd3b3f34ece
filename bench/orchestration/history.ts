import type { WorkflowHandle } from '@temporalio/client';
import type { TurnTiming } from './loops.js';

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
export type HistoryEvent = NonNullable<History['events']>[number];

/** temporal.api.enums.v1.EventType values used here. */
const EVENT = {
  workflowStarted: 1,
  workflowCompleted: 2,
  workflowTaskScheduled: 5,
  workflowTaskStarted: 6,
  workflowTaskCompleted: 7,
  workflowTaskTimedOut: 8,
  workflowTaskFailed: 9,
  activityScheduled: 10,
  activityStarted: 11,
  activityCompleted: 12,
} as const;

const LLM_ACTIVITIES = new Set(['generatePolicyTurn', 'analyzeAssistantReply', 'writeUserMessage']);

function timeMs(event: HistoryEvent): number {
  const t = event.eventTime;
  if (!t) return NaN;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

function idOf(value: unknown): number {
  return Number(value ?? 0);
}

/** The latencyMs an LLM activity measured around its HTTP call, read from its JSON result. */
function resultLatencyMs(event: HistoryEvent): number {
  const payload = event.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
  if (!payload?.data) return 0;
  try {
    const value = JSON.parse(Buffer.from(payload.data).toString('utf8')) as { latencyMs?: unknown };
    return typeof value.latencyMs === 'number' ? value.latencyMs : 0;
  } catch {
    return 0;
  }
}

/** Where the time between two LLM calls goes, per call, from the server's event timestamps. */
export interface CallBreakdown {
  /** Activity scheduled -> started: matching / dispatch to a polling activity worker. */
  queueMs: number;
  /** Activity started -> completed, minus the HTTP time the activity measured: worker-side overhead and the completion RPC. */
  activityOverheadMs: number;
  /** Activity completed -> next activity scheduled: a workflow task round trip. */
  workflowTaskMs: number;
}

export interface WorkflowTaskBreakdown {
  /** Workflow task scheduled -> started (dispatch, sticky queue). */
  dispatchMs: number;
  /** Workflow task started -> completed (worker replay/activation and the completion RPC). */
  runMs: number;
}

export interface HistoryTimings {
  turns: TurnTiming[];
  calls: CallBreakdown[];
  workflowTasks: WorkflowTaskBreakdown[];
  /** Bytes of activity inputs and results, and of local-activity markers. */
  payloadBytes: number;
  events: number;
  /** Workflow tasks that timed out (e.g. a sticky task not picked up within 10 s) or failed. */
  workflowTaskTimeouts: number;
  workflowTaskFailures: number;
  /** Server time (epoch ms) of the last event: the workflow's close. */
  closedAtMs: number;
  /** Server times (epoch ms) of the workflow's start and of its first workflow task's pick-up. */
  startedAtMs: number;
  firstTaskStartedAtMs: number;
}

/**
 * Turn k runs from the moment turn k begins (the workflow's start for turn 1, else the scheduling
 * of policy call k) to the scheduling of policy call k+1, or of the transcript write after the last
 * turn: the same boundaries the plain loop records.
 */
export function historyTimings(events: HistoryEvent[]): HistoryTimings {
  const started = events.find((e) => Number(e.eventType) === EVENT.workflowStarted);
  const scheduled = new Map<number, { name: string; at: number }>();
  const activityStart = new Map<number, number>();
  const boundaries: number[] = started ? [timeMs(started)] : [];
  const llmScheduled: { at: number; id: number }[] = [];
  const completions: { scheduledId: number; at: number; latencyMs: number }[] = [];
  const allScheduledTimes: number[] = [];
  const wftScheduled = new Map<number, number>();
  const wftStarted = new Map<number, number>();
  const workflowTasks: WorkflowTaskBreakdown[] = [];
  let payloadBytes = 0;
  let policyCount = 0;
  let workflowTaskTimeouts = 0;
  let workflowTaskFailures = 0;
  for (const e of events) {
    const type = Number(e.eventType);
    const at = timeMs(e);
    const id = idOf(e.eventId);
    // Payloads a local activity leaves in the history: its marker's details (result, activity data).
    for (const payloads of Object.values(e.markerRecordedEventAttributes?.details ?? {}))
      for (const p of payloads.payloads ?? []) payloadBytes += p.data?.length ?? 0;
    if (type === EVENT.workflowTaskTimedOut) workflowTaskTimeouts++;
    if (type === EVENT.workflowTaskFailed) workflowTaskFailures++;
    if (type === EVENT.activityScheduled) {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
      scheduled.set(id, { name, at });
      allScheduledTimes.push(at);
      for (const p of e.activityTaskScheduledEventAttributes?.input?.payloads ?? [])
        payloadBytes += p.data?.length ?? 0;
      if (name === 'generatePolicyTurn') {
        policyCount++;
        if (policyCount > 1) boundaries.push(at);
      } else if (name === 'saveTranscript') {
        boundaries.push(at);
      }
      if (LLM_ACTIVITIES.has(name)) llmScheduled.push({ at, id });
    } else if (type === EVENT.activityStarted) {
      activityStart.set(idOf(e.activityTaskStartedEventAttributes?.scheduledEventId), at);
    } else if (type === EVENT.activityCompleted) {
      const scheduledId = idOf(e.activityTaskCompletedEventAttributes?.scheduledEventId);
      for (const p of e.activityTaskCompletedEventAttributes?.result?.payloads ?? [])
        payloadBytes += p.data?.length ?? 0;
      if (LLM_ACTIVITIES.has(scheduled.get(scheduledId)?.name ?? ''))
        completions.push({ scheduledId, at, latencyMs: resultLatencyMs(e) });
    } else if (type === EVENT.workflowTaskScheduled) {
      wftScheduled.set(id, at);
    } else if (type === EVENT.workflowTaskStarted) {
      const s = wftScheduled.get(idOf(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      wftStarted.set(id, at);
      if (s !== undefined) workflowTasks.push({ dispatchMs: at - s, runMs: NaN });
    } else if (type === EVENT.workflowTaskCompleted) {
      const s = wftStarted.get(idOf(e.workflowTaskCompletedEventAttributes?.startedEventId));
      const last = workflowTasks[workflowTasks.length - 1];
      if (s !== undefined && last && Number.isNaN(last.runMs)) last.runMs = at - s;
    }
  }
  const turns: TurnTiming[] = [];
  const latencyBySchedule = new Map(completions.map((c) => [c.scheduledId, c.latencyMs]));
  for (let k = 1; k < boundaries.length; k++) {
    const from = boundaries[k - 1]!;
    const to = boundaries[k]!;
    const inTurn = llmScheduled.filter((s) => s.at >= from && s.at < to);
    turns.push({
      ms: to - from,
      calls: inTurn.length,
      llmMs: inTurn.reduce((n, s) => n + (latencyBySchedule.get(s.id) ?? 0), 0),
    });
  }
  const calls: CallBreakdown[] = completions.map((c) => {
    const sched = scheduled.get(c.scheduledId)!.at;
    const start = activityStart.get(c.scheduledId) ?? sched;
    const next = allScheduledTimes.find((t) => t >= c.at) ?? NaN;
    return { queueMs: start - sched, activityOverheadMs: c.at - start - c.latencyMs, workflowTaskMs: next - c.at };
  });
  const last = events[events.length - 1];
  const firstTask = events.find((e) => Number(e.eventType) === EVENT.workflowTaskStarted);
  return {
    turns,
    calls,
    workflowTasks: workflowTasks.filter((w) => !Number.isNaN(w.runMs)),
    payloadBytes,
    events: events.length,
    workflowTaskTimeouts,
    workflowTaskFailures,
    closedAtMs: last ? timeMs(last) : NaN,
    startedAtMs: started ? timeMs(started) : NaN,
    firstTaskStartedAtMs: firstTask ? timeMs(firstTask) : NaN,
  };
}

export function percentile(values: number[], p: number): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function mean(values: number[]): number {
  const finite = values.filter((v) => Number.isFinite(v));
  return finite.length === 0 ? NaN : finite.reduce((a, b) => a + b, 0) / finite.length;
}
