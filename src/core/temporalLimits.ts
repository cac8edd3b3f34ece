/**
 * Temporal's hard limits, and the estimates that keep a configuration inside them. A dialogue's
 * turns travel as payloads (a turn's calls, its record, and transcript parts of a few turns) and
 * all land in the rollout's history; a step's rollouts land in the training history, which
 * continues as new when the server suggests it, between or within steps.
 */
export const TEMPORAL_LIMITS = {
  /** A single payload fails above this. */
  payloadBytes: 2 * 1024 * 1024,
  /** A workflow history fails above this size. */
  historyBytes: 50 * 1024 * 1024,
  /** A workflow history fails above this many events. */
  historyEvents: 51_200,
  /** Pending child workflows of one workflow. */
  pendingChildren: 2_000,
} as const;

/** A token is at most this many bytes of text (UTF-8; Chinese characters are 3 bytes). */
const BYTES_PER_TOKEN = 4;
/** A sampled policy token's id and log-probability as a transcript records them (JSON numbers). */
const BYTES_PER_SAMPLED_TOKEN = 32;
/** History events one rollout child costs its parent: initiated, started, completed, and workflow tasks. */
const EVENTS_PER_CHILD = 6;
/**
 * A step's dialogues must fit half of one history even when it cannot continue as new within the
 * step (its carried progress too big for one payload): then every dialogue lands in one history.
 */
export const MAX_DIALOGUES_PER_STEP = Math.floor(TEMPORAL_LIMITS.historyEvents / 2 / EVENTS_PER_CHILD);
/** The payloads of a rollout carry the dialogue so far this many times per turn: three calls' prompts and the turn's record. */
const DIALOGUE_COPIES_PER_TURN = 4;
/**
 * Turns written to the artifact store before the dialogue ends, once their size reaches this, so
 * that no payload carries a whole transcript (a transcript grows with the square of its turns).
 * A quarter of Temporal's payload limit leaves room for the turn that crosses it.
 */
export const TRANSCRIPT_PART_BYTES = TEMPORAL_LIMITS.payloadBytes / 4;
/** A part holds up to TRANSCRIPT_PART_BYTES plus the turn that crosses it: the rest of a payload is a turn's. */
const LARGEST_TURN_BYTES = TEMPORAL_LIMITS.payloadBytes - TRANSCRIPT_PART_BYTES;

/**
 * Upper estimate of a transcript's size: every turn records the prompts it sent, and a turn's
 * prompt holds the dialogue so far, so the size grows with the square of the turns.
 */
export function transcriptBytesEstimate(maxTurns: number, policyMaxTokens: number, simulatorMaxTokens: number): number {
  const perMessagePair = (policyMaxTokens + simulatorMaxTokens) * BYTES_PER_TOKEN;
  return (perMessagePair * maxTurns * (maxTurns + 1)) / 2 + maxTurns * policyMaxTokens * BYTES_PER_SAMPLED_TOKEN;
}

/**
 * Upper estimate of the last turn's record: the dialogue so far, the turn's own messages, and the
 * ids and log-probabilities of the policy's sampled tokens.
 */
export function turnBytesEstimate(maxTurns: number, policyMaxTokens: number, simulatorMaxTokens: number): number {
  return (
    (policyMaxTokens + simulatorMaxTokens) * BYTES_PER_TOKEN * (maxTurns + 1) +
    policyMaxTokens * BYTES_PER_SAMPLED_TOKEN
  );
}

export interface DialogueSize {
  /** The config key that sets the turn limit, for the message. */
  turnsKey: string;
  maxTurns: number;
  policyMaxTokens: number;
  simulatorMaxTokens: number;
}

function megabytes(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

/** Why a dialogue of this size could not be carried by Temporal, or null when it can. */
export function dialogueSizeProblem(size: DialogueSize): string | null {
  const what = `${size.turnsKey}=${size.maxTurns} with policy.maxTokens=${size.policyMaxTokens} and simulator.maxTokens=${size.simulatorMaxTokens}`;
  const turn = turnBytesEstimate(size.maxTurns, size.policyMaxTokens, size.simulatorMaxTokens);
  if (turn > LARGEST_TURN_BYTES)
    return `${what}: one turn could reach ${megabytes(turn)} MB, over the ${megabytes(LARGEST_TURN_BYTES)} MB a turn may take of Temporal's 2 MB payload limit (a turn's prompt holds the dialogue so far); lower the turns or maxTokens`;
  const history =
    transcriptBytesEstimate(size.maxTurns, size.policyMaxTokens, size.simulatorMaxTokens) * DIALOGUE_COPIES_PER_TURN;
  if (history <= TEMPORAL_LIMITS.historyBytes) return null;
  return `${what}: a rollout's history could reach ${megabytes(history)} MB, over Temporal's 50 MB history size limit (every turn's calls carry the dialogue so far); lower the turns or maxTokens`;
}

/** Why a step of this many dialogues could not fit one history, or null when it can. */
export function stepSizeProblem(scenariosPerStep: number, samplesPerScenario: number): string | null {
  const dialogues = scenariosPerStep * samplesPerScenario;
  if (dialogues <= MAX_DIALOGUES_PER_STEP) return null;
  return `training.scenariosPerStep x samplesPerScenario = ${dialogues} dialogues per step: over ${MAX_DIALOGUES_PER_STEP}, a step's history could pass Temporal's ${TEMPORAL_LIMITS.historyEvents}-event limit (about ${EVENTS_PER_CHILD} events per dialogue, all in one history when the step's progress is too big to carry across continue-as-new)`;
}
