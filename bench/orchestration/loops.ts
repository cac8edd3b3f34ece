import { createArtifactActivities } from '../../src/activities/artifacts.js';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { analyzeAssistantReply, writeUserMessage } from '../../src/activities/simulator.js';
import type { ArtifactStore } from '../../src/artifacts/store.js';
import { emotionAfterTurn, emotionState } from '../../src/core/emotion.js';
import { defaultPolicySystemPrompt, policyMessages } from '../../src/core/prompts/policy.js';
import { analysisMessages, openingMessages, replyMessages } from '../../src/core/prompts/simulator.js';
import type { RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import type { Scenario } from '../../src/core/scenario.js';
import { callSeed } from '../../src/core/seeds.js';
import { isGoodbye, outcomeAfterAnalysis, rewardFor, type Outcome } from '../../src/core/termination.js';
import { emptyTotals, type ChatMessage, type Transcript, type TranscriptTurn } from '../../src/core/transcript.js';

/**
 * The two baselines, without Temporal: the same activity functions (so the same prompt builders,
 * the same openai client and code path), the same per-dialogue logic as src/workflows/rollout.ts,
 * and the same transcript written to the same kind of artifact store at the end.
 */

export interface DialogueSpec {
  rolloutId: string;
  scenario: Scenario;
  seed: number;
}

/** One turn as seen from the loop: wall time, LLM calls made, and the client-measured LLM time in it. */
export interface TurnTiming {
  ms: number;
  calls: number;
  llmMs: number;
}

/** A dialogue's state, advanced one call at a time, exactly as the rollout workflow does. */
class Dialogue {
  readonly history: ChatMessage[] = [];
  readonly turns: TranscriptTurn[] = [];
  readonly tokens = emptyTotals();
  emotion: number;
  outcome: Outcome | null = null;
  turn = 0;
  calls = 0;
  llmMs = 0;
  private opening: Transcript['opening'] | null = null;
  private readonly systemPrompt: string;
  private readonly startedAt = new Date().toISOString();

  constructor(
    readonly spec: DialogueSpec,
    readonly settings: RolloutSettings,
  ) {
    this.emotion = settings.initialEmotion;
    this.systemPrompt =
      settings.policySystemPrompt ?? defaultPolicySystemPrompt(spec.scenario.language, settings.think);
  }

  get done(): boolean {
    return this.outcome !== null;
  }

  async open(): Promise<void> {
    const { scenario } = this.spec;
    if (scenario.firstMessage) {
      this.opening = {
        text: scenario.firstMessage,
        writtenBySimulator: false,
        latencyMs: 0,
        usage: { prompt: 0, completion: 0 },
      };
    } else {
      const written = await writeUserMessage({
        endpoint: this.settings.simulator,
        messages: openingMessages(scenario, this.settings.initialEmotion),
        seed: callSeed(this.spec.seed, 0, 'opening'),
      });
      this.count(written.latencyMs);
      this.tokens.simulatorPrompt += written.usage.prompt;
      this.tokens.simulatorCompletion += written.usage.completion;
      this.opening = {
        text: written.text,
        writtenBySimulator: true,
        latencyMs: written.latencyMs,
        usage: written.usage,
      };
    }
    this.history.push({ role: 'user', content: this.opening.text });
  }

  private count(latencyMs: number): void {
    this.calls++;
    this.llmMs += latencyMs;
  }

  /** The policy's turn; ends the dialogue on a malformed output. */
  async policyStep(): Promise<void> {
    this.turn++;
    const promptMessages = policyMessages(this.systemPrompt, this.history);
    const policyTurn = await generatePolicyTurn({
      endpoint: this.settings.policy,
      messages: promptMessages,
      think: this.settings.think,
      seed: callSeed(this.spec.seed, this.turn, 'policy'),
    });
    this.count(policyTurn.latencyMs);
    this.tokens.policyPrompt += policyTurn.usage.prompt;
    this.tokens.policyCompletion += policyTurn.usage.completion;
    this.turns.push({
      turn: this.turn,
      userMessage: this.history[this.history.length - 1]?.content ?? '',
      promptMessages,
      policy: policyTurn,
      analysis: null,
      emotionBefore: this.emotion,
      emotionAfter: this.emotion,
      state: emotionState(this.emotion),
      userReply: null,
    });
    if (policyTurn.malformed) this.outcome = 'malformed';
  }

  /** SAGE's two simulator calls: analysis, then (unless the dialogue ends) the user's reply. */
  async simulatorStep(): Promise<void> {
    const record = this.turns[this.turns.length - 1]!;
    const { scenario } = this.spec;
    const analysis = await analyzeAssistantReply({
      endpoint: this.settings.simulator,
      messages: analysisMessages(scenario, this.history, record.policy.reply, this.emotion),
      seed: callSeed(this.spec.seed, this.turn, 'analysis'),
    });
    this.count(analysis.latencyMs);
    this.tokens.simulatorPrompt += analysis.usage.prompt;
    this.tokens.simulatorCompletion += analysis.usage.completion;
    this.emotion = emotionAfterTurn(this.emotion, analysis.analysis.emotionChange);
    record.analysis = analysis;
    record.emotionAfter = this.emotion;
    record.state = emotionState(this.emotion);
    this.history.push({ role: 'assistant', content: record.policy.reply });
    this.outcome = outcomeAfterAnalysis(this.emotion, this.turn, this.settings.maxTurns);
    if (this.outcome !== null) return;
    const reply = await writeUserMessage({
      endpoint: this.settings.simulator,
      messages: replyMessages(scenario, this.history, analysis.analysis, this.emotion, false),
      seed: callSeed(this.spec.seed, this.turn, 'reply'),
    });
    this.count(reply.latencyMs);
    this.tokens.simulatorPrompt += reply.usage.prompt;
    this.tokens.simulatorCompletion += reply.usage.completion;
    record.userReply = reply;
    this.history.push({ role: 'user', content: reply.text });
    if (isGoodbye(reply.text, scenario.language)) this.outcome = 'goodbye';
  }

  async save(store: ArtifactStore): Promise<string> {
    const outcome = this.outcome ?? 'turn-limit';
    const transcript: Transcript = {
      kind: 'attune.rollout',
      version: 1,
      rolloutId: this.spec.rolloutId,
      runName: 'bench-orchestration',
      step: null,
      scenario: this.spec.scenario,
      policyModel: this.settings.policy.model,
      simulatorModel: this.settings.simulator.model,
      think: this.settings.think,
      seed: this.spec.seed,
      initialEmotion: this.settings.initialEmotion,
      maxTurns: this.settings.maxTurns,
      opening: this.opening!,
      turns: this.turns,
      outcome,
      finalEmotion: this.emotion,
      reward: rewardFor(outcome, this.emotion),
      tokens: this.tokens,
      startedAt: this.startedAt,
      finishedAt: new Date().toISOString(),
    };
    return createArtifactActivities(store).saveTranscript(transcript);
  }
}

export interface LoopResult {
  wallS: number;
  calls: number;
  turns: TurnTiming[];
}

/**
 * (a) plain: each dialogue is an async loop, all C of them at once, no Temporal. Turn boundaries
 * match those the benchmark reads from the workflow histories: dialogue start, each policy call,
 * the transcript write.
 */
export async function runPlain(
  specs: DialogueSpec[],
  settings: RolloutSettings,
  store: ArtifactStore,
): Promise<LoopResult> {
  const turns: TurnTiming[] = [];
  let calls = 0;
  const started = performance.now();
  await Promise.all(
    specs.map(async (spec) => {
      const d = new Dialogue(spec, settings);
      let mark = performance.now();
      let callsAt = 0;
      let llmAt = 0;
      const boundary = () => {
        const now = performance.now();
        if (d.turn > 0) turns.push({ ms: now - mark, calls: d.calls - callsAt, llmMs: d.llmMs - llmAt });
        mark = now;
        callsAt = d.calls;
        llmAt = d.llmMs;
      };
      await d.open();
      while (!d.done) {
        boundary();
        await d.policyStep();
        if (d.done) break;
        await d.simulatorStep();
      }
      boundary();
      await d.save(store);
      calls += d.calls;
    }),
  );
  return { wallS: (performance.now() - started) / 1000, calls, turns };
}

export interface ReferenceResult extends LoopResult {
  /** Wall time actually measured (the extrapolated part excluded). */
  measuredS: number;
  /** Share of the sequential simulator calls that ran timed, one after another. */
  sequentialMeasuredFraction: number;
  extrapolated: boolean;
}

/**
 * (b) shaped like the reference RLVER rollout: per turn, all live dialogues' policy turns as one
 * concurrent batch, then the simulator (analysis + reply) for each live dialogue, one after another.
 *
 * The sequential part grows as C x 2 x L per turn (over an hour at L = 1 s, C = 256), so it is
 * timed for as many dialogues as `budgetS` allows (spread evenly over the timed turns, at least one
 * dialogue per turn); the other live dialogues of that turn are then advanced concurrently, untimed,
 * so later turns see the same state, and their sequential time is counted as the measured mean per
 * dialogue of that turn. With `sparse` (used at high latency, where one timed dialogue already costs
 * 2 L per turn), only the first, middle and last turns are timed so; in the others every dialogue is
 * advanced concurrently and counted at the mean of the last timed turn. `extrapolated` says whether
 * any of this happened. Nothing else runs while calls are being timed.
 */
export async function runReference(
  specs: DialogueSpec[],
  settings: RolloutSettings,
  store: ArtifactStore,
  budgetS: number,
  sparse = false,
): Promise<ReferenceResult> {
  const dialogues = specs.map((spec) => new Dialogue(spec, settings));
  let measuredMs = 0;
  let estimatedMs = 0;
  let sequentialTotal = 0;
  let sequentialTimed = 0;
  const turns: TurnTiming[] = [];
  let t = performance.now();
  await Promise.all(dialogues.map((d) => d.open()));
  measuredMs += performance.now() - t;
  const timedTurns = sparse ? new Set([1, Math.ceil(settings.maxTurns / 2), settings.maxTurns]) : null;
  const perTurnBudgetMs = (budgetS * 1000) / (timedTurns ? timedTurns.size : settings.maxTurns);
  let perDialogueMs = 0;
  for (let turn = 1; ; turn++) {
    const live = dialogues.filter((d) => !d.done);
    if (live.length === 0) break;
    const callsBefore = live.reduce((n, d) => n + d.calls, 0);
    t = performance.now();
    await Promise.all(live.map((d) => d.policyStep()));
    const batchMs = performance.now() - t;
    const toSimulate = live.filter((d) => !d.done);
    let timed = 0;
    let sequentialMs = 0;
    if (timedTurns && !timedTurns.has(turn)) {
      await Promise.all(toSimulate.map((d) => d.simulatorStep()));
    } else {
      t = performance.now();
      for (const d of toSimulate) {
        if (timed > 0 && performance.now() - t >= perTurnBudgetMs) break;
        await d.simulatorStep();
        timed++;
      }
      sequentialMs = performance.now() - t;
      const rest = toSimulate.slice(timed);
      if (rest.length > 0) await Promise.all(rest.map((d) => d.simulatorStep()));
    }
    if (timed > 0) perDialogueMs = sequentialMs / timed;
    // Untimed dialogues (all of them in a turn `sparse` skips) at the last measured mean.
    const turnEstimatedMs = perDialogueMs * (toSimulate.length - timed);
    measuredMs += batchMs + sequentialMs;
    estimatedMs += turnEstimatedMs;
    sequentialTotal += toSimulate.length;
    sequentialTimed += timed;
    turns.push({
      ms: batchMs + sequentialMs + turnEstimatedMs,
      calls: live.reduce((n, d) => n + d.calls, 0) - callsBefore,
      llmMs: 0,
    });
  }
  t = performance.now();
  await Promise.all(dialogues.map((d) => d.save(store)));
  measuredMs += performance.now() - t;
  return {
    wallS: (measuredMs + estimatedMs) / 1000,
    measuredS: measuredMs / 1000,
    calls: dialogues.reduce((n, d) => n + d.calls, 0),
    turns,
    sequentialMeasuredFraction: sequentialTotal === 0 ? 1 : sequentialTimed / sequentialTotal,
    extrapolated: sequentialTimed < sequentialTotal,
  };
}
