/**
 * What an operator reads on a rollout's timeline in the Temporal UI: a one-line summary on each
 * activity the rollout schedules, and the rollout's current details. An activity's summary is fixed
 * when it is scheduled, so it names what is known then: the turn, and the emotion so far.
 */

function signed(change: number): string {
  return change > 0 ? `+${change}` : String(change);
}

export function openingSummary(): string {
  return 'opening · user message';
}

export function policyReplySummary(turn: number): string {
  return `turn ${turn} · policy reply`;
}

export function analysisSummary(turn: number, emotion: number): string {
  return `turn ${turn} · analysis of the reply (emotion ${emotion})`;
}

/** The user answers after the analysis moved the emotion from `before` to `after`. */
export function userReplySummary(turn: number, before: number, after: number): string {
  return `turn ${turn} · user reply (analysis: ${before} → ${after}, ${signed(after - before)})`;
}

/** The user's answer inside a turn activity, which reports no emotions until the turn is done. */
export function userReplyInTurnSummary(turn: number): string {
  return `turn ${turn} · user reply`;
}

/** A local turn's read or write of its journal of finished calls (in the artifact store). */
/** The opening's record in the turn journal (local turns), where a dialogue waits when the store fails. */
export function openingJournalSummary(): string {
  return 'opening · turn journal';
}

export function turnJournalSummary(turn: number): string {
  return `turn ${turn} · turn journal`;
}

/** `activityPer: turn`: one activity plays the policy's reply, the analysis and the user's answer. */
export function wholeTurnSummary(turn: number, emotion: number): string {
  return `turn ${turn} · policy reply, analysis, user reply (emotion ${emotion})`;
}

export function scenarioLoadSummary(scenarioId: string): string {
  return `scenario ${scenarioId}`;
}

export function transcriptPartSummary(turns: number): string {
  return `transcript part · up to turn ${turns}`;
}

export function transcriptSummary(turns: number, outcome: string, finalEmotion: number): string {
  return `transcript · ${turns} turn${turns === 1 ? '' : 's'}, ${outcome}, final emotion ${finalEmotion}`;
}

export interface RolloutDetailsInput {
  scenarioId: string;
  turn: number;
  maxTurns: number;
  emotions: readonly number[];
  phase: string;
  outcome: string | null;
}

/** The rollout's current details (Markdown, shown above the UI's timeline): where the dialogue is and how the emotion moved. */
export function rolloutDetails(input: RolloutDetailsInput): string {
  const emotion = input.emotions[input.emotions.length - 1];
  const lines = [
    `**scenario** ${input.scenarioId}`,
    `**turn** ${input.turn} of ${input.maxTurns} · **phase** ${input.phase}`,
    `**emotion** ${emotion ?? '?'} (${input.emotions.join(' → ')})`,
  ];
  if (input.outcome) lines.push(`**outcome** ${input.outcome}`);
  return lines.join('\n');
}
