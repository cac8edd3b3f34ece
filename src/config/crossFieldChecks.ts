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
  rollout: { dialogue: { maxTurns: number } };
  training: {
    dialogue: { maxTurns: number };
    scenariosPerStep: number;
    samplesPerScenario?: number | undefined;
    algorithm: Algorithm;
  };
  evaluation: { dialogue: { maxTurns: number } };
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
  const dialogues = (['rollout', 'training', 'evaluation'] as const).map((section) => ({
    turnsKey: `${section}.dialogue.maxTurns`,
    maxTurns: config[section].dialogue.maxTurns,
    path: [section, 'dialogue', 'maxTurns'],
  }));
  for (const { path, ...size } of dialogues) {
    const problem = dialogueSizeProblem({ ...size, ...tokens });
    if (problem) ctx.addIssue({ code: 'custom', path, message: problem });
  }
  const samples = samplesPerScenarioOf(config.training);
  const step = stepSizeProblem(config.training.scenariosPerStep, samples);
  if (step) ctx.addIssue({ code: 'custom', path: ['training', 'scenariosPerStep'], message: step });
}

/** What `training.maxStaleness` must allow: the checkpoints it samples kept, and steps that take the first finished. */
export function checkStaleness(
  config: {
    training: {
      maxStaleness: number;
      stepDialogues: string;
      hyperparameters: { keep_checkpoints?: number | undefined };
    };
  },
  ctx: z.RefinementCtx,
): void {
  checkKeptCheckpoints(config, ctx);
  checkStepDialogues(config, ctx);
}

/** The rollouts of a step sample a checkpoint `maxStaleness` steps old while the next one commits: it must be kept. */
function checkKeptCheckpoints(
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
 * Steps that take the first finished dialogues carry the others to later steps, which train on
 * them one or more versions stale: with `maxStaleness` 0 every carried dialogue would be dropped.
 */
function checkStepDialogues(
  config: { training: { maxStaleness: number; stepDialogues: string } },
  ctx: z.RefinementCtx,
): void {
  if (config.training.stepDialogues === 'firstFinished' && config.training.maxStaleness < 1)
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'stepDialogues'],
      message:
        'firstFinished needs training.maxStaleness 1 or more: the dialogues a step does not take are trained on by a later step, one or more versions stale',
    });
}

/**
 * Publishing to vLLM: a LoRA run loads its adapters, whose rank the server must accept. A full
 * fine-tuning run reloads vLLM's weights in place, one version at a time: with `maxStaleness` 0 a
 * step's dialogues wait for the reload; with 1 or more the reload lands while the next step's
 * dialogues run (in-flight updates: their calls take any version from the one the step started on,
 * record the one vLLM served, and a call that straddled the reload is asked again; see
 * servedWeights.ts). The checkpoints that window samples are kept (checkKeptCheckpoints, and
 * trainerHyperparameters' `export_keep`). On `policy.replicas` each replica's publisher fetches and
 * reloads them.
 */
export function checkVllmPublish(
  config: {
    policy: { maxLoraRank: number };
    training: { publish: { mode: string }; lora: { r: number } | null };
  },
  ctx: z.RefinementCtx,
): void {
  const { publish, lora } = config.training;
  if (publish.mode !== 'vllm' || lora === null) return;
  if (lora.r > config.policy.maxLoraRank)
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'lora', 'r'],
      message:
        `training.lora.r ${lora.r} is above policy.maxLoraRank ${config.policy.maxLoraRank} (the vLLM server's ` +
        `--max-lora-rank), so vLLM would refuse every adapter: lower training.lora.r, or start vLLM with ` +
        `--max-lora-rank ${lora.r} and set policy.maxLoraRank to match`,
    });
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * Warnings about a config that loads but is unsafe. Full-weight publishing needs vLLM's dev mode,
 * whose `/collective_rpc` runs any worker method: such a vLLM must take requests only with its API
 * key, or only on loopback.
 */
export function configWarnings(
  config: { policy: { baseURL: string; apiKeyEnv: string }; training: { publish: { mode: string }; lora: unknown } },
  env: NodeJS.ProcessEnv,
): string[] {
  if (config.training.publish.mode !== 'vllm' || config.training.lora !== null) return [];
  let host: string;
  try {
    host = new URL(config.policy.baseURL).hostname;
  } catch {
    return [];
  }
  if (LOOPBACK_HOSTS.has(host) || host.startsWith('127.') || (env[config.policy.apiKeyEnv] ?? '') !== '') return [];
  return [
    `policy.baseURL ${config.policy.baseURL} is not a loopback address and $${config.policy.apiKeyEnv} is empty: ` +
      'full-weight publishing needs vLLM in dev mode (VLLM_SERVER_DEV_MODE=1), whose /collective_rpc runs any ' +
      'worker method for whoever reaches it; start that vLLM with --api-key on a private interface and set ' +
      `$${config.policy.apiKeyEnv} (see SECURITY.md)`,
  ];
}

/** Replica names are unique: each names its publish queue and the run's waits. And how they are updated fits them. */
export function checkReplicas(
  config: { policy: { replicas?: { name: string }[] | undefined } } & Parameters<typeof checkReplicaUpdates>[0],
  ctx: z.RefinementCtx,
): void {
  checkReplicaUpdates(config, ctx);
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

/**
 * `training.publish.replicaUpdates: inTurn` leaves all replicas but one on older versions while a step
 * is published: only calls that take newer versions (full weights, `maxStaleness` 1 or more) can use
 * them, and only with two replicas or more is one left serving.
 */
function checkReplicaUpdates(
  config: {
    policy: { replicas?: unknown[] | undefined };
    training: { maxStaleness: number; lora: unknown; publish: { mode: string; replicaUpdates: string } };
  },
  ctx: z.RefinementCtx,
): void {
  const t = config.training;
  if (t.publish.replicaUpdates !== 'inTurn') return;
  const problem =
    (config.policy.replicas ?? []).length < 2
      ? 'inTurn needs policy.replicas with two or more replicas: one keeps serving while another reloads'
      : t.publish.mode !== 'vllm' || t.lora !== null
        ? 'inTurn is for full weights published to vLLM (training.publish.mode: vllm, no training.lora): LoRA adapters load beside the served ones without a reload'
        : t.maxStaleness < 1
          ? 'inTurn needs training.maxStaleness 1 or more: with 0 each call asks for one version, which only the replica updated last would serve'
          : null;
  if (problem) ctx.addIssue({ code: 'custom', path: ['training', 'publish', 'replicaUpdates'], message: problem });
}

/**
 * `training.publish.transport: nccl` sends a full fine-tuning step's weights from the trainer's
 * rank 0 to vLLM's workers: it needs full weights published to one vLLM (not a LoRA adapter, not
 * the trainer's own sampler, not replicas) and the rendezvous where the two meet.
 */
export function checkPublishTransport(
  config: {
    policy: { replicas?: unknown[] | undefined };
    training: { publish: { mode: string; transport: string; nccl?: unknown }; lora: unknown };
  },
  ctx: z.RefinementCtx,
): void {
  const { publish, lora } = config.training;
  if (publish.transport !== 'nccl') return;
  if ((config.policy.replicas ?? []).length > 0)
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'publish', 'transport'],
      message:
        "nccl sends the trainer's weights to one vLLM (policy.baseURL); on policy.replicas each replica's publisher " +
        'fetches them from the trainer and reloads its own vLLM: use transport: checkpoint, or drop policy.replicas',
    });
  const needs =
    "NCCL sends full weights from the trainer's rank 0 on a CUDA GPU (vLLM installed beside it) to a vLLM on GPUs " +
    `started with VLLM_SERVER_DEV_MODE=1 and --weight-transfer-config '{"backend": "nccl"}' (docs/training.md)`;
  const refuse = (path: string[], message: string) =>
    ctx.addIssue({ code: 'custom', path, message: `${message}; ${needs}` });
  if (lora !== null)
    refuse(
      ['training', 'publish', 'transport'],
      'nccl sends full weights, and this run trains a LoRA adapter (training.lora): use transport: checkpoint (adapters are loaded by name), or drop training.lora',
    );
  else if (publish.mode !== 'vllm')
    refuse(
      ['training', 'publish', 'transport'],
      'nccl sends full weights into vLLM: set training.publish.mode: vllm, or use transport: checkpoint',
    );
  if (publish.nccl === undefined)
    refuse(
      ['training', 'publish', 'nccl'],
      "transport: nccl needs training.publish.nccl.address and .port: the trainer's rank-0 host and a port the vLLM hosts reach",
    );
}
