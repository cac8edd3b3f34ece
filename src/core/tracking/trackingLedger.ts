import type { TrackingBackend, TrackingHealth } from './trackingHealth.js';

/**
 * Per run and backend, what has been logged: every step up to `loggedThrough` except those still
 * pending. Kept in the artifact store (`runs/<run>/tracking.json`) beside the metrics log, so a
 * retried activity skips a step its first attempt finished, and a backend that was down gets its
 * missed steps on a later step.
 */
export interface BackendLedger {
  loggedThrough: number;
  pendingSteps: number[];
  downSince: string | null;
  lastError: string | null;
}

export interface TrackingLedger {
  backends: Partial<Record<TrackingBackend, BackendLedger>>;
  /** The MLflow run this Attune run logs to, once created. */
  mlflow?: { experimentId: string; runId: string; artifactUri: string };
}

export function emptyBackendLedger(): BackendLedger {
  return { loggedThrough: 0, pendingSteps: [], downSince: null, lastError: null };
}

/** The steps to log now for `step`, oldest first: the backend's pending steps, then `step` unless logged. */
export function stepsToLog(ledger: BackendLedger, step: number): number[] {
  const due = new Set(ledger.pendingSteps);
  if (step > ledger.loggedThrough) due.add(step);
  return [...due].sort((a, b) => a - b);
}

/** After logging `logged` (a prefix of the due steps) and failing on the rest with `error` (if any). */
export function afterAttempt(
  ledger: BackendLedger,
  due: number[],
  logged: number[],
  failure: { error: string; at: string } | null,
): BackendLedger {
  const done = new Set(logged);
  const pending = due.filter((s) => !done.has(s));
  const highest = Math.max(ledger.loggedThrough, ...due);
  return {
    loggedThrough: highest,
    pendingSteps: pending,
    downSince: failure ? (ledger.downSince ?? failure.at) : null,
    lastError: failure ? failure.error : null,
  };
}

export function ledgerHealth(ledger: TrackingLedger): TrackingHealth[] {
  return Object.entries(ledger.backends).map(([backend, b]) => ({
    backend: backend as TrackingBackend,
    pendingSteps: b.pendingSteps,
    downSince: b.downSince,
    lastError: b.lastError,
  }));
}
