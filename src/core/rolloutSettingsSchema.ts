import { z } from 'zod';
import { simulatorDifficultySchema } from './difficultySchema.js';
import { ncclRendezvousSchema } from './training/fullWeightsTransport.js';
import type { DialogueKey, DialogueValues } from './dialogueKeys.js';
import { SAGE_INITIAL_EMOTION } from './emotion.js';
import { DEFAULT_MAX_WAIT_MINUTES } from './outageWait.js';

export const retryPolicySchema = z.strictObject({
  initialIntervalMs: z.number().int().positive().default(1000).describe('Wait before the first retry, in ms.'),
  backoffCoefficient: z.number().min(1).default(2).describe('Factor each later wait grows by.'),
  maximumIntervalMs: z.number().int().positive().default(60_000).describe('Longest wait between attempts, in ms.'),
  maximumAttempts: z
    .number()
    .int()
    .min(0)
    .default(8)
    .describe("Attempts in all; 0 = unlimited (Temporal's convention)."),
});
export type RetryPolicySettings = z.infer<typeof retryPolicySchema>;

/** Everything an LLM activity needs to reach an endpoint, minus the secret: the key is read from `apiKeyEnv` inside the activity. */
/**
 * One LLM call's endpoint and sampling options. A provider option is declared here once, with its help
 * text: the config's `policy` and `simulator` sections take every field not in ENDPOINT_CALL_INTERNAL
 * from this declaration (src/config/schema.ts), and the config's value reaches the call by name.
 */
export const endpointCallSchema = z.strictObject({
  baseURL: z.string().url().describe('OpenAI-compatible base URL of the endpoint (…/v1).'),
  model: z.string().min(1).describe('Model name sent with every request.'),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name')
    .describe(
      'Name of the variable holding the API key; activities read it there, so the key never enters workflow inputs, results or logs.',
    ),
  timeoutMs: z.number().int().positive().describe('HTTP timeout of one call, in ms.'),
  temperature: z.number().min(0).max(2).describe('Sampling temperature.'),
  topP: z.number().gt(0).max(1).optional().describe("Nucleus sampling's top_p; absent = the endpoint's default."),
  maxTokens: z.number().int().positive().describe('Most tokens one completion may have (`max_tokens`).'),
  taskQueue: z.string().min(1),
  retry: retryPolicySchema,
  /** Ask for the sampled token ids and their log-probs (policy only); absent = do not ask. */
  logprobs: z.boolean().optional(),
  /**
   * Policy of a run publishing to vLLM: a version `runName@step` vLLM says does not exist (it
   * restarted, or unloaded it) is loaded again from the trainer's checkpoint of that step and the
   * call made again. Absent: a missing model fails the call.
   */
  reloadFrom: z
    .strictObject({
      runName: z.string().min(1),
      trainerUrl: z.string().url(),
      tokenEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name'),
      /** Full weights sent over NCCL (`training.publish.transport: nccl`): the group to send them in. Absent: reloaded from the checkpoint. */
      nccl: ncclRendezvousSchema.optional(),
    })
    .optional(),
  /**
   * Policy of a full fine-tuning run on vLLM: the weight version (`runName@step`) the served model
   * must hold. Each call checks vLLM's `/weight_info` before and after (reloading the version from
   * the trainer's checkpoint when vLLM holds other weights) and its turn records the version.
   * Absent: the version is the model name (a LoRA adapter, the trainer's own versions).
   */
  weightVersion: z.string().min(1).optional(),
  /**
   * Full fine-tuning with in-flight updates (`training.maxStaleness` >= 1): `weightVersion` is the
   * oldest version the call may sample, and any newer version of the same run that vLLM serves (a
   * publish landed while the step's dialogues run) is taken as it is; the turn records the version
   * vLLM served. A call whose served version changed while it ran (it straddled a reload) is made
   * again, the same request, so every recorded reply was sampled by one version. Absent: vLLM must
   * serve `weightVersion` exactly.
   */
  acceptNewerWeights: z.literal(true).optional(),
  /**
   * The policy's vLLM replicas (`policy.replicas`): OpenAI base URLs serving the same versions, baseURL
   * among them. Each call goes to the one `replicaOrder` picks from its seed, the next ones when that
   * one is unreachable or lacks the version. Absent: baseURL alone.
   */
  replicas: z.array(z.string().url()).min(2).max(64).optional(),
});
export type EndpointCall = z.infer<typeof endpointCallSchema>;

/**
 * The call's fields that Attune sets itself (queues, retries, publishing's reload and version
 * labels) or that the config declares in another shape (`policy.logprobs`, `policy.replicas`):
 * not configured as they are.
 */
export const ENDPOINT_CALL_INTERNAL = {
  taskQueue: true,
  retry: true,
  logprobs: true,
  reloadFrom: true,
  weightVersion: true,
  acceptNewerWeights: true,
  replicas: true,
} as const;

export const structuredOutputModes = ['json_schema', 'json_object', 'none'] as const;

export const llmCallModes = ['activity', 'local'] as const;

/** One activity per LLM call, or one per dialogue turn (the policy's reply and the simulator's two calls). */
export const activityScopes = ['call', 'turn'] as const;

/** A dialogue's bounds, written once for the rollout settings and every config section that sets them. */
export const dialogueBounds = {
  initialEmotion: z.number().int().min(0).max(100),
  maxTurns: z.number().int().min(1).max(50),
  workflowTaskTimeoutMs: z.number().int().min(1000).max(120_000),
};

/** The simulator's own options, beside the endpoint call (config and rollout settings alike). */
export const simulatorOptionsSchema = z.strictObject({
  structuredOutput: z
    .enum(structuredOutputModes)
    .default('json_schema')
    .describe(
      'How the analysis call asks for structured output (`response_format`); plain JSON and labelled sections are accepted either way.',
    ),
  parseRetries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .default(2)
    .describe('New LLM calls allowed after an unparseable analysis before the rollout fails.'),
  // Not every hosted API accepts maxLength in strict schemas, so it is off unless set (the embedded
  // local model server sets it); analysis calls then ask for at least the tokens a whole object can take.
  analysisMaxChars: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Bound on each text field of the analysis (JSON-schema maxLength); absent = unbounded.'),
});

/** `think` as a section that falls back to another's declares it (`evaluation.dialogue.think`: default rollout.dialogue.think). */
export const dialogueThink = z.boolean();

/**
 * The settings of one dialogue, declared once with their help text: the rollout workflow's input
 * takes them, and so does the `dialogue` group of each config section that runs dialogues
 * (`rollout`, `training`, `evaluation`: src/config/dialogueGroup.ts), with its own defaults (SAGE's
 * protocol, RLVER's training simulator). A new dialogue setting is one field here, and its name, type and
 * words in dialogueKeys.ts (zod-free, for the workflows and the renderers; tsc holds the two together).
 */
export function dialogueFields(defaults: { initialEmotion: number; maxTurns: number }) {
  return {
    initialEmotion: dialogueBounds.initialEmotion
      .default(defaults.initialEmotion)
      .describe(
        "The simulated user's emotion when a dialogue starts, 0-100 (SAGE: 40; RLVER's training simulator: 30).",
      ),
    maxTurns: dialogueBounds.maxTurns
      .default(defaults.maxTurns)
      .describe('Assistant turns after which a dialogue ends (SAGE: 10; RLVER training: 8).'),
    think: dialogueThink
      .default(false)
      .describe(
        'Think-then-say: the policy writes `<think>…</think>` then its reply; the simulator sees the reply only.',
      ),
  } satisfies { [K in DialogueKey]: z.ZodType<DialogueValues[K], unknown> };
}

export const maxWaitMinutesSchema = z
  .number()
  .min(0)
  .default(DEFAULT_MAX_WAIT_MINUTES)
  .describe(
    'Minutes a dialogue waits at an LLM call whose endpoint stayed down past its retries (timeouts, 429, 5xx, refused connections) for an operator to continue it; then it fails. 0: fail at once.',
  );

export const rolloutSettingsSchema = z.strictObject({
  /** How the workflow runs its LLM calls; see src/workflows/rollout.ts. Absent (older inputs) = activity. */
  llmCalls: z.enum(llmCallModes).default('activity'),
  /** What one activity covers; see src/workflows/rollout.ts. Absent (older inputs) = call. */
  activityPer: z.enum(activityScopes).default('call'),
  /** The rollout workflow's workflow-task timeout, set by whoever starts it; absent = Temporal's 10 s. */
  workflowTaskTimeoutMs: dialogueBounds.workflowTaskTimeoutMs.optional(),
  ...dialogueFields({ initialEmotion: SAGE_INITIAL_EMOTION, maxTurns: 8 }),
  maxWaitMinutes: maxWaitMinutesSchema,
  /** Replaces the default policy system prompt when set. */
  policySystemPrompt: z.string().optional(),
  /** Queue of the rollout workflows' own activities (artifact writes). */
  artifactsTaskQueue: z.string().min(1),
  /**
   * The transcript writes: the store as a wait at a write names it, and the write activities'
   * retries. Absent in older inputs: 10 attempts at Temporal's default intervals.
   */
  artifactStore: z.strictObject({ name: z.string().min(1), retry: retryPolicySchema }).optional(),
  /** Queue of turn activities (`activityPer: turn` with `llmCalls: activity`); absent in older inputs. */
  turnsTaskQueue: z.string().min(1).optional(),
  policy: endpointCallSchema,
  simulator: endpointCallSchema.extend(simulatorOptionsSchema.shape).extend({
    /** The simulated user's level (`simulator.difficulty`); absent (older inputs, and `normal` always): normal. */
    difficulty: simulatorDifficultySchema.optional(),
  }),
});
export type RolloutSettings = z.infer<typeof rolloutSettingsSchema>;
export type SimulatorCall = RolloutSettings['simulator'];
