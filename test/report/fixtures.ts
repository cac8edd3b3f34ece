import type { FileArtifactStore } from '../../src/artifacts/store.js';
import { emotionState } from '../../src/core/emotion.js';
import { buildEvaluationReport, type EvaluationEntry, type EvaluationReport } from '../../src/core/evaluationReport.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { GoalType, Personality } from '../../src/core/scenario.js';
import type { Outcome } from '../../src/core/termination.js';
import type { Transcript, TranscriptTurn } from '../../src/core/transcript.js';

export const INJECTION = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">';

interface DialogueSpec {
  id: string;
  name: string;
  goalType: GoalType;
  personality: Personality;
  /** Initial emotion, then the emotion after each turn. */
  emotions: number[];
  outcome: Outcome;
  /** Overrides for the text of turn i (0-based). */
  replies?: string[];
  thoughts?: string[];
  thinking?: string[];
  finalReply?: string;
}

const usage = { prompt: 100, completion: 20 };

export function makeTranscript(spec: DialogueSpec, evalId: string): Transcript {
  const opening = `Hi. I'm ${spec.name} and honestly today was a lot.`;
  const turns: TranscriptTurn[] = [];
  let userMessage = opening;
  for (let i = 1; i < spec.emotions.length; i++) {
    const before = spec.emotions[i - 1] ?? 0;
    const after = spec.emotions[i] ?? 0;
    const last = i === spec.emotions.length - 1;
    const userReply = last ? (spec.finalReply ?? null) : `Turn ${i} answer from ${spec.name}: it is complicated.`;
    turns.push({
      turn: i,
      userMessage,
      promptMessages: [{ role: 'user', content: userMessage }],
      policy: {
        raw: spec.replies?.[i - 1] ?? `Reply ${i} to ${spec.name}: that sounds hard.`,
        reply: spec.replies?.[i - 1] ?? `Reply ${i} to ${spec.name}: that sounds hard.`,
        thinking: spec.thinking?.[i - 1] ?? null,
        malformed: false,
        model: 'test-policy',
        latencyMs: 5,
        usage,
      },
      analysis: {
        analysis: {
          assistantIntent: `to acknowledge ${spec.name}`,
          goalFit: i % 2 === 0 ? 'on target' : 'partly',
          innerThoughts: spec.thoughts?.[i - 1] ?? `${spec.name} thought number ${i}`,
          emotionChange: after - before,
        },
        raw: '{}',
        attempts: 1,
        latencyMs: 5,
        usage,
      },
      emotionBefore: before,
      emotionAfter: after,
      state: emotionState(after),
      userReply: userReply === null ? null : { text: userReply, latencyMs: 5, usage },
    });
    if (userReply !== null) userMessage = userReply;
  }
  const finalEmotion = spec.emotions[spec.emotions.length - 1] ?? 0;
  return {
    kind: 'attune.rollout',
    version: 1,
    rolloutId: `${evalId}-${spec.id}`,
    runName: evalId,
    step: null,
    scenario: {
      id: spec.id,
      language: 'en',
      persona: { name: spec.name, age: 34, occupation: 'nurse', speakingStyle: 'short sentences' },
      background: `${spec.name} had a long week.`,
      goal: 'to be heard',
      hiddenIntention: 'wants someone to say it is not their fault',
      personality: spec.personality,
      traits: ['tired', 'guarded'],
      goalType: spec.goalType,
    },
    policyModel: 'test-policy',
    simulatorModel: 'test-simulator',
    think: spec.thinking !== undefined,
    seed: 1,
    initialEmotion: spec.emotions[0] ?? 40,
    maxTurns: 10,
    opening: { text: opening, writtenBySimulator: false, latencyMs: 0, usage: { prompt: 0, completion: 0 } },
    turns,
    outcome: spec.outcome,
    finalEmotion,
    reward: spec.outcome === 'malformed' ? 0 : finalEmotion / 100,
    tokens: {
      policyPrompt: 100 * turns.length,
      policyCompletion: 20 * turns.length,
      simulatorPrompt: 200 * turns.length,
      simulatorCompletion: 40 * turns.length,
    },
    startedAt: '2026-01-01T02:00:00.000Z',
    finishedAt: '2026-01-01T02:01:00.000Z',
  };
}

export const DIALOGUES: DialogueSpec[] = [
  {
    id: 'nurse-night-shift',
    name: 'Maya',
    goalType: 'deep-empathy',
    personality: 'avoidant',
    emotions: [40, 48, 58, 68, 78, 88, 98, 100],
    outcome: 'success',
    finalReply: 'Thank you. Goodbye for now.',
    thinking: ['She is exhausted; acknowledge first.'],
  },
  {
    id: 'blamed-at-work',
    name: 'Tom',
    goalType: 'not-my-fault',
    personality: 'negative',
    emotions: [40, 32, 24, 15, 6],
    outcome: 'failure',
    finalReply: 'Forget it. Bye.',
  },
  {
    id: 'exam-stress',
    name: 'Lena',
    goalType: 'practical-advice',
    personality: 'passive',
    emotions: [40, 44, 47, 51, 55, 58, 60, 61, 63, 66, 68],
    outcome: 'turn-limit',
  },
  {
    id: 'script-kiddie',
    name: 'Rex',
    goalType: 'deep-empathy',
    personality: 'negative',
    emotions: [40, 50, 45],
    outcome: 'goodbye',
    replies: [`Here is some markup: ${INJECTION}`, 'Plain reply & <b>bold</b> attempt'],
    thoughts: [`He wrote ${INJECTION} at me`, 'meh'],
    finalReply: 'I have to go, bye.',
  },
];

export const EVAL_ID = 'eval-nightly-001';

/** Stores the transcripts and the evaluation (one dialogue failed to run), returning the report. */
export async function storeEvaluation(
  store: FileArtifactStore,
  evalId = EVAL_ID,
  runName: string | null = null,
  step: number | null = null,
  scale = 1,
): Promise<EvaluationReport> {
  const results: EvaluationEntry[] = [];
  for (const spec of DIALOGUES) {
    const scaled = {
      ...spec,
      emotions: spec.emotions.map((e, i) => (i === 0 ? e : Math.max(0, Math.min(100, Math.round(e * scale))))),
    };
    const t = makeTranscript(scaled, evalId);
    const artifact = await store.putJson(`rollouts/${evalId}/${t.rolloutId}.json`, t);
    results.push({
      status: 'ok',
      scenarioId: spec.id,
      goalType: spec.goalType,
      personality: spec.personality,
      finalEmotion: t.finalEmotion,
      outcome: t.outcome,
      turns: t.turns.length,
      emotions: scaled.emotions,
      tokens: t.tokens,
      artifact,
    });
  }
  results.push({
    status: 'failed',
    scenarioId: 'lost-connection',
    goalType: 'venting',
    personality: 'passive',
    error: 'simulator endpoint returned 503 <html>Service Unavailable</html>',
  });
  const report = buildEvaluationReport({
    evalId,
    createdAt: '2026-01-01T02:05:00.000Z',
    policyModel: 'test-policy',
    simulatorModel: 'test-simulator',
    scenarios: 'scenarios/eval',
    settings: { initialEmotion: 40, maxTurns: 10, think: false, simulatorTemperature: 0 },
    results,
    runName,
    step,
  });
  await store.putJson(`evaluations/${evalId}/evaluation.json`, report);
  return report;
}

export const RUN = 'grpo-demo';

export function stepRecord(step: number): StepMetricsRecord {
  const mean = Math.min(0.95, 0.3 + step * 0.07);
  return {
    kind: 'attune.step',
    run: RUN,
    step,
    algorithm: 'grpo',
    time: `2026-01-0${Math.min(9, step)}T03:00:00.000Z`,
    policyVersion: `${RUN}@${step - 1}`,
    rollouts: { ok: 32, failed: step === 3 ? 1 : 0, dropped: 0 },
    reward: { mean, std: 0.12, min: Math.max(0, mean - 0.25), max: Math.min(1, mean + 0.2) },
    successRate: Math.min(1, step * 0.06),
    failureRate: Math.max(0, 0.25 - step * 0.03),
    malformedRate: step === 1 ? 0.06 : 0,
    meanTurns: 7 - step * 0.3,
    trainer: {
      loss: 0.9 / step,
      policy_loss: 0.6 / step,
      value_loss: 0.3 / step,
      kl: 0.002 * step,
      entropy: 1.8 - step * 0.08,
      clip_fraction: 0.05 + step * 0.01,
      grad_norm: 1.5 - step * 0.1,
      reward_mean: mean,
      advantage_mean: 0,
      tokens: 20000,
      seconds: 30,
    },
    ...(step === 4 ? { eval: { evalId: `${RUN}-eval-4`, score: 55.5, success: 1, failure: 0, count: 4 } } : {}),
  };
}

/** Six steps of metrics (step 3 recorded twice, the line of a crash in between) and two evaluations of the run. */
export async function storeRun(store: FileArtifactStore): Promise<void> {
  for (const step of [1, 2, 3]) await store.appendLine(`runs/${RUN}/metrics.jsonl`, JSON.stringify(stepRecord(step)));
  await store.appendLine(`runs/${RUN}/metrics.jsonl`, '{"kind":"attune.step","run":"grpo-de');
  for (const step of [3, 4, 5, 6])
    await store.appendLine(`runs/${RUN}/metrics.jsonl`, JSON.stringify(stepRecord(step)));
  await storeEvaluation(store, `${RUN}-eval-2`, RUN, 2, 0.8);
  await storeEvaluation(store, `${RUN}-eval-4`, RUN, 4, 1);
}
