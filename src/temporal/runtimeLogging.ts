import {
  DefaultLogger,
  Runtime,
  type LogEntry,
  type RuntimeOptions,
  type LogLevel as TemporalLogLevel,
} from '@temporalio/worker';
import { LLM_LATENCY_BUCKETS_MS, METRIC_NAMES } from '../core/metricNames.js';
import { formatLogRecord, resolveLogFormat } from '../logFormat.js';

let installed = false;

const SEVERITY: Record<TemporalLogLevel, number> = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4 };

/**
 * Warnings the SDK gives for Attune's deliberate layout: only the rollouts worker runs workflows,
 * every other worker (one per LLM endpoint, turns, optimizer) polls activities alone. They are
 * demoted to DEBUG, so `ATTUNE_TEMPORAL_LOG_LEVEL=DEBUG` still shows them.
 */
const EXPECTED_WARNINGS = [/^No workflows registered, not polling/];

export function effectiveLevel(entry: Pick<LogEntry, 'level' | 'message'>): TemporalLogLevel {
  return entry.level === 'WARN' && EXPECTED_WARNINGS.some((p) => p.test(entry.message)) ? 'DEBUG' : entry.level;
}

/**
 * The SDK's Prometheus exporter at `bindAddress`: its own metrics and Attune's (recorded through
 * the activity context's meter), counters with the conventional `_total` suffix.
 */
function prometheusMetrics(bindAddress: string) {
  return {
    prometheus: {
      bindAddress,
      countersTotalSuffix: true,
      histogramBucketOverrides: { [METRIC_NAMES.llmLatency]: LLM_LATENCY_BUCKETS_MS },
    },
    attachServiceName: false,
  };
}

/**
 * Temporal's SDK and core logs on stderr in the CLI's log format, at `level` and above; with
 * `metricsAddress`, Prometheus metrics served there. Call once, before any worker or connection.
 */
export function installTemporalLogging(
  level: TemporalLogLevel = (process.env.ATTUNE_TEMPORAL_LOG_LEVEL as TemporalLogLevel | undefined) ?? 'WARN',
  metricsAddress: string | null = null,
): void {
  if (installed) return;
  installed = true;
  const options: RuntimeOptions = {
    logger: new DefaultLogger(level, (entry) => {
      const lvl = effectiveLevel(entry);
      if (SEVERITY[lvl] < SEVERITY[level]) return;
      const record = {
        time: new Date(Number(entry.timestampNanos / 1_000_000n)),
        level: lvl.toLowerCase(),
        msg: entry.message,
        fields: { source: 'temporal', ...entry.meta },
      };
      process.stderr.write(`${formatLogRecord(resolveLogFormat(), record)}\n`);
    }),
    telemetryOptions: {
      logging: { filter: { core: level, other: 'ERROR' }, forward: {} },
      ...(metricsAddress ? { metrics: prometheusMetrics(metricsAddress) } : {}),
    },
  };
  try {
    Runtime.install(options);
  } catch (error) {
    if (!metricsAddress) throw error;
    // The exporter binds at install: a port in use is the operator's to fix, so name the key.
    throw new Error(`metrics.prometheus ${metricsAddress}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
