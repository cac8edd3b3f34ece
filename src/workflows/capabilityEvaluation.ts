import { proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { RolloutQueueActivities } from '../activities/index.js';
import type {
  CapabilityEvaluationInput,
  CapabilityProblemEntry,
  CapabilitySummary,
} from '../core/capability/capabilityReport.js';
import { problemSeed } from '../core/capability/problemSeed.js';
import { LIMITS } from '../config/limits.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { evaluationProgressQuery, type EvaluationProgress } from './evaluation.js';
import { boundedFanOut, counted, failureMessage } from './fanOut.js';
import { llmCallActivities } from './rolloutActivities.js';

/** Headroom of a program's activity past its deadline: the sandbox's set-up, teardown and the record's write. */
const SANDBOX_OVERHEAD_MS = 15_000;

/** The activities of one problem: its prompt, the policy's answer, its score. */
function problemActivities(input: CapabilityEvaluationInput) {
  const artifacts = proxyActivities<RolloutQueueActivities>({
    taskQueue: input.settings.artifactsTaskQueue,
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    retry: { maximumAttempts: 10 },
  });
  // Programs run one at a time per worker: a scoring may wait for every other problem in flight.
  const scoring = proxyActivities<RolloutQueueActivities>({
    taskQueue: input.settings.artifactsTaskQueue,
    startToCloseTimeout: (input.concurrency + 1) * (input.sandboxTimeoutMs + SANDBOX_OVERHEAD_MS),
    retry: { maximumAttempts: 3 },
  });
  // The Sentient evaluation's policy endpoint and version, with the suite's decoding; no token
  // log-probs (a training run's policy asks for them), which nothing here reads.
  const { logprobs: _logprobs, ...call } = input.settings.policy;
  const endpoint = {
    ...call,
    temperature: input.decoding.temperature,
    maxTokens: input.decoding.maxTokens,
  };
  // Always on the policy's own queue (its worker's limits): no local activity holds this workflow's task open.
  const { policy } = llmCallActivities({ ...input.settings, policy: endpoint }, false);
  return { artifacts, scoring, policy, endpoint };
}

/**
 * A capability suite (maths or code) over a vendored data set: per problem, the prompt, one policy
 * call on the Sentient evaluation's policy, and the answer scored by a worker (maths: exact match of
 * the final answer; code: the problem's unit tests run in the sandbox). A problem that fails to run
 * is reported and left out of the score. Reports progress like the Sentient evaluation, so
 * `attune eval` follows both the same way.
 */
export async function capabilityEvaluation(input: CapabilityEvaluationInput): Promise<CapabilitySummary> {
  const progress: EvaluationProgress = { total: input.problemIds.length, done: 0, failed: 0, inFlight: 0 };
  // Before the first await: the command queries progress from the start.
  setHandler(evaluationProgressQuery, () => progress);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'capability-evaluation' },
    ...(input.runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: input.runName }] : []),
    ...(input.step !== null ? [{ key: SEARCH_ATTRIBUTES.step, value: input.step }] : []),
  ]);
  const { artifacts, scoring, policy, endpoint } = problemActivities(input);
  const confinement: string[] = [];
  const outcomes = await boundedFanOut(input.problemIds, input.concurrency, (problemId) =>
    counted(progress, async () => {
      const ref = { suite: input.suite, file: input.dataset.file, sha256: input.dataset.sha256, problemId };
      const messages = await artifacts.capabilityPrompt(ref);
      const answer = await policy.generatePolicyTurn({
        endpoint,
        messages,
        think: false,
        seed: problemSeed(input.seed, problemId),
      });
      const score = await scoring.scoreCapabilityAnswer({
        ...ref,
        evalId: input.evalId,
        reply: answer.reply,
        raw: answer.raw,
        sandboxTimeoutMs: input.sandboxTimeoutMs,
      });
      confinement.push(...score.confinement);
      return score;
    }),
  );
  const entries: CapabilityProblemEntry[] = outcomes.map((outcome, i) => {
    const problemId = input.problemIds[i]!;
    if (!outcome.ok) return { status: 'failed', problemId, error: failureMessage(outcome.error) };
    const { solved, outcome: ending, detail, artifact } = outcome.value;
    return { status: 'ok', problemId, solved, outcome: ending, detail, artifact };
  });
  // Built and checked in the activity: the report's schema (zod) stays out of the workflow bundle.
  const summary = await artifacts.saveCapabilityReport({
    input,
    problems: entries,
    createdAt: new Date().toISOString(),
    confinement,
  });
  if (summary.score !== null) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.meanReward, value: summary.score }]);
  return summary;
}
