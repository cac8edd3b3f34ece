import { z } from 'zod';
import { STEP_DIALOGUES } from './dialogueStreamState.js';
import { FULL_WEIGHTS_TRANSPORTS, ncclRendezvousSchema } from './fullWeightsTransport.js';
import { NAME_PATTERN, NAME_RULE } from '../names.js';
import { capabilitySuiteRunSchema } from '../capability/capabilityReport.js';
import { rolloutSettingsSchema } from '../rolloutSettingsSchema.js';
import { goalTypeSchema, personalitySchema } from '../scenario.js';
import { trackingSettingsSchema } from '../tracking/trackingSettings.js';
import { ALGORITHMS } from './algorithms.js';
import { creditSettingsSchema } from './creditSchema.js';
import { difficultyMixSchema } from './difficultyMixSchema.js';
import { guardrailSchema } from './guardrailSchema.js';
import { trainerHyperparametersSchema, trainerLoraSchema } from './trainerSettings.generated.js';

const TRAINER_MAX_SEED = 2 ** 31 - 1;

/** `trainer.retry`: the waits between attempts at one optimizer step (optimizerRetry.ts). */
export const optimizerRetrySchema = z.strictObject({
  initialIntervalMs: z.number().int().positive().max(3_600_000),
  maximumIntervalMs: z.number().int().positive().max(3_600_000),
});

/** Trainer hyperparameters (the trainer's own names), generated from the trainer's models. */
export const hyperparametersSchema = trainerHyperparametersSchema;
export type Hyperparameters = z.infer<typeof hyperparametersSchema>;

/** The trainer's LoRA spec; the config's default targets every linear layer. */
export const loraSchema = trainerLoraSchema.extend({
  target_modules: z.union([z.array(z.string()).min(1), z.literal('all-linear')]).default('all-linear'),
});
export type LoraSpec = z.infer<typeof loraSchema>;

/** A replica's name: it names its publish queue (`attune-publish-<name>`) and shows in status. */
export const REPLICA_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** Which replicas a step's full weights go to: `every` one (the step published once all serve it), or one `inTurn`. */
export const REPLICA_UPDATES = ['every', 'inTurn'] as const;
export type ReplicaUpdates = (typeof REPLICA_UPDATES)[number];

/** One vLLM replica a run publishes each step to, through the publisher worker on its queue. */
export const replicaSchema = z.strictObject({
  name: z.string().regex(REPLICA_NAME_PATTERN, 'letters, digits, `.`, `_`, `-`; at most 63; not starting with a sign'),
  /** The replica's OpenAI base URL (…/v1), as the LLM workers reach it. */
  baseURL: z.string().url(),
  /** The queue its publisher worker polls. */
  taskQueue: z.string().min(1),
});
export type Replica = z.infer<typeof replicaSchema>;

/** Everything the training workflow needs, without secrets. */
export const trainingSettingsSchema = z.strictObject({
  runName: z.string().regex(NAME_PATTERN, NAME_RULE),
  algorithm: z.enum(ALGORITHMS),
  steps: z.number().int().min(1),
  scenariosPerStep: z.number().int().min(1),
  samplesPerScenario: z.number().int().min(1).max(64),
  /** The trainer seeds its generators with it and takes values below 2^31. */
  seed: z.number().int().min(0).max(TRAINER_MAX_SEED),
  maxInFlight: z
    .number()
    .int()
    .min(1)
    .max(
      1000,
      'at most 1000: each rollout in flight is a pending child workflow, and Temporal allows 2,000 per workflow',
    ),
  maxFailedShare: z.number().min(0).max(1),
  /**
   * 0: a step's rollouts start once the previous step's weights are published. 1 or more: they run
   * while the optimizer trains the previous step, sampling from the version one step older.
   * Absent in runs started before it existed (0).
   */
  maxStaleness: z
    .number()
    .int()
    .min(0)
    .max(8, 'at most 8: the samples of older versions get importance weights that carry little signal')
    .optional(),
  /** How a step gathers its dialogues (dialogueStream.ts); absent in older runs: `planned`. */
  stepDialogues: z.enum(STEP_DIALOGUES).optional(),
  /**
   * First-finished steps: how long no dialogue may end before the run asks the server which of its
   * dialogues closed without telling; absent in older runs: LIMITS.dialogueWatchMs.
   */
  dialogueWatchSeconds: z.number().min(1).max(3600).optional(),
  /** How the reward is shared over a dialogue's turns (credit.ts); absent in older runs: `final`. */
  credit: creditSettingsSchema.optional(),
  /** Rules over each step's signals that warn or make the run wait for the operator (guardrails.ts); absent: none. */
  guardrails: z.array(guardrailSchema).max(32).optional(),
  /**
   * The simulator levels of the training dialogues, by step (difficultyMix.ts); absent (and in runs
   * started before levels): every dialogue at rollout.simulator.difficulty. A scenario's own level wins.
   */
  difficultyMix: difficultyMixSchema.optional(),
  scenarioDir: z.string().min(1),
  /** Rollout settings; policy.model is replaced by the version of each step. */
  rollout: rolloutSettingsSchema,
  trainer: z.strictObject({
    url: z.string().url(),
    tokenEnv: z.string(),
    baseModel: z.string().min(1),
    lora: loraSchema.nullable(),
    hyperparameters: hyperparametersSchema,
    optimizerTaskQueue: z.string().min(1),
    /** How long one optimizer step may take (hours-long steps on big models). */
    stepTimeoutMs: z.number().int().positive(),
    heartbeatTimeoutMs: z.number().int().positive(),
    /**
     * Attempts at one step that the trainer answers with the same server error, in a row, before
     * the run waits for the operator with that error (sameTrainerError.ts). Absent in runs started
     * before it existed (DEFAULT_SAME_ERROR_ATTEMPTS).
     */
    sameErrorAttempts: z.number().int().min(1).max(1000).optional(),
    /**
     * Waits between attempts at one optimizer step: the first, and the longest the doubling reaches.
     * Absent in runs started before it could be set (OPTIMIZER_RETRY).
     */
    retry: optimizerRetrySchema.optional(),
  }),
  publish: z.strictObject({
    /** `trainer`: sample `run@step` from the trainer's OpenAI endpoint; `vllm`: load each step's LoRA adapter into vLLM. */
    mode: z.enum(['trainer', 'vllm']),
    /**
     * vLLM: `lora` loads each step's adapter under the name `run@step`; `full` reloads the served
     * model's weights in place from the step's checkpoint and labels them `run@step` (vLLM's weight
     * version). Absent in runs started before full-weight publishing (lora).
     */
    weights: z.enum(['lora', 'full']).optional(),
    /**
     * Full weights: how they reach vLLM (FULL_WEIGHTS_TRANSPORTS). Absent: `checkpoint` (and in runs
     * started before there was a choice).
     */
    transport: z.enum(FULL_WEIGHTS_TRANSPORTS).optional(),
    /** `transport: nccl`: the group of the trainer's rank 0 and vLLM's workers. */
    nccl: ncclRendezvousSchema.optional(),
    /** OpenAI base URL the versions are served from. */
    policyBaseURL: z.string().url(),
    /** Version used before the first update (the base model's name on that server). */
    baseVersion: z.string().min(1),
    /**
     * vLLM: how many of the run's newest versions stay loaded after a publish (at least
     * `maxStaleness + 1` are); older ones are unloaded. Absent in runs started before unloading.
     */
    keep: z.number().int().min(1).max(1000).optional(),
    /**
     * vLLM: the replicas each step is published to, one publish activity each on its publisher's queue;
     * a step is published once every replica serves it. Absent (single host, and runs started before
     * replicas): the artifacts queue's worker loads the trainer's local adapter path into policyBaseURL.
     */
    replicas: z.array(replicaSchema).min(1).max(64).optional(),
    /** How long a replica's publish waits for its publisher worker to pick it up before the run waits for the operator. */
    publisherWaitMs: z.number().int().min(1000).max(86_400_000).optional(),
    /**
     * Full weights with in-flight updates on two or more replicas: `inTurn` publishes each step to one
     * replica (replicaInTurn), so the others keep serving while it reloads. Absent: `every` replica.
     */
    replicaUpdates: z.enum(REPLICA_UPDATES).optional(),
  }),
  evalEvery: z.number().int().min(0),
  evalScenarioDir: z.string().min(1),
  evalScenarios: z.array(z.strictObject({ id: z.string(), goalType: goalTypeSchema, personality: personalitySchema })),
  evalSettings: rolloutSettingsSchema.optional(),
  /** Held-out simulators each evaluation also scores with (`evaluation.simulators`); absent: none. */
  evalSimulators: z
    .array(z.strictObject({ name: z.string().min(1), simulator: rolloutSettingsSchema.shape.simulator }))
    .min(1)
    .optional(),
  evalConcurrency: z.number().int().min(1),
  /** Capability suites each evaluation also scores, the base once before step 1 (`training.evalSuites`); absent: none. */
  evalSuites: z.array(capabilitySuiteRunSchema).min(1).optional(),
  /** Experiment trackers (absent: none, as in runs started before trackers existed). */
  tracking: trackingSettingsSchema.optional(),
});
export type TrainingSettings = z.infer<typeof trainingSettingsSchema>;
