import type { PublishInput } from '../activities/runBookkeeping.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';

/**
 * The publish activity's input for a committed step: the version and its export, full weights'
 * served model and transport (sent over NCCL by the trainer, else reloaded from `exportPath`), and
 * which old LoRA versions to unload (at least the ones `maxStaleness` lets rollouts still sample).
 */
export function publishInputOf(settings: TrainingSettings, version: string, exportPath: string | null): PublishInput {
  const { publish } = settings;
  const keep = publish.keep;
  return {
    mode: publish.mode,
    policyBaseURL: publish.policyBaseURL,
    apiKeyEnv: settings.rollout.policy.apiKeyEnv,
    version,
    exportPath,
    ...(publish.weights === 'full' ? { weights: 'full' as const, servedModel: settings.rollout.policy.model } : {}),
    ...(publish.weights === 'full' && publish.transport === 'nccl' && publish.nccl
      ? {
          nccl: {
            trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
            runName: settings.runName,
            rendezvous: publish.nccl,
          },
        }
      : {}),
    ...(keep !== undefined && publish.mode === 'vllm'
      ? { unload: { runName: settings.runName, keep: Math.max(keep, (settings.maxStaleness ?? 0) + 1) } }
      : {}),
  };
}
