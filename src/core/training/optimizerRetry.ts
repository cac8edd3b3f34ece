/**
 * Waits between attempts at one optimizer step (Temporal doubles the wait from the first up to the
 * longest): the trainer may be restarting, so the activity keeps asking without an attempt limit.
 */
export interface OptimizerRetry {
  initialIntervalMs: number;
  maximumIntervalMs: number;
}

/** The waits where the config sets none, and for runs started before they could be set. */
export const OPTIMIZER_RETRY: OptimizerRetry = { initialIntervalMs: 2000, maximumIntervalMs: 60_000 };
