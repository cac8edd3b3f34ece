import { z } from 'zod';

/** Experiment trackers a run logs to; each absent key is a tracker left off. */
export const trackingSettingsSchema = z.strictObject({
  mlflow: z
    .strictObject({
      /** An MLflow tracking server (http or https). */
      trackingUri: z.string().url(),
      experiment: z.string().min(1),
    })
    .optional(),
  /** Event files under `runs/<run>/tb/` in the artifact store. */
  tensorboard: z.boolean().optional(),
  wandb: z
    .strictObject({
      project: z.string().min(1),
      /** `offline` writes a run directory for `wandb sync`; `online` needs WANDB_API_KEY. */
      mode: z.enum(['offline', 'online']),
      /** Python with the `wandb` package that runs the logging helper. */
      python: z.string().min(1),
    })
    .optional(),
});
export type TrackingSettings = z.infer<typeof trackingSettingsSchema>;
