/**
 * Temporal's hard limits, and the estimates that keep a configuration inside them. A dialogue's
 * transcript travels as one payload, and a step's rollouts all land in one training history
 * (a run continues as new only between steps), so both are bounded before anything starts.
 */
export const TEMPORAL_LIMITS = {
  /** A single payload fails above this. */
  payloadBytes: 2 * 1024 * 1024,
  /** A workflow history fails above this many events. */
  historyEvents: 51_200,
  /** Pending child workflows of one workflow. */
  pendingChildren: 2_000,
} as const;

/** A token is at most this many bytes of text (UTF-8; Chinese characters are 3 bytes). */
const BYTES_PER_TOKEN = 4;
/** History events one rollout child costs its parent: initiated, started, completed, and workflow tasks. */
const EVENTS_PER_CHILD = 6;
export const MAX_DIALOGUES_PER_STEP = Math.floor(TEMPORAL_LIMITS.historyEvents / 2 / EVENTS_PER_CHILD);

/**
 * Upper estimate of a transcript's size: every turn records the prompts it sent, and a turn's
 * prompt holds the dialogue so far, so the size grows with the square of the turns.
 */
export function transcriptBytesEstimate(maxTurns: number, policyMaxTokens: number, simulatorMaxTokens: number): number {
  const perMessagePair = (policyMaxTokens + simulatorMaxTokens) * BYTES_PER_TOKEN;
  return (perMessagePair * maxTurns * (maxTurns + 1)) / 2;
}

export interface DialogueSize {
  /** The config key that sets the turn limit, for the message. */
  turnsKey: string;
  maxTurns: number;
  policyMaxTokens: number;
  simulatorMaxTokens: number;
}

/** Why a dialogue of this size could not be carried by Temporal, or null when it can. */
export function dialogueSizeProblem(size: DialogueSize): string | null {
  const bytes = transcriptBytesEstimate(size.maxTurns, size.policyMaxTokens, size.simulatorMaxTokens);
  if (bytes <= TEMPORAL_LIMITS.payloadBytes) return null;
  const mb = (bytes / (1024 * 1024)).toFixed(1);
  return `${size.turnsKey}=${size.maxTurns} with policy.maxTokens=${size.policyMaxTokens} and simulator.maxTokens=${size.simulatorMaxTokens}: a transcript could reach ${mb} MB, over Temporal's 2 MB payload limit (a transcript is one payload); lower the turns or maxTokens`;
}

/** Why a step of this many dialogues could not fit one history, or null when it can. */
export function stepSizeProblem(scenariosPerStep: number, samplesPerScenario: number): string | null {
  const dialogues = scenariosPerStep * samplesPerScenario;
  if (dialogues <= MAX_DIALOGUES_PER_STEP) return null;
  return `training.scenariosPerStep x samplesPerScenario = ${dialogues} dialogues per step: over ${MAX_DIALOGUES_PER_STEP}, a step's history could pass Temporal's ${TEMPORAL_LIMITS.historyEvents}-event limit (about ${EVENTS_PER_CHILD} events per dialogue; a run continues as new between steps only)`;
}
