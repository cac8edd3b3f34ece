import { Context } from '@temporalio/activity';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMetricsKey, trackingLedgerKey } from '../../artifacts/keys.js';
import type { ArtifactStore } from '../../artifacts/store.js';
import { parseStepRecords } from '../../core/runMetrics.js';
import {
  afterAttempt,
  emptyBackendLedger,
  ledgerHealth,
  stepsToLog,
  type TrackingLedger,
} from '../../core/tracking/trackingLedger.js';
import type { TrackingHealth } from '../../core/tracking/trackingHealth.js';
import type { TrackingSettings } from '../../core/tracking/trackingSettings.js';
import { writeReport } from '../../report/write.js';
import { mlflowLogger } from './mlflowLogger.js';
import type { StepLogger, TrackingContext } from './stepLogger.js';
import { tensorboardLogger } from './tensorboardLogger.js';
import { wandbLogger } from './wandbLogger.js';

export interface TrackStepInput {
  run: string;
  step: number;
  /** The run's last step: trackers close the run and get the report. */
  final: boolean;
  params: Record<string, string>;
  tracking: TrackingSettings;
}

/**
 * Test-only switch: `fail-after-log` fails the first attempt of every trackStep after the trackers
 * took the step but before the ledger says so, so the retry logs the step again.
 */
const FAULT_INJECTION_ENV = 'ATTUNE_TRACKING_FAULT_INJECTION';

function loggersFor(store: ArtifactStore, tracking: TrackingSettings): StepLogger[] {
  const loggers: StepLogger[] = [];
  if (tracking.mlflow) loggers.push(mlflowLogger(tracking.mlflow));
  if (tracking.tensorboard) loggers.push(tensorboardLogger(store));
  if (tracking.wandb) loggers.push(wandbLogger(store, tracking.wandb));
  return loggers;
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 300);
}

/** The files attached to a finished run: its metrics log and its HTML report (when one can be written). */
async function finalFiles(
  store: ArtifactStore,
  run: string,
): Promise<{ path: string; content: Uint8Array | string }[]> {
  const files: { path: string; content: Uint8Array | string }[] = [
    { path: 'metrics.jsonl', content: (await store.getText(runMetricsKey(run))) ?? '' },
  ];
  const outDir = await mkdtemp(join(tmpdir(), 'attune-tracking-report-'));
  try {
    const report = await writeReport({ store, target: run, outDir, png: false });
    files.push({ path: 'report/index.html', content: await readFile(report.html) });
  } catch {
    // A run's report needs only its metrics; should it fail anyway, the metrics log still goes up.
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
  return files;
}

export function createTrackingActivities(store: ArtifactStore) {
  return {
    /**
     * Logs a recorded step (and the steps a tracker missed) to every configured tracker. A tracker
     * that fails is noted in the ledger, its steps kept pending for the next call; this activity
     * does not fail for it, so training never waits on a tracker.
     */
    async trackStep(input: TrackStepInput): Promise<TrackingHealth[]> {
      const ledgerKey = trackingLedgerKey(input.run);
      const stored = await store.getText(ledgerKey);
      const ledger: TrackingLedger = stored ? (JSON.parse(stored) as TrackingLedger) : { backends: {} };
      const metricsKey = runMetricsKey(input.run);
      const records = new Map(
        parseStepRecords((await store.getText(metricsKey)) ?? '', metricsKey).steps.map((r) => [r.step, r]),
      );
      const context: TrackingContext = { run: input.run, params: input.params, ledger };
      for (const logger of loggersFor(store, input.tracking)) {
        const before = ledger.backends[logger.backend] ?? emptyBackendLedger();
        // A step missing from the metrics log has nothing to log.
        const due = stepsToLog(before, input.step).filter((s) => records.has(s));
        const logged: number[] = [];
        let failure: { error: string; at: string } | null = null;
        try {
          for (const s of due) {
            await logger.logStep(records.get(s)!, context);
            logged.push(s);
          }
          if (input.final && logger.finish) await logger.finish(context, await finalFiles(store, input.run));
        } catch (error) {
          failure = { error: messageOf(error), at: new Date().toISOString() };
          // An unlogged final step stays pending; logged ones are done even if closing the run failed.
        }
        ledger.backends[logger.backend] = afterAttempt(before, due, logged, failure);
      }
      if (process.env[FAULT_INJECTION_ENV] === 'fail-after-log' && Context.current().info.attempt === 1)
        throw new Error(`${FAULT_INJECTION_ENV}=fail-after-log: step ${input.step} logged, ledger not written`);
      await store.putJson(ledgerKey, ledger);
      return ledgerHealth(ledger);
    },
  };
}

export type TrackingActivities = ReturnType<typeof createTrackingActivities>;
