import type { StepMetricsRecord } from '../../core/runMetrics.js';
import type { TrackingLedger } from '../../core/tracking/trackingLedger.js';
import type { TrackingBackend } from '../../core/tracking/trackingHealth.js';

/** What every backend gets for one activity: the run, its flat params, and whether this is its last step. */
export interface TrackingContext {
  run: string;
  params: Record<string, string>;
  /** The ledger, which a backend may extend with what it needs to find its run again (MLflow's run id). */
  ledger: TrackingLedger;
}

/** One tracker. `logStep` must be safe to repeat for a step: retries and missed steps both repeat it. */
export interface StepLogger {
  backend: TrackingBackend;
  logStep(record: StepMetricsRecord, context: TrackingContext): Promise<void>;
  /** After the run's last step: close the run, attach the report. */
  finish?(context: TrackingContext, files: { path: string; content: Uint8Array | string }[]): Promise<void>;
}
