/** Progress of a load run: one JSON line per event on stderr (stdout is for the results). */
export function progress(msg: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg, source: 'bench:load', ...fields })}\n`,
  );
}
