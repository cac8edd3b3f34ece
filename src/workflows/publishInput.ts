import type { PublishInput } from '../activities/runBookkeeping.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';

/**
 * The publish activity's input for a committed step: the version and its export, full weights'
 * served model, transport (sent over NCCL by the trainer, else reloaded from `exportPath`) and pause
 * (`keep` when the next step's dialogues run across the reload, `maxStaleness` >= 1), and
 * which old LoRA versions to unload (at least the ones `maxStaleness` lets rollouts still sample).
 */
export function publishInputOf(settings: TrainingSettings, version: string, exportPath: string | null): PublishInput {
  const { publish } = settings;
  return {
    mode: publish.mode,
    policyBaseURL: publish.policyBaseURL,
    apiKeyEnv: settings.rollout.policy.apiKeyEnv,
    version,
    exportPath,
    ...(publish.weights === 'full' ? { weights: 'full' as const, servedModel: settings.rollout.policy.model } : {}),
    // In-flight updates: the next step's calls in flight are frozen across the reload, not drained.
    ...(publish.weights === 'full' && (settings.maxStaleness ?? 0) > 0 ? { pause: 'keep' as const } : {}),
    ...(publish.weights === 'full' && publish.transport === 'nccl' && publish.nccl
      ? {
          nccl: {
            trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
            runName: settings.runName,
            rendezvous: publish.nccl,
          },
        }
      : {}),
    ...(publish.mode === 'vllm' ? unloadOf(settings) : {}),
  };
}

/**
 * Which of the run's old versions a vLLM publish unloads: all but the newest `publish.keep`, and never
 * one that `maxStaleness` lets rollouts still sample. Nothing when `keep` is unset.
 */
export function unloadOf(settings: TrainingSettings): { unload?: { runName: string; keep: number } } {
  const keep = settings.publish.keep;
  if (keep === undefined) return {};
  return { unload: { runName: settings.runName, keep: Math.max(keep, (settings.maxStaleness ?? 0) + 1) } };
}
