import type { TrainingSettings } from './trainingSettingsSchema.js';

/**
 * Whether a step's publish runs while the optimizer trains the next step (steps that take the first
 * finished dialogues). Only where the publish reads what the trainer wrote and keeps: one vLLM loading
 * the step's export, a LoRA adapter or full weights over the checkpoint transport. Not over NCCL (the
 * trainer sends the weights it holds, which the next step changes: they would arrive labelled with the
 * older step), not when the trainer serves the policy (its live weights are the next step's), not to
 * replicas updated together (every reload would stop them all under the next step's dialogues; in
 * turn, one reloads while the others serve), and not when the trainer keeps a single export (the next step's would remove the one vLLM is loading).
 */
export function publishesWhileOptimizing(settings: TrainingSettings): boolean {
  const { publish } = settings;
  if (settings.stepDialogues !== 'firstFinished' || (settings.maxStaleness ?? 0) < 1) return false;
  if (publish.mode !== 'vllm' || (publish.replicas && publish.replicaUpdates !== 'inTurn')) return false;
  if (publish.weights === 'full' && publish.transport === 'nccl') return false;
  // The config sets it for every vLLM publish (trainerHyperparameters); absent, the trainer keeps one.
  return (settings.trainer.hyperparameters.export_keep ?? 1) >= 2;
}
