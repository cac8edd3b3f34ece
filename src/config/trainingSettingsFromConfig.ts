import { join, resolve } from 'node:path';
import type { TrackingSettings } from '../core/tracking/trackingSettings.js';
import { REPO_ROOT } from '../paths.js';
import { trainingSettingsSchema, type TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import { requireScenarioLibrary } from '../scenarios/library.js';
import { capabilitySuiteRun } from './capabilitySuiteRun.js';
import { buildEvaluationInput } from './evaluationInputFromConfig.js';
import { rolloutSettingsFromConfig } from './rolloutSettingsFromConfig.js';
import { samplesPerScenarioOf } from './crossFieldChecks.js';
import type { AttuneConfig } from './schema.js';
import { publishQueueFor, taskQueuesFor } from './taskQueues.js';

/** The training workflow's input, built and checked on the client (scenarios, endpoints, evaluation set). */
export function trainingSettingsFromConfig(config: AttuneConfig, runName: string): TrainingSettings {
  const t = config.training;
  const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
  // Fail early, on the operator's terminal, if the train split is broken.
  if (requireScenarioLibrary(config.scenarios.train).length === 0)
    throw new Error(`scenarios.train: no scenarios in ${config.scenarios.train}; a run needs at least one to train on`);
  const trainerV1 = `${config.trainer.url.replace(/\/$/, '')}/v1`;
  const replicas = t.publish.mode === 'vllm' ? replicasOf(config) : undefined;
  const policyBaseURL = t.publish.mode === 'trainer' ? trainerV1 : (replicas?.[0]?.baseURL ?? config.policy.baseURL);
  // Full fine-tuning on vLLM: vLLM serves one set of weights under the model's own name, labelled
  // with a weight version; step 0 is the trainer's base model (reloaded when vLLM holds other weights).
  const fullWeights = t.publish.mode === 'vllm' && t.lora === null;
  const baseVersion = t.publish.mode === 'trainer' || fullWeights ? `${runName}@0` : config.policy.model;
  const sampledModel = fullWeights ? config.policy.model : baseVersion;
  const weightVersion = fullWeights ? { weightVersion: baseVersion } : {};
  // vLLM loses runtime-loaded adapters when it restarts: the policy calls load a lost version again
  // from the trainer's local path (single host). Replicas get theirs from their publishers; a call
  // that finds its version missing on one goes to the next replica.
  // Full weights over NCCL (`publish.transport: nccl`): sent by the trainer, reloaded the same way.
  const nccl = fullWeights && t.publish.transport === 'nccl' && t.publish.nccl ? t.publish.nccl : undefined;
  const reloadFrom =
    t.publish.mode === 'vllm' && !replicas
      ? {
          reloadFrom: {
            runName,
            trainerUrl: config.trainer.url,
            tokenEnv: config.trainer.tokenEnv,
            ...(nccl ? { nccl } : {}),
          },
        }
      : {};
  const spread = replicas && replicas.length > 1 ? { replicas: replicas.map((r) => r.baseURL) } : {};
  const configured = rolloutSettingsFromConfig(
    { ...config, policy: { ...config.policy, baseURL: policyBaseURL, model: sampledModel } },
    t.dialogue,
  );
  const extras = { ...reloadFrom, ...spread, ...weightVersion };
  // In-flight updates: rollouts take any version from their step's on (withServedWeights); evaluations ask for theirs.
  const inFlight = fullWeights && t.maxStaleness > 0 ? { acceptNewerWeights: true as const } : {};
  const rollout = { ...configured, policy: { ...configured.policy, ...extras, ...inFlight } };
  const { evalScenarios, evalSettings, evalSimulators } = runEvaluations(config, policyBaseURL, sampledModel, extras);
  const tracking = trackingSettingsFromConfig(config);
  return trainingSettingsSchema.parse({
    runName,
    algorithm: t.algorithm,
    steps: t.steps,
    scenariosPerStep: t.scenariosPerStep,
    samplesPerScenario: samplesPerScenarioOf(t),
    seed: t.seed,
    maxInFlight: t.maxInFlight,
    maxFailedShare: t.maxFailedShare,
    maxStaleness: t.maxStaleness,
    ...(t.stepDialogues !== 'planned'
      ? { stepDialogues: t.stepDialogues, dialogueWatchSeconds: t.dialogueWatchSeconds }
      : {}),
    credit: t.credit,
    guardrails: t.guardrails,
    ...(t.difficultyMix ? { difficultyMix: t.difficultyMix } : {}),
    scenarioDir: resolve(config.scenarios.train),
    rollout,
    trainer: {
      url: config.trainer.url,
      tokenEnv: config.trainer.tokenEnv,
      baseModel: t.baseModel,
      lora: t.lora,
      hyperparameters: trainerHyperparameters(t),
      optimizerTaskQueue: queues.optimizer,
      ...t.trainer,
    },
    publish: {
      mode: t.publish.mode,
      ...(fullWeights ? { weights: 'full' } : {}),
      ...(nccl ? { transport: 'nccl', nccl } : {}),
      policyBaseURL,
      baseVersion,
      keep: t.publish.keep,
      ...(replicas ? replicaPublishOf(replicas, t.publish) : {}),
    },
    evalEvery: t.evalEvery,
    evalScenarioDir: resolve(config.scenarios.eval),
    evalScenarios,
    ...(evalSettings ? { evalSettings } : {}),
    ...(evalSimulators ? { evalSimulators } : {}),
    evalConcurrency: config.evaluation.concurrency,
    ...(t.evalSuites.length > 0 ? { evalSuites: t.evalSuites.map((suite) => capabilitySuiteRun(suite)) } : {}),
    ...(tracking ? { tracking } : {}),
  });
}

/**
 * The trainer's hyperparameters: the config's own, `training.snapshotEvery` as `snapshot_every`, and
 * `export_keep`, the steps whose weights the trainer keeps on disk between its snapshots for what reads
 * them: a vLLM publish (the newest `publish.keep` versions, which a restarted vLLM loads again) and
 * rollouts that sample a version up to `maxStaleness` steps old (the NCCL send reads them too). On-policy
 * training served by the trainer needs none: it samples the live weights.
 */
export function trainerHyperparameters(t: AttuneConfig['training']): AttuneConfig['training']['hyperparameters'] {
  const own = t.hyperparameters;
  if (t.snapshotEvery !== undefined && own.snapshot_every !== undefined && own.snapshot_every !== t.snapshotEvery)
    throw new Error(
      `training.snapshotEvery (${t.snapshotEvery}) and training.hyperparameters.snapshot_every (${own.snapshot_every}) differ: set training.snapshotEvery only`,
    );
  const window = t.maxStaleness + 1;
  const exportKeep =
    t.publish.mode === 'vllm' ? Math.max(t.publish.keep ?? 1, window) : t.maxStaleness > 0 ? window : 0;
  return {
    ...own,
    ...(t.snapshotEvery !== undefined ? { snapshot_every: t.snapshotEvery } : {}),
    ...(exportKeep > 0 && own.export_keep === undefined ? { export_keep: exportKeep } : {}),
  };
}

/** The run's own evaluations (`training.evalEvery`): their scenarios, settings and held-out simulators; none when off. */
function runEvaluations(
  config: AttuneConfig,
  policyBaseURL: string,
  sampledModel: string,
  policyExtras: Partial<TrainingSettings['rollout']['policy']>,
): Pick<TrainingSettings, 'evalScenarios' | 'evalSettings' | 'evalSimulators'> {
  const t = config.training;
  if (t.evalEvery === 0) return { evalScenarios: [] };
  const evalInput = buildEvaluationInput(
    { ...config, trainer: { ...config.trainer, policyBaseURL } },
    { split: 'eval', policy: sampledModel, ...(t.evalScenarios ? { only: t.evalScenarios } : {}) },
  );
  return {
    evalScenarios: evalInput.scenarios,
    evalSimulators: evalInput.simulators,
    evalSettings: {
      ...evalInput.settings,
      think: t.dialogue.think,
      policy: { ...evalInput.settings.policy, ...policyExtras },
    },
  };
}

/** The replicas a run publishes to (`policy.replicas`), each with its publish queue; undefined without them. */
export function replicasOf(config: AttuneConfig): TrainingSettings['publish']['replicas'] {
  const prefix = config.temporal.taskQueuePrefix;
  return config.policy.replicas?.map((r) => ({
    name: r.name,
    baseURL: r.baseURL,
    taskQueue: r.publishTaskQueue ?? publishQueueFor(prefix, r.name),
  }));
}

/** The trackers a run logs to, or null for none (W&B's mode resolved here, where the operator's environment is). */
export function trackingSettingsFromConfig(
  config: AttuneConfig,
  env: NodeJS.ProcessEnv = process.env,
): TrackingSettings | null {
  const { mlflow, tensorboard, wandb } = config.tracking;
  const wandbMode = wandb ? (wandb.mode ?? (env.WANDB_API_KEY ? 'online' : 'offline')) : 'disabled';
  const settings: TrackingSettings = {
    ...(mlflow ? { mlflow } : {}),
    ...(tensorboard ? { tensorboard: true } : {}),
    ...(wandb && wandbMode !== 'disabled'
      ? {
          wandb: {
            project: wandb.project,
            mode: wandbMode,
            python: resolve(wandb.python ?? join(REPO_ROOT, '.venv', 'bin', 'python')),
          },
        }
      : {}),
  };
  return Object.keys(settings).length > 0 ? settings : null;
}

/** A replicated run's publish settings: its replicas, how long each publisher may take to pick a publish up, and whether they are updated in turn. */
function replicaPublishOf(
  replicas: NonNullable<TrainingSettings['publish']['replicas']>,
  publish: AttuneConfig['training']['publish'],
): Pick<TrainingSettings['publish'], 'replicas' | 'publisherWaitMs' | 'replicaUpdates'> {
  return {
    replicas,
    publisherWaitMs: publish.publisherWaitMs,
    ...(publish.replicaUpdates === 'inTurn' ? { replicaUpdates: 'inTurn' as const } : {}),
  };
}
