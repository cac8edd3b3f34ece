import { ApplicationFailure } from '@temporalio/common';
import { dialogueDifficulty } from './difficulty.js';
import { policyStep, simulatorStep, type DialogueCalls, type PlayedTurn, type TurnInput } from './dialogueTurn.js';
import { defaultPolicySystemPrompt } from './prompts/policy.js';
import { openingMessages } from './prompts/simulator.js';
import type { RolloutSettings } from './rolloutSettingsSchema.js';
import type { Scenario } from './scenario.js';
import { callSeed } from './seeds.js';
import { rewardFor, type Outcome } from './termination.js';
import {
  addRateLimitWait,
  addTurnUsage,
  emptyTotals,
  type ChatMessage,
  type Transcript,
  type TokenTotals,
  type TranscriptTurn,
} from './transcript.js';

/** What a dialogue is played from; none of it changes while it runs. */
export interface DialogueSetup {
  settings: RolloutSettings;
  scenario: Scenario;
  seed: number;
}

/** Where a transcript comes from and when it ran: what the dialogue itself does not know. */
export interface TranscriptOrigin {
  rolloutId: string;
  runName: string | null;
  step: number | null;
  startedAt: string;
  finishedAt: string;
}

/** Called around each turn by `Dialogue.playToEnd`, e.g. to report progress or to time turns. */
export interface TurnHooks {
  beforeTurn?(input: TurnInput): void;
  afterTurn?(played: PlayedTurn): void;
}

/** A dialogue that has ended: only such a dialogue has a transcript. */
export interface EndedDialogue extends Dialogue {
  readonly outcome: Outcome;
}

/**
 * One SAGE dialogue between the policy and the simulated user: the opening, the turns until the
 * dialogue ends, and the transcript. It makes no LLM call of its own; each step takes the calls it
 * needs, so the rollout workflow (calls as activities, or one activity per turn) and the
 * benchmark's loops without Temporal play the same dialogue.
 */
export class Dialogue {
  readonly systemPrompt: string;
  /** The visible dialogue: user messages and assistant replies (never the assistant's thinking). */
  readonly history: ChatMessage[] = [];
  readonly turns: TranscriptTurn[] = [];
  readonly tokens: TokenTotals = emptyTotals();
  /** The initial emotion, then the emotion after each analysed turn. */
  readonly emotions: number[];
  private opening: Transcript['opening'] | null = null;
  private currentEmotion: number;
  private ending: Outcome | null = null;
  /** A turn between `policyStep` and `simulatorStep`. */
  private halfTurn: { input: TurnInput; record: TranscriptTurn } | null = null;

  constructor(readonly setup: DialogueSetup) {
    const { settings, scenario } = setup;
    this.systemPrompt = settings.policySystemPrompt ?? defaultPolicySystemPrompt(scenario.language, settings.think);
    this.currentEmotion = settings.initialEmotion;
    this.emotions = [settings.initialEmotion];
  }

  get emotion(): number {
    return this.currentEmotion;
  }

  get outcome(): Outcome | null {
    return this.ending;
  }

  isEnded(): this is EndedDialogue {
    return this.ending !== null;
  }

  /** The user's first message: the scenario's own, or one the simulator writes (profiles without one). */
  async open(writeUserMessage: DialogueCalls['writeUserMessage']): Promise<void> {
    const { settings, scenario, seed } = this.setup;
    if (scenario.firstMessage) {
      this.opening = {
        text: scenario.firstMessage,
        writtenBySimulator: false,
        latencyMs: 0,
        usage: { prompt: 0, completion: 0 },
      };
    } else {
      const written = await writeUserMessage({
        endpoint: settings.simulator,
        messages: openingMessages(scenario, settings.initialEmotion),
        seed: callSeed(seed, 0, 'opening'),
      });
      this.tokens.simulatorPrompt += written.usage.prompt;
      this.tokens.simulatorCompletion += written.usage.completion;
      addRateLimitWait(this.tokens, 'simulator', written.usage);
      this.opening = {
        text: written.text,
        writtenBySimulator: true,
        latencyMs: written.latencyMs,
        usage: written.usage,
      };
    }
    this.history.push({ role: 'user', content: this.opening.text });
  }

  /** What the next turn is played from (with its own copy of the history). */
  nextTurn(): TurnInput {
    if (this.opening === null)
      throw ApplicationFailure.nonRetryable('the dialogue has not been opened', 'DialogueOutOfOrder');
    if (this.ending !== null)
      throw ApplicationFailure.nonRetryable(`the dialogue has ended (${this.ending})`, 'DialogueOutOfOrder');
    const { settings, scenario, seed } = this.setup;
    return {
      settings,
      scenario,
      systemPrompt: this.systemPrompt,
      history: [...this.history],
      emotion: this.currentEmotion,
      turn: this.turns.length + 1,
      seed,
    };
  }

  /** Takes in a turn played from `nextTurn()`: its record, the emotion, the new messages and whether the dialogue ends. */
  record(played: PlayedTurn): void {
    this.turns.push(played.record);
    addTurnUsage(this.tokens, played.record);
    if (played.record.analysis) this.emotions.push(played.emotion);
    this.currentEmotion = played.emotion;
    this.ending = played.outcome;
    this.history.push(...played.messages);
  }

  /** Plays turns with `play` until the dialogue ends. */
  async playToEnd(play: (input: TurnInput) => Promise<PlayedTurn>, hooks: TurnHooks = {}): Promise<EndedDialogue> {
    while (!this.isEnded()) {
      const input = this.nextTurn();
      hooks.beforeTurn?.(input);
      const played = await play(input);
      this.record(played);
      hooks.afterTurn?.(played);
    }
    return this;
  }

  /**
   * A turn in two halves, for loops that interleave dialogues between them: the policy's reply
   * (a malformed one ends the dialogue here), then `simulatorStep`.
   */
  async policyStep(calls: Pick<DialogueCalls, 'generatePolicyTurn'>): Promise<void> {
    if (this.halfTurn !== null)
      throw ApplicationFailure.nonRetryable('the policy has already replied in this turn', 'DialogueOutOfOrder');
    const input = this.nextTurn();
    const replied = await policyStep(calls, input);
    if (replied.ended) this.record(replied.ended);
    else this.halfTurn = { input, record: replied.record };
  }

  /** The simulated user's half of the turn `policyStep` began. */
  async simulatorStep(calls: Pick<DialogueCalls, 'analyzeAssistantReply' | 'writeUserMessage'>): Promise<void> {
    const half = this.halfTurn;
    if (half === null) throw ApplicationFailure.nonRetryable('no policy reply to answer', 'DialogueOutOfOrder');
    this.halfTurn = null;
    this.record(await simulatorStep(calls, half.input, half.record));
  }

  transcript(this: EndedDialogue, origin: TranscriptOrigin): Transcript {
    const { settings, scenario, seed } = this.setup;
    return {
      kind: 'attune.rollout',
      version: 1,
      rolloutId: origin.rolloutId,
      runName: origin.runName,
      step: origin.step,
      scenario,
      policyModel: settings.policy.model,
      simulatorModel: settings.simulator.model,
      difficulty: dialogueDifficulty(settings.simulator, scenario),
      think: settings.think,
      seed,
      initialEmotion: settings.initialEmotion,
      maxTurns: settings.maxTurns,
      opening: this.opening!,
      turns: this.turns,
      outcome: this.outcome,
      finalEmotion: this.emotion,
      reward: rewardFor(this.outcome, this.emotion),
      tokens: this.tokens,
      startedAt: origin.startedAt,
      finishedAt: origin.finishedAt,
    };
  }
}
