/**
 * An activity call that carries a one-line summary for the Temporal UI's timeline, when `summary`
 * gives one; otherwise the plain call (histories recorded before summaries schedule the same commands).
 */
interface CallWithOptions<A extends unknown[], R> {
  (...args: A): Promise<R>;
  executeWithOptions(options: { summary?: string }, args: A): Promise<R>;
}

export function summarisedCall<A extends unknown[], R>(
  call: CallWithOptions<A, R>,
  summary: (...args: A) => string | undefined,
): (...args: A) => Promise<R> {
  return (...args: A) => {
    const text = summary(...args);
    return text === undefined ? call(...args) : call.executeWithOptions({ summary: text }, args);
  };
}
