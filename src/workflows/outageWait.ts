import {
  condition,
  defineSignal,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EndpointCall } from '../core/rolloutSettingsSchema.js';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import type { FinishedCalls, TurnFailure } from '../activities/dialogueTurn.js';
import { TURN_FAILURE_POINTS, type TurnFailurePoint } from '../core/dialogueTurn.js';
import { lastErrorOf, operatorFixable, type WaitingCall, type WaitingNotice } from '../core/outageWait.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';

/**
 * Rollouts started after this patch wait at an LLM call whose endpoint stays down past its retries.
 * Asked when the rollout starts, so a rollout already running when the change deployed fails at an
 * outage as it did when it started.
 */
export const WAIT_AT_OUTAGE_PATCH = 'wait-at-outage-from-start';
/**
 * The same change as first shipped: asked only when a call first failed, so its marker sits at
 * that call. Histories holding it waited there, and replay so.
 */
export const WAIT_AT_OUTAGE_ASKED_LATE_PATCH = 'wait-at-outage';

/**
 * Whether this rollout waits at an outage. Call it when the rollout starts; the answer it returns
 * is read when a call fails.
 */
export function outageWaitEnabled(): () => boolean {
  if (patched(WAIT_AT_OUTAGE_PATCH)) return () => true;
  let askedLate = false;
  return () => {
    // Only a replayed history can hold the older marker; live, a rollout without the new one
    // started before the change and must not start waiting now.
    askedLate ||= workflowInfo().unsafe.isReplaying && patched(WAIT_AT_OUTAGE_ASKED_LATE_PATCH);
    return askedLate;
  };
}

/** Sent to a waiting rollout (from the Temporal UI, `attune resume` or its parent): retry the failed call and go on. */
export const continueSignal = defineSignal('continue');
/** Sent by a rollout to its parent when it starts and stops waiting; an evaluation passes it on to its own parent. */
export const rolloutWaitingSignal = defineSignal<[WaitingNotice]>('rolloutWaiting');

/** Where a call goes, as the waiting details name it. */
export function endpointName(endpoint: Pick<EndpointCall, 'baseURL' | 'model'>): string {
  return `${endpoint.baseURL} (model "${endpoint.model}")`;
}

/** The calls a failed turn activity had finished, as its failure carries them (see playDialogueTurn). */
export function finishedCallsOf(error: unknown): FinishedCalls | undefined {
  // A local activity's failure reaches the workflow unwrapped (local turns carry their calls too).
  const cause = error instanceof ActivityFailure ? error.cause : error;
  const details = cause instanceof ApplicationFailure ? cause.details?.[0] : undefined;
  return details && typeof details === 'object' ? (details as FinishedCalls) : undefined;
}

/** The call (or the journal access) a failed turn activity failed at, as its failure names it (see playDialogueTurn); none from older workers. */
export function failedCallOf(error: unknown): TurnFailurePoint | undefined {
  // A local activity's failure reaches the workflow unwrapped.
  const cause = error instanceof ActivityFailure ? error.cause : error;
  const failure =
    cause instanceof ApplicationFailure ? (cause.details?.[1] as Partial<TurnFailure> | undefined) : undefined;
  const failedAt: unknown = failure && typeof failure === 'object' ? failure.failedAt : undefined;
  return TURN_FAILURE_POINTS.find((point) => point === failedAt);
}

/** Tells the parent, if any; a parent that is gone has nobody to tell. */
export async function tellParent(notice: WaitingNotice): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  try {
    await getExternalWorkflowHandle(parent.workflowId).signal(rolloutWaitingSignal, notice);
  } catch {
    // The parent closed: the rollout still waits, and the UI or the CLI can still continue it.
  }
}

/**
 * A rollout's waits for an operator. A guarded call that fails on an error an operator can fix
 * (see operatorFixable) waits for the `continue` signal, up to `maxWaitMinutes`, then is made again
 * with the same input; anything else, or a wait nobody answers, fails as before. The rollout's
 * finished calls stay in its history, so none of them is made again.
 */
export class OutageWait {
  private continued = false;
  /** The call the rollout waits at now, if it waits. */
  waiting: WaitingCall | null = null;

  constructor(
    private readonly options: {
      /** Whether this rollout waits (see outageWaitEnabled). */
      enabled: () => boolean;
      rolloutId: string;
      maxWaitMinutes: number;
      /** The details to show again (they name the wait while there is one). */
      onChange: () => void;
    },
  ) {
    setHandler(continueSignal, () => {
      this.continued = true;
    });
  }

  /** `again`: the arguments of the call made after the wait (default: the same). */
  guard<A extends unknown[], R>(
    call: (...args: A) => Promise<R>,
    where: (error: unknown) => { call: string; endpoint: string },
    again: (error: unknown, args: A) => A = (_error, args) => args,
  ): (...args: A) => Promise<R> {
    return async (...first: A) => {
      let args = first;
      for (;;) {
        try {
          return await call(...args);
        } catch (error) {
          if (!operatorFixable(error) || !(await this.waited(error, where(error)))) throw error;
          args = again(error, args);
        }
      }
    };
  }

  /** True when an operator said to go on; false when waiting is off, or the bound passed. */
  private async waited(error: unknown, where: { call: string; endpoint: string }): Promise<boolean> {
    const { enabled, rolloutId, maxWaitMinutes, onChange } = this.options;
    if (!(maxWaitMinutes > 0) || !enabled()) return false;
    const wait: WaitingCall = { rolloutId, ...where, lastError: lastErrorOf(error) };
    this.waiting = wait;
    this.continued = false;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.outcome, value: 'waiting' }]);
    onChange();
    await tellParent({ ...wait, waiting: true });
    const answered = await condition(() => this.continued, Math.ceil(maxWaitMinutes * 60_000));
    this.waiting = null;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.outcome, value: null }]);
    onChange();
    await tellParent({ ...wait, waiting: false });
    return answered;
  }
}
