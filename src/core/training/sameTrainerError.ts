/**
 * When a failing optimizer step waits for the operator: after the trainer answered it with the same
 * server error on a bounded number of attempts in a row. A different error starts the count again,
 * so a trainer that keeps failing differently (it is changing: restarting, loading, freeing memory)
 * is retried, while one stuck on one error is handed to the operator with that error.
 */

/** The bound where the config sets none, and for runs started before it could be set. */
export const DEFAULT_SAME_ERROR_ATTEMPTS = 5;

/** The trainer's consecutive server errors on one step: the error (as `sameErrorKey` has it) and how often in a row. */
export interface SameErrorRun {
  error: string;
  attempts: number;
}

/**
 * What makes two trainer errors the same: their text (the HTTP status and the trainer's message),
 * with every number and hex id but the HTTP status as `#`, so an error naming a temporary file, a
 * port, a size or a time is the same error when only those differ. Nothing else is normalised.
 */
export function sameErrorKey(message: string): string {
  return message.replace(/(HTTP \d{3}\b)|\b(?:0x)?[0-9a-f]*\d[0-9a-f]*\b/gi, (match, status?: string) => status ?? '#');
}

/** The run of same errors after an attempt failed with `message`, given the run before it (null: none). */
export function nextSameErrorRun(previous: SameErrorRun | null, message: string): SameErrorRun {
  const error = sameErrorKey(message);
  return previous !== null && previous.error === error
    ? { error, attempts: previous.attempts + 1 }
    : { error, attempts: 1 };
}
