/** A benchmark's progress log: one JSON line per event on stderr (stdout is for the results), tagged with its source. */
export function progressOf(source: string) {
  return (msg: string, fields: Record<string, unknown> = {}): void => {
    process.stderr.write(
      `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg, source, ...fields })}\n`,
    );
  };
}

export const progress = progressOf('bench:orchestration');
