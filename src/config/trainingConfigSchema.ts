import { z } from 'zod';
import { RLVER_TRAINING_INITIAL_EMOTION } from '../core/emotion.js';
import { ALGORITHMS } from '../core/training/algorithms.js';
import { CAPABILITY_SUITES } from '../core/capability/capabilitySuites.js';
import { creditSettingsSchema } from '../core/training/creditSchema.js';
import { DEFAULT_GUARDRAILS } from '../core/training/guardrails.js';
import { STEP_DIALOGUES } from '../core/training/dialogueStreamState.js';
import { DEFAULT_SAME_ERROR_ATTEMPTS } from '../core/training/sameTrainerError.js';
import { dialogueGroup } from './dialogueGroup.js';
import { LIMITS } from './limits.js';
import { OPTIMIZER_RETRY } from '../core/training/optimizerRetry.js';
import {
  hyperparametersSchema,
  loraSchema,
  optimizerRetrySchema,
  trainingSettingsSchema,
} from '../core/training/trainingSettingsSchema.js';

/** Bounds of the training fields come from the workflow input's schema, so config and workflow agree. */
const trainingBounds = trainingSettingsSchema.shape;

const publishBounds = trainingBounds.publish.shape;

/** `training.publish`: how each step's weights reach the policy server; the workflow input's fields it sets. */
const publishConfigSchema = z
  .strictObject({
    mode: publishBounds.mode
      .default('trainer')
      .describe(
        '`trainer`: versions are served by the trainer itself; `vllm`: LoRA adapters (or full weights, without `training.lora`) loaded into the vLLM policy server (policy.baseURL).',
      ),
    keep: publishBounds.keep
      .unwrap()
      .default(2)
      .describe(
        "With `mode: vllm`: the run's newest versions kept loaded in vLLM after each publish (at least maxStaleness + 1); older adapters are unloaded so vLLM's table stays bounded.",
      ),
    publisherWaitMs: publishBounds.publisherWaitMs
      .unwrap()
      .default(LIMITS.publisherWaitMs)
      .describe(
        "With `policy.replicas`: how long a step's publish to a replica waits for that replica's publisher worker to take it; then the run waits for the operator, naming the replica.",
      ),
    transport: publishBounds.transport
      .unwrap()
      .default('checkpoint')
      .describe(
        "Full weights with `mode: vllm`: `checkpoint` reloads each step's checkpoint directory in place (any vLLM, CPU included); `nccl` has the trainer's rank 0 broadcast them with vLLM's native weight transfer (GPU hosts; set-up and vLLM flags in docs/training.md).",
      ),
    nccl: publishBounds.nccl,
    replicaUpdates: publishBounds.replicaUpdates
      .unwrap()
      .default('every')
      .describe(
        'Full weights on `policy.replicas` with `maxStaleness` 1 or more: `every` publishes each step to every replica (the step is published once all serve it; they all reload at once); `inTurn` publishes step k to replica k mod N only, so the others serve older versions within the bound while it reloads, and each call goes to a replica that serves a version it takes and is not reloading.',
      ),
  })
  .prefault({})
  .describe("How each step's weights reach the policy server that samples the next step.");

/** The config's `training` section: an RLVER training run. */
export const trainingConfigSchema = z
  .strictObject({
    algorithm: z.enum(ALGORITHMS).default('grpo').describe('The policy-gradient algorithm the trainer applies.'),
    steps: trainingBounds.steps.default(100).describe('Optimizer steps of the run.'),
    scenariosPerStep: trainingBounds.scenariosPerStep
      .default(8)
      .describe(
        'Scenarios per step; dialogues per step = scenariosPerStep x samplesPerScenario (paper: 32 dialogues).',
      ),
    samplesPerScenario: trainingBounds.samplesPerScenario
      .optional()
      .describe("Default: the algorithm's (ALGORITHM_TRAITS: 4 for GRPO, 1 for PPO)."),
    seed: trainingBounds.seed
      .default(1)
      .describe("The run's seed: scenario order, dialogue seeds, the trainer's generators."),
    maxInFlight: trainingBounds.maxInFlight
      .default(64)
      .describe("Rollouts in flight at once (far below Temporal's 2,000 pending children per workflow)."),
    maxFailedShare: trainingBounds.maxFailedShare
      .default(0.25)
      .describe(
        'A step whose failed-rollout share exceeds this waits for an operator instead of training on too little.',
      ),
    maxStaleness: trainingBounds.maxStaleness
      .unwrap()
      .default(0)
      .describe(
        "0: on-policy, each step's rollouts wait for the previous step's weights. 1 or more: the next step's rollouts overlap the optimizer step, sampling from a version at most this many steps old (full weights in vLLM: the publish reloads vLLM under the dialogues in flight, and each turn records the version that sampled it).",
      ),
    stepDialogues: z
      .enum(STEP_DIALOGUES)
      .default('planned')
      .describe(
        '`planned`: each step runs its scenariosPerStep x samplesPerScenario dialogues and waits for the slowest. `firstFinished` (needs maxStaleness 1 or more): up to maxInFlight dialogues run all the time (none started that no step within the staleness bound could take), each step trains on the first whole groups to finish (at least scenariosPerStep x samplesPerScenario dialogues), and the rest run on for the next step; a dialogue whose weights fall below the staleness bound is dropped (cancelled if still running), counted and reported, never trained on.',
      ),
    dialogueWatchSeconds: trainingBounds.dialogueWatchSeconds
      .unwrap()
      .default(LIMITS.dialogueWatchMs / 1000)
      .describe(
        'firstFinished: when no dialogue has ended for this long, the run asks the Temporal server which of its dialogues in flight closed without telling it (terminated by hand, timed out) and counts them failed.',
      ),
    credit: creditSettingsSchema
      .prefault({})
      .describe("How a dialogue's reward is shared over its assistant turns (RLVER: `final`)."),
    guardrails: trainingBounds.guardrails
      .unwrap()
      .default(DEFAULT_GUARDRAILS)
      .describe(
        "Rules over each step's signals (reply length, empty share, repetition, distinct bigrams, malformed share, reward, eval change, the held-out simulators' scores): `warn` shows in status, the report and the trackers, `pause` waits for the operator (`attune resume` goes on). [] turns them off.",
      ),
    dialogue: dialogueGroup(
      { initialEmotion: RLVER_TRAINING_INITIAL_EMOTION, maxTurns: 8 },
      "The run's dialogues: RLVER's training simulator by default (its evaluations keep `evaluation.dialogue`, with this `think`).",
    ),
    difficultyMix: trainingBounds.difficultyMix.describe(
      "Simulator levels of the training dialogues (absent: every one at `simulator.difficulty`): phases, the first `fromStep: 1`, each with the share of each level, summing to 1. Each step's scenario groups get the levels in those shares, from the run's seed alone (a GRPO group's samples share one level); a scenario's own `difficulty` wins. A constant mix: `[{ fromStep: 1, simple: 0.2, normal: 0.5, hard: 0.3 }]`; a curriculum: `[{ fromStep: 1, simple: 1 }, { fromStep: 50, normal: 1 }]`. The run's evaluations keep `simulator.difficulty`.",
    ),
    evalEvery: trainingBounds.evalEvery
      .default(0)
      .describe('Evaluate every k steps with the evaluation workflow (0 = never).'),
    evalScenarios: z
      .array(z.string())
      .optional()
      .describe('Scenario ids of the eval split to evaluate on (default: all).'),
    evalSuites: z
      .array(z.enum(CAPABILITY_SUITES))
      .refine((suites) => new Set(suites).size === suites.length, { message: 'a suite is listed twice' })
      .default([])
      .describe(
        "Capability suites (`math`, `code`: `attune eval --suite`) that each evaluation also scores on the same version, and on the base policy once before step 1; each suite's score, 95 % interval and problem count go in the step's record beside the Sentient score (capability retention; guardrail kind `capabilityDrop`). Needs `evalEvery` above 0.",
      ),
    baseModel: z
      .string()
      .min(1)
      .default('tiny-random')
      .describe(
        "The trainer's base model: the built-in 'tiny-random' or 'smollm2-135m', or a model directory or .gguf file inside the trainer's --models-dir.",
      ),
    lora: loraSchema
      .nullable()
      .default(null)
      .describe('Train a LoRA adapter instead of the full weights; null = full.'),
    hyperparameters: hyperparametersSchema
      .prefault({})
      .describe("The trainer's hyperparameters, by the trainer's names."),
    snapshotEvery: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .describe(
        "Steps between the trainer's snapshots of the weights and AdamW states (its `snapshot_every`); the steps between are durable by the trainer's step log and replayed after a crash. Default: every step with `lora`, every 10 for full weights.",
      ),
    publish: publishConfigSchema,
    trainer: z
      .strictObject({
        stepTimeoutMs: trainingBounds.trainer.shape.stepTimeoutMs
          .default(6 * 3600 * 1000)
          .describe('How long one optimizer step may take.'),
        heartbeatTimeoutMs: trainingBounds.trainer.shape.heartbeatTimeoutMs
          .default(20_000)
          .describe("Heartbeat timeout of the optimizer activity: a dead worker's step moves on after it."),
        sameErrorAttempts: trainingBounds.trainer.shape.sameErrorAttempts
          .unwrap()
          .default(DEFAULT_SAME_ERROR_ATTEMPTS)
          .describe(
            'Attempts at one optimizer step that the trainer answers with the same server error, in a row, before the run waits for the operator with that error; a different error starts the count again.',
          ),
        retry: z
          .strictObject({
            initialIntervalMs: optimizerRetrySchema.shape.initialIntervalMs
              .default(OPTIMIZER_RETRY.initialIntervalMs)
              .describe('Wait before the second attempt at an optimizer step, in ms.'),
            maximumIntervalMs: optimizerRetrySchema.shape.maximumIntervalMs
              .default(OPTIMIZER_RETRY.maximumIntervalMs)
              .describe('Longest wait between attempts at an optimizer step, in ms (each wait doubles up to it).'),
          })
          .refine((r) => r.initialIntervalMs <= r.maximumIntervalMs, {
            message: 'initialIntervalMs must not exceed maximumIntervalMs',
          })
          .prefault({})
          .describe(
            'Waits between attempts at one optimizer step (no attempt limit: the trainer may be restarting; see sameErrorAttempts).',
          ),
      })
      .prefault({})
      .describe("The optimizer call's limits: the workflow input's `trainer` fields of the same names."),
  })
  .refine((t) => t.evalSuites.length === 0 || t.evalEvery > 0, {
    message: 'evalSuites run with the evaluations: set evalEvery above 0',
    path: ['evalSuites'],
  })
  .prefault({})
  .describe('An RLVER training run (`attune train`). Paper settings in configs/paper-*.yaml.');
