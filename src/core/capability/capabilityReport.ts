import { z } from 'zod';
import { rolloutSettingsSchema } from '../rolloutSettingsSchema.js';
import { wilsonInterval } from '../statistics/wilson.js';
import { ATTUNE_VERSION } from '../version.js';
import {
  CAPABILITY_SUITES,
  capabilityDatasetSchema,
  decodingSchema,
  PROMPT_TEMPLATES,
  promptHash,
} from './capabilitySuites.js';

/** More problems than this do not fit one workflow's history comfortably (a few events each). */
export const MAX_CAPABILITY_PROBLEMS = 2000;

/** What `capabilityEvaluation` is started with; checked on the client, where the settings are built. */
export const capabilityEvaluationInputSchema = z.strictObject({
  evalId: z.string().min(1),
  suite: z.enum(CAPABILITY_SUITES),
  dataset: capabilityDatasetSchema,
  problemIds: z.array(z.string().min(1)).min(1).max(MAX_CAPABILITY_PROBLEMS),
  /** The Sentient evaluation's settings: its policy endpoint and version, queues and retries. */
  settings: rolloutSettingsSchema,
  decoding: decodingSchema,
  seed: z.number().int().min(0),
  /** Problems in flight at once. */
  concurrency: z.number().int().min(1).max(256),
  sandboxTimeoutMs: z.number().int().min(100).max(600_000),
  runName: z.string().min(1).nullable(),
  step: z.number().int().min(0).nullable(),
});
export type CapabilityEvaluationInput = z.output<typeof capabilityEvaluationInputSchema>;

/** What a training run or a schedule keeps of a suite run's input: id, policy and step are set at each run. */
export const capabilitySuiteRunSchema = capabilityEvaluationInputSchema.pick({
  suite: true,
  dataset: true,
  problemIds: true,
  decoding: true,
  sandboxTimeoutMs: true,
});
export type CapabilitySuiteRun = z.output<typeof capabilitySuiteRunSchema>;

const problemEntrySchema = z.discriminatedUnion('status', [
  z.strictObject({
    status: z.literal('ok'),
    problemId: z.string(),
    solved: z.boolean(),
    /** Maths: correct, wrong, no-answer. Code: the sandbox's outcome (passed, failed, timeout, killed, sandbox-error). */
    outcome: z.string(),
    detail: z.string(),
    /** The problem's record: prompt, reply and what scoring saw (the answer found, or the program's output). */
    artifact: z.string(),
  }),
  z.strictObject({ status: z.literal('failed'), problemId: z.string(), error: z.string() }),
]);
export type CapabilityProblemEntry = z.infer<typeof problemEntrySchema>;

/** What makes two scores of one suite comparable. */
const capabilityEnvironmentSchema = z.strictObject({
  suite: z.enum(CAPABILITY_SUITES),
  dataset: capabilityDatasetSchema,
  problemIds: z.array(z.string()),
  prompt: z.strictObject({ template: z.string(), hash: z.string() }),
  decoding: decodingSchema.extend({ seed: z.number().int() }),
  policy: z.strictObject({ baseURL: z.string(), model: z.string(), weightVersion: z.string().optional() }),
  /** Code only: the deadline of each program, and every confinement the sandbox applied (limits included). */
  sandbox: z.strictObject({ timeoutMs: z.number().int(), confinement: z.array(z.string()) }).optional(),
  attuneVersion: z.string(),
});
export type CapabilityEnvironment = z.infer<typeof capabilityEnvironmentSchema>;

export const capabilityReportSchema = z.strictObject({
  kind: z.literal('attune.capability'),
  evalId: z.string(),
  suite: z.enum(CAPABILITY_SUITES),
  createdAt: z.string(),
  runName: z.string().nullable(),
  step: z.number().int().nullable(),
  /** Share of the problems that ran which were solved; null when none ran. */
  score: z.number().min(0).max(1).nullable(),
  /** 95 % Wilson interval of the score. */
  ci: z.strictObject({ low: z.number(), high: z.number() }).nullable(),
  interval: z.literal('wilson-95'),
  solved: z.number().int().min(0),
  /** Problems that ran (answered and scored); `failed` did not run and are left out of the score. */
  count: z.number().int().min(0),
  failed: z.number().int().min(0),
  environment: capabilityEnvironmentSchema,
  problems: z.array(problemEntrySchema),
});
export type CapabilityReport = z.infer<typeof capabilityReportSchema>;

/** What the workflow returns: the headline; the report stays in the artifact store. */
export type CapabilitySummary = Pick<
  CapabilityReport,
  'evalId' | 'suite' | 'score' | 'ci' | 'solved' | 'count' | 'failed'
> & {
  artifact: string;
};

/**
 * The report of a suite run: score and interval over the problems that ran (a problem whose policy
 * call or sandbox could not run says why and is left out, as a failed dialogue is in the Sentient
 * evaluation), with the environment that makes it comparable.
 */
export function capabilityReport(
  input: CapabilityEvaluationInput,
  problems: CapabilityProblemEntry[],
  createdAt: string,
  confinement: string[],
): CapabilityReport {
  const ran = problems.filter((p) => p.status === 'ok');
  const solved = ran.filter((p) => p.solved).length;
  const { policy } = input.settings;
  return {
    kind: 'attune.capability',
    evalId: input.evalId,
    suite: input.suite,
    createdAt,
    runName: input.runName,
    step: input.step,
    score: ran.length > 0 ? solved / ran.length : null,
    ci: wilsonInterval(solved, ran.length),
    interval: 'wilson-95',
    solved,
    count: ran.length,
    failed: problems.length - ran.length,
    environment: {
      suite: input.suite,
      dataset: input.dataset,
      problemIds: input.problemIds,
      prompt: { template: PROMPT_TEMPLATES[input.suite], hash: promptHash(input.suite) },
      decoding: { ...input.decoding, seed: input.seed },
      policy: {
        baseURL: policy.baseURL,
        model: policy.model,
        ...(policy.weightVersion !== undefined ? { weightVersion: policy.weightVersion } : {}),
      },
      ...(input.suite === 'code'
        ? { sandbox: { timeoutMs: input.sandboxTimeoutMs, confinement: [...new Set(confinement)].sort() } }
        : {}),
      attuneVersion: ATTUNE_VERSION,
    },
    problems,
  };
}

export function capabilitySummary(report: CapabilityReport, artifact: string): CapabilitySummary {
  const { evalId, suite, score, ci, solved, count, failed } = report;
  return { evalId, suite, score, ci, solved, count, failed, artifact };
}
