import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { OptimizerStepResult } from '../../src/activities/optimizer.js';
import type { PublishResult } from '../../src/activities/runBookkeeping.js';
import { executionHistories, timeMs, type HistoryEvent } from '../training/history.js';

/** One step's publish, as the run's own history records it. */
export interface StepPublish {
  step: number;
  version: string;
  /** The trainer's commit (its checkpoint's rename) to its answer, on the trainer's clock. */
  commitToAnswerMs: number;
  /**
   * Temporal's record of the optimizer step done (its ActivityTaskCompleted event time, the server's
   * clock) to the new version's first token (`firstTokenAtMs`, the publishing worker's clock). On
   * one host both read the same realtime clock.
   */
  committedToFirstTokenMs: number;
  /** commitToAnswerMs + committedToFirstTokenMs: the trainer's commit to the new version's first token. */
  commitToFirstTokenMs: number;
  /** The run's own `publishLatencyMs`: the publish activity's start to the first token, on the worker's clock. */
  publishMs: number;
  /** vLLM taking the weights alone: the adapter's load request, or the full reload from pause to resume. */
  loadMs: number;
}

/** The completion (time and decoded result) of the execution's one successful activity of `type`. */
function completed<T>(events: HistoryEvent[], type: string): { atMs: number; result: T } | null {
  const scheduled = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type)
      .map((e) => String(e.eventId)),
  );
  const done = events.find(
    (e) =>
      e.activityTaskCompletedEventAttributes &&
      scheduled.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId)),
  );
  const payload = done?.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
  if (!done || !payload) return null;
  return { atMs: timeMs(done), result: defaultPayloadConverter.fromPayload<T>(payload) };
}

/** A number the history must carry for the bench to report the step. */
function measured(value: number | null | undefined, what: string, step: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new Error(`step ${step}: ${what} not recorded (${String(value)})`);
  return value;
}

/**
 * Each step's publish, walking the run's chain of executions (it continues as new after each step)
 * from its first run id: the optimizer step's completion and result, and the publish's result.
 */
export async function stepPublishes(client: Client, workflowId: string, firstRunId: string): Promise<StepPublish[]> {
  const out: StepPublish[] = [];
  for await (const events of executionHistories(client, workflowId, firstRunId)) {
    const optimizer = completed<OptimizerStepResult>(events, 'applyOptimizerStep');
    const publish = completed<PublishResult>(events, 'publishPolicyVersion');
    if (!optimizer || !publish) continue; // an execution that applied no step (the last, which only returns)
    const step = optimizer.result.step;
    const commitToAnswerMs = measured(optimizer.result.commitToAnswerMs, 'the trainer commit-to-answer time', step);
    const firstTokenAtMs = measured(publish.result.firstTokenAtMs, 'the first token time', step);
    // Event times carry microseconds: a tenth of a millisecond is as fine as the other figures go.
    const tenths = (ms: number) => Math.round(ms * 10) / 10;
    const committedToFirstTokenMs = tenths(firstTokenAtMs - optimizer.atMs);
    out.push({
      step,
      version: publish.result.version,
      commitToAnswerMs,
      committedToFirstTokenMs,
      commitToFirstTokenMs: tenths(commitToAnswerMs + committedToFirstTokenMs),
      publishMs: measured(publish.result.publishMs, 'publishMs', step),
      loadMs: measured(publish.result.loadMs, 'loadMs', step),
    });
  }
  return out;
}
