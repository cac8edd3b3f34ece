import type { Algorithm } from '../core/training/algorithms.js';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { z } from 'zod';
import type { ArtifactStore } from '../artifacts/store.js';
import type { TrainerStepMetrics } from '../core/runMetrics.js';
import type { Hyperparameters, LoraSpec } from '../core/training/trainingSettingsSchema.js';
import { FINAL_CREDIT, type CreditSettings } from '../core/training/credit.js';
import { replySignals } from '../core/training/replySignals.js';
import type { OptimizerStepResult } from '../core/training/optimizedStep.js';
import { samplesFromTranscript, trainerCredit, type TrainerSample } from '../core/training/samples.js';
import type { Transcript } from '../core/transcript.js';
import { createLogger } from '../log.js';
import { DEFAULT_SAME_ERROR_ATTEMPTS, nextSameErrorRun, type SameErrorRun } from '../core/training/sameTrainerError.js';
import { TrainerHttpError, trainerRequest, type TrainerEndpoint } from '../trainer/trainerClient.js';
import { versionStep } from '../vllm/adapters.js';

const log = createLogger({ component: 'optimizer' });

/**
 * What an attempt leaves in its last heartbeat for the next one: the run of same server errors so
 * far (sameTrainerError.ts). Temporal hands an attempt's last heartbeat details to the next attempt.
 */
const failedAttemptSchema = z.object({
  sameErrors: z.object({ error: z.string(), attempts: z.number().int().min(1) }),
});

function sameErrorsBefore(heartbeatDetails: unknown): SameErrorRun | null {
  const parsed = failedAttemptSchema.safeParse(heartbeatDetails);
  return parsed.success ? parsed.data.sameErrors : null;
}

export interface EnsureRunInput {
  trainer: TrainerEndpoint;
  runName: string;
  algorithm: Algorithm;
  baseModel: string;
  lora: LoraSpec | null;
  hyperparameters: Hyperparameters;
  seed: number;
}

export interface OptimizerStepInput {
  trainer: TrainerEndpoint;
  runName: string;
  step: number;
  /**
   * Transcript keys of the step's kept rollouts, with their GRPO group, and the step whose weights
   * each one sampled when the step's rollouts sampled different ones (steps that take the first
   * finished: absent, `policyVersion`).
   */
  rollouts: { artifact: string; group: string; policyVersion?: number }[];
  /**
   * The step whose weights the rollouts sampled from, the oldest when they differ (0: the base
   * model); the trainer weighs samples older than the weights it updates (`step - 1`). Absent:
   * sampled from those weights.
   */
  policyVersion?: number;
  /** How each dialogue's reward is shared over its turns (absent: `final`). */
  credit?: CreditSettings;
  /** Operator changes (`attune set`) applied from this step on. */
  hyperparameters?: Hyperparameters;
  /**
   * Attempts the trainer may answer with the same server error, in a row, before the run waits for
   * the operator (absent: DEFAULT_SAME_ERROR_ATTEMPTS).
   */
  sameErrorAttempts?: number;
  heartbeatEveryMs?: number;
}

const stepResponseSchema = z
  .object({
    step: z.number().int(),
    model: z.string(),
    metrics: z
      .object({
        loss: z.number(),
        policy_loss: z.number(),
        value_loss: z.number(),
        kl: z.number(),
        entropy: z.number(),
        clip_fraction: z.number(),
        grad_norm: z.number(),
        reward_mean: z.number(),
        advantage_mean: z.number(),
        tokens: z.number(),
        seconds: z.number(),
      })
      .passthrough(),
    checkpoint: z
      .object({
        step: z.number(),
        path: z.string().nullable().optional(),
        export_path: z.string().nullable().optional(),
        export_format: z.string().nullable().optional(),
      })
      .passthrough()
      .nullable()
      .optional(),
    replayed: z.boolean().optional(),
    commit_to_answer_ms: z.number().nullable().optional(),
  })
  .passthrough();

export type { OptimizerStepResult };

function asFailure(error: unknown): unknown {
  if (!(error instanceof TrainerHttpError)) return error;
  // 4xx other than 408/429 will not get better by asking again.
  const permanent = error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429;
  return permanent
    ? ApplicationFailure.nonRetryable(error.message, 'TrainerRejected')
    : ApplicationFailure.retryable(error.message, 'TrainerError');
}

/**
 * The step's dialogues as the trainer's samples, and the policy's replies (for the guardrails' signals).
 * Each sample's `policy_version` is the step its turn was sampled from: the version a full-weight
 * turn recorded (vLLM's, which with in-flight updates may be newer than the one the step's rollouts
 * started on), else the step's `policyVersion`.
 */
async function stepSamples(store: ArtifactStore, input: OptimizerStepInput) {
  const samples: (TrainerSample & { policy_version?: number })[] = [];
  const replies: string[] = [];
  for (const rollout of input.rollouts) {
    const transcript = await store.getJson<Transcript>(rollout.artifact);
    replies.push(...transcript.turns.map((t) => t.policy.reply));
    samplesFromTranscript(transcript, rollout.group).forEach((sample, i) => {
      const version = turnPolicyVersion(
        input,
        rollout.policyVersion,
        transcript.turns[i]!.policy.weightVersion,
        rollout.artifact,
      );
      samples.push(version === undefined ? sample : { ...sample, policy_version: version });
    });
  }
  return { samples, replies };
}

/**
 * The step a turn was sampled from: its recorded full-weight version of this run, else the step's.
 * A turn older than the version the step's rollouts started on (`policyVersion`, which the workflow
 * keeps within `maxStaleness`) or newer than the weights this step updates is refused, never
 * trained on silently (`StaleTurn`).
 */
function turnPolicyVersion(
  input: OptimizerStepInput,
  rolloutVersion: number | undefined,
  weightVersion: string | undefined,
  artifact: string,
): number | undefined {
  const recorded = weightVersion === undefined ? null : versionStep(input.runName, weightVersion);
  if (recorded === null || input.policyVersion === undefined) return rolloutVersion ?? input.policyVersion;
  if (recorded < input.policyVersion || recorded > input.step - 1)
    throw ApplicationFailure.nonRetryable(
      `${artifact}: a turn sampled by ${weightVersion}, outside the versions step ${input.step} may train on ` +
        `(${input.runName}@${input.policyVersion} to ${input.runName}@${input.step - 1})`,
      'StaleTurn',
    );
  return recorded;
}

/** The trainer's step request: the samples, the credit that shares their rewards out, any live overrides. */
function stepBody(input: OptimizerStepInput, samples: unknown[]) {
  return {
    step: input.step,
    samples,
    credit: trainerCredit(input.credit ?? FINAL_CREDIT),
    ...(input.hyperparameters && Object.keys(input.hyperparameters).length > 0
      ? { hyperparameters: input.hyperparameters }
      : {}),
  };
}

/** What a failed step post becomes: a typed failure, after recording a repeated trainer error. */
function stepFailure(error: unknown, input: OptimizerStepInput, sameErrors: SameErrorRun | null): unknown {
  // A full state directory stays full until someone frees space: retrying would hide it; the
  // workflow waits for the operator instead, then posts the same step (applied at most once).
  if (error instanceof TrainerHttpError && error.status === 507)
    return ApplicationFailure.nonRetryable(error.message, 'TrainerDiskFull');
  if (error instanceof TrainerHttpError && error.status === 409) {
    const expected = (error.body as { error?: { expected_step?: number } } | null)?.error?.expected_step;
    return ApplicationFailure.nonRetryable(
      `${error.message}${expected !== undefined ? ` (trainer expects step ${expected})` : ''}`,
      'TrainerStepConflict',
    );
  }
  if (error instanceof TrainerHttpError && error.status >= 500) {
    const run = nextSameErrorRun(sameErrors, error.message);
    if (run.attempts >= (input.sameErrorAttempts ?? DEFAULT_SAME_ERROR_ATTEMPTS))
      return ApplicationFailure.nonRetryable(
        `trainer answered step ${input.step} with the same error on ${run.attempts} attempts in a row: ${error.message}`,
        'TrainerKeepsFailing',
      );
    // flushed with the failure: the next attempt starts from it
    Context.current().heartbeat({ phase: 'failed', sameErrors: run });
  }
  return asFailure(error);
}

export function createOptimizerActivities(store: ArtifactStore) {
  return {
    /** Creates the trainer run, or confirms the existing one has the same config (the trainer answers 409 otherwise). */
    async ensureTrainerRun(input: EnsureRunInput): Promise<{ step: number }> {
      try {
        const { json } = await trainerRequest(
          input.trainer,
          'POST',
          '/v1/runs',
          {
            run_id: input.runName,
            base_model: input.baseModel,
            algorithm: input.algorithm,
            lora: input.lora,
            hyperparameters: input.hyperparameters,
            seed: input.seed,
          },
          30 * 60_000,
        );
        return { step: z.object({ step: z.number().int() }).passthrough().parse(json).step };
      } catch (error) {
        throw asFailure(error);
      }
    },

    /**
     * One optimizer step: the step's dialogues become samples (read from the artifact store, never
     * through Temporal), posted to the trainer keyed by (run, step). Safe to retry: the trainer
     * returns the stored result of an applied step and applies nothing twice.
     */
    async applyOptimizerStep(input: OptimizerStepInput): Promise<OptimizerStepResult> {
      const ctx = Context.current();
      // read before this attempt's own heartbeats replace them
      const sameErrors = sameErrorsBefore(ctx.info.heartbeatDetails);
      const { samples, replies } = await stepSamples(store, input);
      if (samples.length === 0) throw ApplicationFailure.nonRetryable(`step ${input.step} has no samples`, 'EmptyStep');
      ctx.heartbeat({ phase: 'posting', samples: samples.length });
      log.info('optimizer step posting', {
        run: input.runName,
        step: input.step,
        samples: samples.length,
        attempt: ctx.info.attempt,
      });
      const beat = setInterval(
        () => ctx.heartbeat({ phase: 'training', samples: samples.length }),
        input.heartbeatEveryMs ?? 5000,
      );
      try {
        const { json } = await trainerRequest(
          input.trainer,
          'POST',
          `/v1/runs/${encodeURIComponent(input.runName)}/steps`,
          stepBody(input, samples),
          24 * 3600_000,
          ctx.cancellationSignal,
        );
        const parsed = stepResponseSchema.safeParse(json);
        if (!parsed.success)
          throw ApplicationFailure.nonRetryable(
            `trainer step ${input.step}: unexpected response ${JSON.stringify(json).slice(0, 300)}`,
            'TrainerBadResponse',
          );
        const r = parsed.data;
        const metrics = r.metrics as unknown as TrainerStepMetrics;
        return {
          step: r.step,
          version: r.model,
          metrics,
          exportPath: r.checkpoint?.export_path ?? null,
          replayed: r.replayed ?? false,
          samples: samples.length,
          commitToAnswerMs: r.commit_to_answer_ms ?? null,
          signals: replySignals(replies),
        };
      } catch (error) {
        throw stepFailure(error, input, sameErrors);
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type OptimizerActivities = ReturnType<typeof createOptimizerActivities>;
