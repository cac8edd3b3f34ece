import { performance } from 'node:perf_hooks';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { analyzeAssistantReply, writeUserMessage } from '../../src/activities/simulator.js';
import { trainerRequest } from '../../src/trainer/trainerClient.js';
import { dialogueDifficulty } from '../../src/core/difficulty.js';
import { emotionAfterTurn } from '../../src/core/emotion.js';
import { defaultPolicySystemPrompt, policyMessages } from '../../src/core/prompts/policy.js';
import { analysisMessages, openingMessages, replyMessages } from '../../src/core/prompts/simulator.js';
import type { RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import type { Scenario } from '../../src/core/scenario.js';
import { callSeed, stableHash } from '../../src/core/seeds.js';
import { isGoodbye, outcomeAfterAnalysis, rewardFor, type Outcome } from '../../src/core/termination.js';
import type { TrainerSample } from '../../src/core/training/samples.js';
import { scenariosForStep } from '../../src/core/training/scenarioSchedule.js';
import type { TrainingSettings } from '../../src/core/training/trainingSettingsSchema.js';
import type { ChatMessage } from '../../src/core/transcript.js';
import { loadScenarioLibrary } from '../../src/scenarios/library.js';
import { boundedFanOut } from '../../src/workflows/fanOut.js';

export interface DirectStep {
  step: number;
  totalMs: number;
  rolloutsMs: number;
  optimizerMs: number;
  publishMs: number;
  samples: number;
}

/** One dialogue, the same calls in the same order as src/workflows/rollout.ts, returning its optimizer samples. */
async function dialogue(
  scenario: Scenario,
  settings: RolloutSettings,
  seed: number,
  rolloutId: string,
  group: string,
): Promise<TrainerSample[]> {
  const systemPrompt = settings.policySystemPrompt ?? defaultPolicySystemPrompt(scenario.language, settings.think);
  const difficulty = dialogueDifficulty(settings.simulator, scenario);
  let openingText = scenario.firstMessage;
  if (!openingText) {
    openingText = (
      await writeUserMessage({
        endpoint: settings.simulator,
        messages: openingMessages(scenario, settings.initialEmotion),
        seed: callSeed(seed, 0, 'opening'),
      })
    ).text;
  }
  const history: ChatMessage[] = [{ role: 'user', content: openingText }];
  const turns: { prompt: ChatMessage[]; completion: string }[] = [];
  let emotion = settings.initialEmotion;
  let outcome: Outcome | null = null;
  for (let turn = 1; outcome === null; turn++) {
    const prompt = policyMessages(systemPrompt, history);
    const policyTurn = await generatePolicyTurn({
      endpoint: settings.policy,
      messages: prompt,
      think: settings.think,
      seed: callSeed(seed, turn, 'policy'),
    });
    turns.push({ prompt, completion: policyTurn.raw });
    if (policyTurn.malformed) {
      outcome = 'malformed';
      break;
    }
    const analysis = await analyzeAssistantReply({
      endpoint: settings.simulator,
      messages: analysisMessages(scenario, history, policyTurn.reply, emotion, difficulty),
      seed: callSeed(seed, turn, 'analysis'),
    });
    emotion = emotionAfterTurn(emotion, analysis.analysis.emotionChange);
    history.push({ role: 'assistant', content: policyTurn.reply });
    outcome = outcomeAfterAnalysis(emotion, turn, settings.maxTurns);
    if (outcome !== null) break;
    const reply = await writeUserMessage({
      endpoint: settings.simulator,
      messages: replyMessages(scenario, history, analysis.analysis, emotion, false, difficulty),
      seed: callSeed(seed, turn, 'reply'),
    });
    history.push({ role: 'user', content: reply.text });
    if (isGoodbye(reply.text, scenario.language)) outcome = 'goodbye';
  }
  const reward = rewardFor(outcome, emotion);
  return turns.map((t) => ({ prompt: t.prompt, completion: t.completion, reward, group, trajectory: rolloutId }));
}

/**
 * The same training steps without Temporal, in this process: the same scenarios and seeds, the
 * same LLM calls with the same concurrency, samples posted straight to the trainer under a second
 * run (`runName`) with the same config, then the same publish check (the trainer lists the version).
 * Transcripts are not written to the artifact store (Attune writes and re-reads them).
 */
export async function runDirect(settings: TrainingSettings, steps: number): Promise<DirectStep[]> {
  const trainer = { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv };
  await trainerRequest(
    trainer,
    'POST',
    '/v1/runs',
    {
      run_id: settings.runName,
      base_model: settings.trainer.baseModel,
      algorithm: settings.algorithm,
      lora: settings.trainer.lora,
      hyperparameters: settings.trainer.hyperparameters,
      seed: settings.seed,
    },
    30 * 60_000,
  );
  const scenarios = new Map(loadScenarioLibrary(settings.scenarioDir).scenarios.map((s) => [s.id, s]));
  const ids = [...scenarios.keys()].sort();
  const base = settings.publish.policyBaseURL.replace(/\/$/, '');
  let version = settings.publish.baseVersion;
  const out: DirectStep[] = [];
  for (let step = 1; step <= steps; step++) {
    const t0 = performance.now();
    const chosen = scenariosForStep(ids, settings.seed, step, settings.scenariosPerStep).ids;
    const rolloutSettings: RolloutSettings = {
      ...settings.rollout,
      policy: { ...settings.rollout.policy, model: version },
    };
    const planned: { scenario: Scenario; rolloutId: string; group: string; seed: number }[] = [];
    chosen.forEach((scenarioId, position) => {
      const group = `s${step}-${position}-${scenarioId}`;
      for (let k = 0; k < settings.samplesPerScenario; k++) {
        planned.push({
          scenario: scenarios.get(scenarioId)!,
          rolloutId: `${settings.runName}--s${step}--${position}-${scenarioId}--k${k}`,
          group,
          seed: stableHash(`${settings.seed}:${step}:${position}:${k}`) % 2_147_483_647,
        });
      }
    });
    const outcomes = await boundedFanOut(planned, settings.maxInFlight, (p) =>
      dialogue(p.scenario, rolloutSettings, p.seed, p.rolloutId, p.group),
    );
    const samples = outcomes.flatMap((o) => {
      if (!o.ok) throw o.error;
      return o.value;
    });
    const t1 = performance.now();
    await trainerRequest(
      trainer,
      'POST',
      `/v1/runs/${encodeURIComponent(settings.runName)}/steps`,
      { step, samples },
      24 * 3600_000,
    );
    const t2 = performance.now();
    version = `${settings.runName}@${step}`;
    const models = (await (await fetch(`${base}/models`)).json()) as { data?: { id?: string }[] };
    if (!models.data?.some((m) => m.id === version)) throw new Error(`${base}/models does not list ${version}`);
    const t3 = performance.now();
    out.push({
      step,
      totalMs: t3 - t0,
      rolloutsMs: t1 - t0,
      optimizerMs: t2 - t1,
      publishMs: t3 - t2,
      samples: samples.length,
    });
  }
  return out;
}
