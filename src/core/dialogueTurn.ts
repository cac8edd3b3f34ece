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

export type TurnPhase = 'policy' | 'analysis' | 'reply';

/**
 * One assistant turn of SAGE: the policy answers, the simulated user analyses the answer (its
 * emotion moves), and unless the dialogue ends there, writes its next message. The same code runs
 * in the workflow (each call an activity) and inside a turn activity, so both give the same transcript.
 */
export async function playTurn(
  calls: DialogueCalls,
  input: TurnInput,
  onPhase: (phase: TurnPhase) => void = () => {},
): Promise<PlayedTurn> {
  const { settings, scenario, history, turn, seed } = input;
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
  if (policy.malformed) return { record, emotion: input.emotion, outcome: 'malformed', messages: [] };

  onPhase('analysis');
  const analysis = await calls.analyzeAssistantReply({
    endpoint: settings.simulator,
    messages: analysisMessages(scenario, history, policy.reply, input.emotion),
    seed: callSeed(seed, turn, 'analysis'),
  });
  const emotion = emotionAfterTurn(input.emotion, analysis.analysis.emotionChange);
  record.analysis = analysis;
  record.emotionAfter = emotion;
  record.state = emotionState(emotion);
  const assistant: ChatMessage = { role: 'assistant', content: policy.reply };
  const ended = outcomeAfterAnalysis(emotion, turn, settings.maxTurns);
  if (ended !== null) return { record, emotion, outcome: ended, messages: [assistant] };

  onPhase('reply');
  const reply = await calls.writeUserMessage({
    endpoint: settings.simulator,
    messages: replyMessages(scenario, [...history, assistant], analysis.analysis, emotion, false),
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
