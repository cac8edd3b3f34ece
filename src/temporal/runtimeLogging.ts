import { DefaultLogger, Runtime, type LogLevel as TemporalLogLevel } from '@temporalio/worker';

let installed = false;

/** Temporal's SDK and core logs as JSON lines on stderr, at `level` and above. Call once, before any worker or connection. */
export function installTemporalLogging(
  level: TemporalLogLevel = (process.env.ATTUNE_TEMPORAL_LOG_LEVEL as TemporalLogLevel | undefined) ?? 'WARN',
): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => {
      const { timestampNanos, level: lvl, message, meta } = entry;
      process.stderr.write(
        `${JSON.stringify({ time: new Date(Number(timestampNanos / 1_000_000n)).toISOString(), level: lvl.toLowerCase(), msg: message, source: 'temporal', ...meta })}\n`,
      );
    }),
    telemetryOptions: { logging: { filter: { core: level, other: 'ERROR' }, forward: {} } },
  });
}
