import { ApplicationFailure, defineQuery, proxyActivities, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { ArtifactActivities, PolicyActivities, SimulatorActivities } from '../activities/index.js';
import type { ScenarioRef } from '../activities/scenarios.js';
import { emotionAfterTurn, emotionState } from '../core/emotion.js';
import { analysisMessages, openingMessages, replyMessages } from '../core/prompts/simulator.js';
import { defaultPolicySystemPrompt, policyMessages } from '../core/prompts/policy.js';
import type { RetryPolicySettings, RolloutSettings } from '../core/rolloutSettings.js';
import type { Scenario } from '../core/scenario.js';
import { callSeed } from '../core/seeds.js';
import { isGoodbye, outcomeAfterAnalysis, rewardFor, type Outcome } from '../core/termination.js';
import { emptyTotals, type ChatMessage, type RolloutSummary, type Transcript, type TranscriptTurn } from '../core/transcript.js';
import { LIMITS } from '../config/taskQueues.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';

export interface RolloutInput {
  rolloutId: string;
  /** The scenario itself, or a reference loaded by an activity (keeps fan-out parents' histories small). */
  scenario?: Scenario;
  scenarioRef?: ScenarioRef;
  settings: RolloutSettings;
  seed: number;
  runName?: string | null;
  step?: number | null;
}

export interface RolloutProgress {
  turn: number;
  emotion: number;
  emotions: number[];
  outcome: Outcome | null;
  phase: 'opening' | 'policy' | 'analysis' | 'reply' | 'saving' | 'done';
}

export const rolloutProgressQuery = defineQuery<RolloutProgress>('rolloutProgress');

/** The HTTP timeout plus headroom for queueing in the worker; short enough that a dead worker's call is retried soon. */
function activityTimeoutFor(httpTimeoutMs: number): number {
  return Math.ceil(httpTimeoutMs * 1.25) + 1000;
}

function retryOptions(retry: RetryPolicySettings) {
  return {
    initialInterval: retry.initialIntervalMs,
    backoffCoefficient: retry.backoffCoefficient,
    maximumInterval: retry.maximumIntervalMs,
    // 0 means unlimited: the SDK wants the field left out for that.
    ...(retry.maximumAttempts > 0 ? { maximumAttempts: retry.maximumAttempts } : {}),
    nonRetryableErrorTypes: ['LlmRequestRejected', 'UnparseableSimulatorOutput'],
  };
}

/**
 * One dialogue between the policy and the simulated user; the transcript goes to the artifact store
 * and only a summary comes back. Each LLM call is one activity, in one of two ways
 * (`settings.llmCalls`):
 * - `activity`: on its endpoint's task queue, so a crash resumes after the last finished call, and
 *   each endpoint's workers scale and rate-limit on their own;
 * - `local`: a local activity in the rollout worker, recorded as a marker when the workflow task
 *   completes. About half the CPU per call and a fifth of the server's, but a crash repeats the
 *   calls made since the last completed workflow task (up to about 8 s of them).
 */
export async function rollout(input: RolloutInput): Promise<RolloutSummary> {
  const { settings, seed } = input;
  const runName = input.runName ?? null;
  const step = input.step ?? null;
  const startedAt = new Date().toISOString();

  const local = settings.llmCalls === 'local';
  const policyOptions = {
    startToCloseTimeout: activityTimeoutFor(settings.policy.timeoutMs),
    retry: retryOptions(settings.policy.retry),
  };
  // A local call may first wait for its endpoint's slot in the worker, and that wait counts against
  // a local activity's timeout; the HTTP timeout inside still bounds the call itself.
  const localOptions = <T extends { startToCloseTimeout: number }>(options: T): T => ({ ...options, startToCloseTimeout: Math.max(options.startToCloseTimeout, LIMITS.localLlmCallTimeoutMs) });
  const policy = local
    ? proxyLocalActivities<PolicyActivities>(localOptions(policyOptions))
    : proxyActivities<PolicyActivities>({ ...policyOptions, taskQueue: settings.policy.taskQueue });
  const simulatorOptions = {
    // The analysis activity may ask again after an unparseable answer, within one attempt.
    startToCloseTimeout: activityTimeoutFor(settings.simulator.timeoutMs) * (settings.simulator.parseRetries + 1),
    retry: retryOptions(settings.simulator.retry),
  };
  const simulator = local
    ? proxyLocalActivities<SimulatorActivities>(localOptions(simulatorOptions))
    : proxyActivities<SimulatorActivities>({ ...simulatorOptions, taskQueue: settings.simulator.taskQueue });
  const artifacts = proxyActivities<ArtifactActivities>({
    taskQueue: settings.artifactsTaskQueue,
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    retry: { maximumAttempts: 10 },
  });

  let scenario: Scenario;
  if (input.scenario) scenario = input.scenario;
  else if (input.scenarioRef) scenario = await artifacts.loadScenario(input.scenarioRef);
  else throw ApplicationFailure.nonRetryable('rollout input needs scenario or scenarioRef', 'BadRolloutInput');

  const progress: RolloutProgress = { turn: 0, emotion: settings.initialEmotion, emotions: [settings.initialEmotion], outcome: null, phase: 'opening' };
  setHandler(rolloutProgressQuery, () => progress);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'rollout' },
    { key: SEARCH_ATTRIBUTES.scenarioId, value: scenario.id },
    ...(runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: runName }] : []),
    ...(step !== null ? [{ key: SEARCH_ATTRIBUTES.step, value: step }] : []),
  ]);

  const tokens = emptyTotals();
  const systemPrompt = settings.policySystemPrompt ?? defaultPolicySystemPrompt(scenario.language, settings.think);

  let opening: Transcript['opening'];
  if (scenario.firstMessage) {
    opening = { text: scenario.firstMessage, writtenBySimulator: false, latencyMs: 0, usage: { prompt: 0, completion: 0 } };
  } else {
    const written = await simulator.writeUserMessage({
      endpoint: settings.simulator,
      messages: openingMessages(scenario, settings.initialEmotion),
      seed: callSeed(seed, 0, 'opening'),
    });
    tokens.simulatorPrompt += written.usage.prompt;
    tokens.simulatorCompletion += written.usage.completion;
    opening = { text: written.text, writtenBySimulator: true, latencyMs: written.latencyMs, usage: written.usage };
  }

  // The visible dialogue: user messages and assistant replies (never the assistant's thinking).
  const history: ChatMessage[] = [{ role: 'user', content: opening.text }];
  const turns: TranscriptTurn[] = [];
  let emotion = settings.initialEmotion;
  let outcome: Outcome | null = null;

  for (let turn = 1; outcome === null; turn++) {
    progress.turn = turn;
    progress.phase = 'policy';
    const promptMessages = policyMessages(systemPrompt, history);
    const policyTurn = await policy.generatePolicyTurn({
      endpoint: settings.policy,
      messages: promptMessages,
      think: settings.think,
      seed: callSeed(seed, turn, 'policy'),
    });
    tokens.policyPrompt += policyTurn.usage.prompt;
    tokens.policyCompletion += policyTurn.usage.completion;
    const record: TranscriptTurn = {
      turn,
      userMessage: history[history.length - 1]?.content ?? '',
      promptMessages,
      policy: policyTurn,
      analysis: null,
      emotionBefore: emotion,
      emotionAfter: emotion,
      state: emotionState(emotion),
      userReply: null,
    };
    turns.push(record);
    if (policyTurn.malformed) {
      outcome = 'malformed';
      break;
    }

    progress.phase = 'analysis';
    const analysis = await simulator.analyzeAssistantReply({
      endpoint: settings.simulator,
      messages: analysisMessages(scenario, history, policyTurn.reply, emotion),
      seed: callSeed(seed, turn, 'analysis'),
    });
    tokens.simulatorPrompt += analysis.usage.prompt;
    tokens.simulatorCompletion += analysis.usage.completion;
    emotion = emotionAfterTurn(emotion, analysis.analysis.emotionChange);
    record.analysis = analysis;
    record.emotionAfter = emotion;
    record.state = emotionState(emotion);
    progress.emotion = emotion;
    progress.emotions.push(emotion);
    history.push({ role: 'assistant', content: policyTurn.reply });

    outcome = outcomeAfterAnalysis(emotion, turn, settings.maxTurns);
    if (outcome !== null) break;

    progress.phase = 'reply';
    const reply = await simulator.writeUserMessage({
      endpoint: settings.simulator,
      messages: replyMessages(scenario, history, analysis.analysis, emotion, false),
      seed: callSeed(seed, turn, 'reply'),
    });
    tokens.simulatorPrompt += reply.usage.prompt;
    tokens.simulatorCompletion += reply.usage.completion;
    record.userReply = reply;
    history.push({ role: 'user', content: reply.text });
    if (isGoodbye(reply.text, scenario.language)) outcome = 'goodbye';
  }

  const finalEmotion = emotion;
  const reward = rewardFor(outcome, finalEmotion);
  progress.outcome = outcome;
  progress.phase = 'saving';
  const rolloutId = input.rolloutId;
  const transcript: Transcript = {
    kind: 'attune.rollout',
    version: 1,
    rolloutId,
    runName,
    step,
    scenario,
    policyModel: settings.policy.model,
    simulatorModel: settings.simulator.model,
    think: settings.think,
    seed,
    initialEmotion: settings.initialEmotion,
    maxTurns: settings.maxTurns,
    opening,
    turns,
    outcome,
    finalEmotion,
    reward,
    tokens,
    startedAt,
    finishedAt: new Date().toISOString(),
  };
  const artifact = await artifacts.saveTranscript(transcript);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.outcome, value: outcome },
    { key: SEARCH_ATTRIBUTES.finalEmotion, value: finalEmotion },
  ]);
  progress.phase = 'done';
  return {
    rolloutId,
    runName,
    step,
    scenarioId: scenario.id,
    goalType: scenario.goalType,
    personality: scenario.personality,
    policyModel: settings.policy.model,
    outcome,
    finalEmotion,
    reward,
    turns: turns.length,
    emotions: progress.emotions,
    tokens,
    artifact,
  };
}

