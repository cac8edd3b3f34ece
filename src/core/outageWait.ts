import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';

/** `rollout.maxWaitMinutes` by default: a day, long enough for an operator to notice and fix an outage. */
export const DEFAULT_MAX_WAIT_MINUTES = 24 * 60;

/** A transcript write whose object store stayed out of reach (down, 5xx) past the SDK's retries. */
export const ARTIFACT_STORE_UNREACHABLE = 'ArtifactStoreUnreachable';

/**
 * Failures that an operator can fix by bringing the endpoint back: an LLM call's timeouts, 429,
 * 5xx and an endpoint out of reach, and an artifact store out of reach. A rejected request (4xx),
 * an unparseable reply, a full disk or refused credentials are not one.
 */
export const OPERATOR_FIXABLE_TYPES = [
  'LlmTimeout',
  'LlmUnreachable',
  'LlmRateLimited',
  'LlmServerError',
  ARTIFACT_STORE_UNREACHABLE,
] as const;

/** The failure an activity call rejected with, unwrapped to what the activity itself raised. */
function rootOf(error: unknown): unknown {
  return error instanceof ActivityFailure ? error.cause : error;
}

/** Whether a failed call's last error (an LLM call's, a transcript write's) is one that waiting for the endpoint can fix. */
export function operatorFixable(error: unknown): boolean {
  const root = rootOf(error);
  if (root instanceof TimeoutFailure) return true;
  return root instanceof ApplicationFailure && (OPERATOR_FIXABLE_TYPES as readonly string[]).includes(root.type ?? '');
}

/** The last error's message, the activity wrapper left out. */
export function lastErrorOf(error: unknown): string {
  const root = rootOf(error);
  return root instanceof Error ? root.message : String(root);
}

/** Where a rollout waits: the call that failed, the endpoint it calls and the error its last attempt met. */
export interface WaitingCall {
  rolloutId: string;
  /** e.g. "turn 3 · user reply". */
  call: string;
  /** The endpoint's base URL and model. */
  endpoint: string;
  lastError: string;
}

/** Sent by a rollout to its parent when it starts (`waiting: true`) and stops waiting. */
export interface WaitingNotice extends WaitingCall {
  waiting: boolean;
}

/** The lines the rollout's current details add while it waits (Markdown, as the rest of them). */
export function waitingDetails(wait: WaitingCall, maxWaitMinutes: number): string {
  return [
    `**waiting for an operator** at ${wait.call}`,
    `**endpoint** ${wait.endpoint}`,
    `**last error** ${wait.lastError}`,
    `continue: \`attune resume RUN\`, or send the signal \`continue\` to this rollout (waits at most ${maxWaitMinutes} min)`,
  ].join('\n');
}

/** A run's blocked reason while some of its dialogues wait. */
export function waitingReason(waits: readonly WaitingCall[]): string {
  const first = waits[0];
  const n = waits.length;
  if (!first) return '';
  return `${n} dialogue${n === 1 ? '' : 's'} wait${n === 1 ? 's' : ''} for an operator at a failed call (first: ${first.rolloutId} at ${first.call}, ${first.endpoint}: ${first.lastError}); fix the endpoint, then attune resume`;
}

/** A wait as a run carries it to its next run: its last error cut to `maxErrorChars`. */
export function carriedWait(wait: WaitingCall, maxErrorChars: number): WaitingCall {
  return wait.lastError.length > maxErrorChars
    ? { ...wait, lastError: `${wait.lastError.slice(0, maxErrorChars)}…` }
    : wait;
}
