import type { RolloutSummary, Transcript } from '../../core/transcript.js';
import { dialoguePhrases } from '../../core/dialogueKeys.js';

function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((line) => `${prefix}${line}`)
    .join('\n');
}

/** A readable dialogue: each message, then the user's emotion after each assistant turn. */
export function renderTranscript(t: Transcript): string {
  const lines: string[] = [];
  const name = t.scenario.persona.name ?? 'user';
  lines.push(
    `Scenario ${t.scenario.id} (${t.scenario.goalType}, ${t.scenario.personality}) · policy ${t.policyModel} · simulator ${t.simulatorModel}`,
  );
  const settings = dialoguePhrases(t).join('; ');
  lines.push(`${settings.charAt(0).toUpperCase()}${settings.slice(1)}`);
  lines.push('');
  lines.push(indent(t.opening.text, `[${name}] `));
  for (const turn of t.turns) {
    if (turn.policy.thinking) lines.push(indent(turn.policy.thinking, '  (thinking) '));
    lines.push(
      indent(
        turn.policy.malformed
          ? `<malformed: ${turn.policy.problem ?? 'unparseable'}> ${turn.policy.raw}`
          : turn.policy.reply,
        '[assistant] ',
      ),
    );
    if (turn.analysis) {
      const change = turn.analysis.analysis.emotionChange;
      lines.push(
        `    emotion ${turn.emotionBefore} -> ${turn.emotionAfter} (${change >= 0 ? '+' : ''}${change}, state ${turn.state})  inner: ${turn.analysis.analysis.innerThoughts}`,
      );
    }
    if (turn.userReply) lines.push(indent(turn.userReply.text, `[${name}] `));
  }
  lines.push('');
  lines.push(
    `Outcome: ${t.outcome} · final emotion ${t.finalEmotion} · reward ${t.reward.toFixed(2)} · ${t.turns.length} turns`,
  );
  return lines.join('\n');
}

export function renderSummaryLine(s: RolloutSummary): string {
  return `${s.scenarioId}: ${s.outcome}, final emotion ${s.finalEmotion}, ${s.turns} turns, emotions ${s.emotions.join(' > ')}`;
}
