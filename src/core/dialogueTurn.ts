import { dialogueDifficulty } from './difficulty.js';
import { emotionAfterTurn, emotionState } from './emotion.js';
import { analysisMessages, replyMessages } from './prompts/simulator.js';
import { policyMessages } from './prompts/policy.js';
import type { EndpointCall, RolloutSettings, SimulatorCall } from './rolloutSettingsSchema.js';
import type { Scenario } from './scenario.js';
import { callSeed } from './seeds.js';
import { isGoodbye, outcomeAfterAnalysis, type Outcome } from './termination.js';
import type { AnalysisResult, ChatMessage, PolicyTurnResult, TranscriptTurn, UserMessageResult } from './transcript.js';

export interface PolicyTurnInput {
  endpoint: EndpointCall;
  messages: ChatMessage[];
  think: boolean;
  seed: number;
}

export interface SimulatorCallInput {
  endpoint: SimulatorCall;
  messages: ChatMessage[];
  seed: number;
}

/** The three LLM calls of a turn, however they run: activities, local activities, or plain functions inside one turn activity. */
export interface DialogueCalls {
  generatePolicyTurn(input: PolicyTurnInput): Promise<PolicyTurnResult>;
  analyzeAssistantReply(input: SimulatorCallInput): Promise<AnalysisResult>;
  writeUserMessage(input: SimulatorCallInput): Promise<UserMessageResult>;
}

export interface TurnInput {
  settings: RolloutSettings;
  scenario: Scenario;
  systemPrompt: string;
  /** The visible dialogue so far; its last message is the user's. */
  history: ChatMessage[];
  emotion: number;
  /** 1-based. */
  turn: number;
  seed: number;
}

export interface PlayedTurn {
  record: TranscriptTurn;
  emotion: number;
  outcome: Outcome | null;
  /** What the turn adds to the visible dialogue: the assistant's reply, then the user's answer if the dialogue goes on. */
  messages: ChatMessage[];
}

/** A turn after the policy's reply: its record so far, and the whole turn when that reply ends the dialogue (malformed). */
export interface PolicyReplied {
  record: TranscriptTurn;
  ended: PlayedTurn | null;
}

/** A turn's calls, in the order they are made. */
export const TURN_PHASES = ['policy', 'analysis', 'reply'] as const;
export type TurnPhase = (typeof TURN_PHASES)[number];

/** Where a turn activity can fail, as its failure names it: one of its calls, or its journal (a local turn). */
export const TURN_FAILURE_POINTS = [...TURN_PHASES, 'journal'] as const;
export type TurnFailurePoint = (typeof TURN_FAILURE_POINTS)[number];

type OnPhase = (phase: TurnPhase) => void;

const noPhases: OnPhase = () => {};

/** The first half of a turn: the policy answers the user's last message. */
export async function policyStep(
  calls: Pick<DialogueCalls, 'generatePolicyTurn'>,
  input: TurnInput,
  onPhase: OnPhase = noPhases,
): Promise<PolicyReplied> {
  const { settings, history, turn, seed } = input;
  onPhase('policy');
  const promptMessages = policyMessages(input.systemPrompt, history);
  const policy = await calls.generatePolicyTurn({
    endpoint: settings.policy,
    messages: promptMessages,
    think: settings.think,
    seed: callSeed(seed, turn, 'policy'),
  });
  const record: TranscriptTurn = {
    turn,
    userMessage: history[history.length - 1]?.content ?? '',
    promptMessages,
    policy,
    analysis: null,
    emotionBefore: input.emotion,
    emotionAfter: input.emotion,
    state: emotionState(input.emotion),
    userReply: null,
  };
  const ended: PlayedTurn | null = policy.malformed
    ? { record, emotion: input.emotion, outcome: 'malformed', messages: [] }
    : null;
  return { record, ended };
}

/**
 * The second half of a turn, after a well-formed policy reply (`record`, which it completes): the
 * simulated user analyses the reply (its emotion moves) and, unless the dialogue ends there, writes
 * its next message.
 */
export async function simulatorStep(
  calls: Pick<DialogueCalls, 'analyzeAssistantReply' | 'writeUserMessage'>,
  input: TurnInput,
  record: TranscriptTurn,
  onPhase: OnPhase = noPhases,
): Promise<PlayedTurn> {
  const { settings, scenario, history, turn, seed } = input;
  const difficulty = dialogueDifficulty(settings.simulator, scenario);
  onPhase('analysis');
  const analysis = await calls.analyzeAssistantReply({
    endpoint: settings.simulator,
    messages: analysisMessages(scenario, history, record.policy.reply, input.emotion, difficulty),
    seed: callSeed(seed, turn, 'analysis'),
  });
  const emotion = emotionAfterTurn(input.emotion, analysis.analysis.emotionChange);
  record.analysis = analysis;
  record.emotionAfter = emotion;
  record.state = emotionState(emotion);
  const assistant: ChatMessage = { role: 'assistant', content: record.policy.reply };
  const ended = outcomeAfterAnalysis(emotion, turn, settings.maxTurns);
  if (ended !== null) return { record, emotion, outcome: ended, messages: [assistant] };

  onPhase('reply');
  const reply = await calls.writeUserMessage({
    endpoint: settings.simulator,
    messages: replyMessages(scenario, [...history, assistant], analysis.analysis, emotion, false, difficulty),
    seed: callSeed(seed, turn, 'reply'),
  });
  record.userReply = reply;
  return {
    record,
    emotion,
    outcome: isGoodbye(reply.text, scenario.language) ? 'goodbye' : null,
    messages: [assistant, { role: 'user', content: reply.text }],
  };
}

/**
 * One assistant turn of SAGE: the policy answers, the simulated user analyses the answer (its
 * emotion moves), and unless the dialogue ends there, writes its next message. The same code runs
 * in the workflow (each call an activity) and inside a turn activity, so both give the same transcript.
 */
export async function playTurn(
  calls: DialogueCalls,
  input: TurnInput,
  onPhase: OnPhase = noPhases,
): Promise<PlayedTurn> {
  const replied = await policyStep(calls, input, onPhase);
  return replied.ended ?? simulatorStep(calls, input, replied.record, onPhase);
}

/**
 * A played turn as a turn activity returns it: without its prompt, which the workflow can build
 * again from the turn's input. A turn's prompt is the whole dialogue so far, so carried in every
 * turn's result the history would grow with the square of the turns, and local turns, whose results
 * reach the server together when a workflow task completes, would outgrow a gRPC message.
 */
export function withoutPrompt(played: PlayedTurn): PlayedTurn {
  return { ...played, record: { ...played.record, promptMessages: [] } };
}

/** The turn with its prompt in place again (`withoutPrompt`); a result that kept its prompt is left as it is. */
export function withPrompt(played: PlayedTurn, input: TurnInput): PlayedTurn {
  if (played.record.promptMessages.length > 0) return played;
  return { ...played, record: { ...played.record, promptMessages: policyMessages(input.systemPrompt, input.history) } };
}
