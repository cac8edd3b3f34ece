import { z } from 'zod';

/** The config's `tracking` section: where each training run logs its params, metrics and report. */
export const trackingConfigSchema = z
  .strictObject({
    mlflow: z
      .strictObject({
        trackingUri: z.string().url().describe("The MLflow server's URL."),
        experiment: z.string().min(1).default('attune').describe('MLflow experiment of the runs.'),
      })
      .optional()
      .describe('An MLflow tracking server; MLFLOW_TRACKING_URI sets trackingUri (and turns MLflow on).'),
    tensorboard: z.boolean().default(false).describe('Event files under `<artifacts>/runs/<run>/tb/`.'),
    wandb: z
      .strictObject({
        project: z.string().min(1).default('attune').describe('W&B project of the runs.'),
        mode: z
          .enum(['offline', 'online', 'disabled'])
          .optional()
          .describe(
            'Default: online when WANDB_API_KEY is set, else offline (a directory for `wandb sync`); `disabled` is off.',
          ),
        python: z
          .string()
          .min(1)
          .optional()
          .describe("Python with the `wandb` package; default: the project's `.venv/bin/python`."),
      })
      .optional()
      .describe('Weights & Biases; WANDB_PROJECT and WANDB_MODE set these keys (and turn W&B on).'),
  })
  .prefault({})
  .describe('Experiment trackers each training run logs its params, step metrics and report to.');

/** The config's `metrics` section: the workers' Prometheus endpoint. */
export const metricsConfigSchema = z
  .strictObject({
    prometheus: z
      .union([z.string(), z.number().int()])
      .transform(String)
      .pipe(
        z
          .string()
          .regex(/^(?:[^\s:]+:|\[[0-9a-fA-F:]+\]:|:)?\d{1,5}$/, 'expected host:port, :port or port')
          .transform((value) => (/^:?\d+$/.test(value) ? `127.0.0.1:${value.replace(/^:/, '')}` : value)),
      )
      .nullable()
      .default(null)
      .describe(
        '`host:port` to serve on (ATTUNE_METRICS_ADDRESS sets it); a bare `port` or `:port` binds loopback, 127.0.0.1. Off when unset: two workers on one host would otherwise contend for one port.',
      ),
  })
  .prefault({})
  .describe(
    "Prometheus metrics of `attune worker` and `attune dev`: the SDK's and Attune's, on one `/metrics` endpoint.",
  );
