import type { StepMetricsRecord } from '../../core/runMetrics.js';
import { stepScalars } from '../../core/tracking/trackedValues.js';
import { MlflowClient, type MlflowRun } from './mlflowClient.js';
import type { StepLogger, TrackingContext } from './stepLogger.js';

/** One MLflow run per Attune run: created on the first step (found again by its tag), params logged then. */
export function mlflowLogger(settings: { trackingUri: string; experiment: string }): StepLogger {
  const client = new MlflowClient(settings.trackingUri);

  async function ensureRun(context: TrackingContext, startTime: number): Promise<MlflowRun> {
    const known = context.ledger.mlflow;
    if (known) return known;
    const experimentId = await client.experimentId(settings.experiment);
    let run = await client.findRun(experimentId, context.run);
    if (!run) run = await client.createRun(experimentId, context.run, startTime);
    // Params are immutable in MLflow; the same values again are accepted, so a retry may repeat them.
    await client.logParams(run.runId, context.params);
    context.ledger.mlflow = { experimentId, ...run };
    return run;
  }

  return {
    backend: 'mlflow',
    async logStep(record: StepMetricsRecord, context: TrackingContext) {
      // The step's own time, not now: a repeated step sends identical values, which MLflow keeps once.
      const timestamp = Date.parse(record.time);
      const run = await ensureRun(context, timestamp);
      const metrics = Object.entries(stepScalars(record)).map(([key, value]) => ({
        key,
        value,
        timestamp,
        step: record.step,
      }));
      await client.logMetrics(run.runId, metrics);
    },
    async finish(context, files) {
      const run = await ensureRun(context, Date.now());
      for (const file of files) await client.uploadArtifact(run, file.path, file.content);
      await client.finishRun(run.runId, Date.now());
    },
  };
}
