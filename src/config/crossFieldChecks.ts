/**
 * The config's checks across fields (sizes Temporal must carry, checkpoints the pipeline needs,
 * what vLLM accepts), kept apart from the schema's field declarations in schema.ts.
 */
import type { z } from 'zod';
import { stepSizeProblem, dialogueSizeProblem } from '../core/temporalLimits.js';
import { ALGORITHM_TRAITS, type Algorithm } from '../core/training/algorithms.js';

type ConfigShape = {
  policy: { maxTokens: number };
  simulator: { maxTokens: number };
  rollout: { maxTurns: number };
  training: {
    maxTurns: number;
    scenariosPerStep: number;
    samplesPerScenario?: number | undefined;
    algorithm: Algorithm;
  };
  evaluation: { maxTurns: number };
};

/** The samples per scenario of a run: the config's, else the algorithm's default. */
export function samplesPerScenarioOf(training: {
  algorithm: Algorithm;
  samplesPerScenario?: number | undefined;
}): number {
  return training.samplesPerScenario ?? ALGORITHM_TRAITS[training.algorithm].defaultSamplesPerScenario;
}

/** Sizes that Temporal could not carry are rejected here, with the limit they would pass. */
export function checkTemporalLimits(config: ConfigShape, ctx: z.RefinementCtx): void {
  const tokens = { policyMaxTokens: config.policy.maxTokens, simulatorMaxTokens: config.simulator.maxTokens };
  const dialogues = [
    { turnsKey: 'rollout.maxTurns', maxTurns: config.rollout.maxTurns, path: ['rollout', 'maxTurns'] },
    { turnsKey: 'training.maxTurns', maxTurns: config.training.maxTurns, path: ['training', 'maxTurns'] },
    { turnsKey: 'evaluation.maxTurns', maxTurns: config.evaluation.maxTurns, path: ['evaluation', 'maxTurns'] },
  ];
  for (const { path, ...size } of dialogues) {
    const problem = dialogueSizeProblem({ ...size, ...tokens });
    if (problem) ctx.addIssue({ code: 'custom', path, message: problem });
  }
  const samples = samplesPerScenarioOf(config.training);
  const step = stepSizeProblem(config.training.scenariosPerStep, samples);
  if (step) ctx.addIssue({ code: 'custom', path: ['training', 'scenariosPerStep'], message: step });
}

/** The rollouts of a step sample a checkpoint `maxStaleness` steps old while the next one commits: it must be kept. */
export function checkKeptCheckpoints(
  config: { training: { maxStaleness: number; hyperparameters: { keep_checkpoints?: number | undefined } } },
  ctx: z.RefinementCtx,
): void {
  const kept = config.training.hyperparameters.keep_checkpoints ?? 0;
  const staleness = config.training.maxStaleness;
  if (staleness > 0 && kept > 0 && kept <= staleness)
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'hyperparameters', 'keep_checkpoints'],
      message: `${kept} is too few for training.maxStaleness ${staleness}: keep at least ${staleness + 1} (or 0, all)`,
    });
}

/**
 * vLLM loads LoRA adapters only: publishing to it needs a LoRA run whose rank the server accepts.
 * A full fine-tuning run exports a whole model directory, which `load_lora_adapter` refuses.
 */
export function checkVllmPublish(
  config: { policy: { maxLoraRank: number }; training: { publish: string; lora: { r: number } | null } },
  ctx: z.RefinementCtx,
): void {
  const { publish, lora } = config.training;
  if (publish !== 'vllm') return;
  if (lora === null)
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'lora'],
      message:
        "training.publish: vllm loads each step's LoRA adapter into vLLM, so it needs training.lora " +
        '(e.g. training.lora.r=16); for full fine-tuning set training.publish: trainer',
    });
  else if (lora.r > config.policy.maxLoraRank)
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'lora', 'r'],
      message:
        `training.lora.r ${lora.r} is above policy.maxLoraRank ${config.policy.maxLoraRank} (the vLLM server's ` +
        `--max-lora-rank), so vLLM would refuse every adapter: lower training.lora.r, or start vLLM with ` +
        `--max-lora-rank ${lora.r} and set policy.maxLoraRank to match`,
    });
}

/** Replica names are unique: each names its publish queue and the run's waits. */
export function checkReplicas(
  config: { policy: { replicas?: { name: string }[] | undefined } },
  ctx: z.RefinementCtx,
): void {
  const seen = new Set<string>();
  (config.policy.replicas ?? []).forEach((replica, i) => {
    if (seen.has(replica.name))
      ctx.addIssue({
        code: 'custom',
        path: ['policy', 'replicas', i, 'name'],
        message: `replica name "${replica.name}" is used twice: each replica has its own publish queue`,
      });
    seen.add(replica.name);
  });
}
