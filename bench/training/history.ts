import type { Client } from '@temporalio/client';

export type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
export type HistoryEvent = NonNullable<History['events']>[number];

/** temporal.api.enums.v1.EventType values used here. */
const EVENT = {
  workflowStarted: 1,
  workflowCompleted: 2,
  continuedAsNew: 28,
  activityScheduled: 10,
  activityCompleted: 12,
  childInitiated: 29,
  childCompleted: 32,
} as const;

/** One training step (one execution of the continue-as-new chain), in ms from the server's event times. */
export interface StepTimings {
  step: number;
  totalMs: number;
  rolloutsMs: number;
  optimizerMs: number;
  publishMs: number;
  /** total - (rollouts + optimizer + publish): workflow tasks, scenario listing, metrics, continue-as-new. */
  otherMs: number;
}

/** An event's server time in ms. */
export function timeMs(event: HistoryEvent): number {
  const t = event.eventTime;
  return Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
}

/** Scheduled -> completed of the (single) activity of that type in the execution. */
function activitySpan(events: HistoryEvent[], type: string): { start: number; end: number } | null {
  const scheduled = events.find(
    (e) =>
      Number(e.eventType) === EVENT.activityScheduled &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === type,
  );
  if (!scheduled) return null;
  const id = Number(scheduled.eventId);
  const done = events.find(
    (e) =>
      Number(e.eventType) === EVENT.activityCompleted &&
      Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === id,
  );
  return done ? { start: timeMs(scheduled), end: timeMs(done) } : null;
}

/** The events of each execution of a run's continue-as-new chain, first to last, from its first run id. */
export async function* executionHistories(
  client: Client,
  workflowId: string,
  firstRunId: string,
): AsyncGenerator<HistoryEvent[]> {
  let runId: string | null = firstRunId;
  while (runId) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? null;
    yield events;
  }
}

/**
 * Walks the run's chain of executions (one per step) from its first run id and derives each
 * step's phases. The first execution also creates the trainer run (ensureTrainerRun): its step
 * starts when that activity completes, so run creation (model load) is not counted as step time.
 */
export async function stepTimings(client: Client, workflowId: string, firstRunId: string): Promise<StepTimings[]> {
  const out: StepTimings[] = [];
  for await (const events of executionHistories(client, workflowId, firstRunId)) {
    const started = events.find((e) => Number(e.eventType) === EVENT.workflowStarted);
    const ended = events.find(
      (e) => Number(e.eventType) === EVENT.continuedAsNew || Number(e.eventType) === EVENT.workflowCompleted,
    );
    const firstChild = events.find((e) => Number(e.eventType) === EVENT.childInitiated);
    const lastChild = events.filter((e) => Number(e.eventType) === EVENT.childCompleted).pop();
    if (!started || !ended || !firstChild || !lastChild) continue; // the final execution that only returns
    const ensure = activitySpan(events, 'ensureTrainerRun');
    const optimizer = activitySpan(events, 'applyOptimizerStep');
    const publish = activitySpan(events, 'publishPolicyVersion');
    const begin = ensure ? ensure.end : timeMs(started);
    const totalMs = timeMs(ended) - begin;
    const rolloutsMs = timeMs(lastChild) - timeMs(firstChild);
    const optimizerMs = optimizer ? optimizer.end - optimizer.start : 0;
    const publishMs = publish ? publish.end - publish.start : 0;
    out.push({
      step: out.length + 1,
      totalMs,
      rolloutsMs,
      optimizerMs,
      publishMs,
      otherMs: totalMs - rolloutsMs - optimizerMs - publishMs,
    });
  }
  return out;
}
