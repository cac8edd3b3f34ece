import type { EvaluationProgress } from '../../workflows/evaluation.js';
import { formatProgress } from './progress.js';

/** Dialogues that have ended, well or not: a failed dialogue of an evaluation is not run again. */
export const finishedDialogues = (p: EvaluationProgress): number => p.done + p.failed;

/** The redrawn terminal line: the evaluation, a bar of finished dialogues, the ETA, failures and dialogues running. */
export function evaluationProgressBar(evalId: string, p: EvaluationProgress, etaMs: number | null): string {
  const detail = [
    ...(p.failed > 0 ? [`${p.failed} failed`] : []),
    `${p.inFlight} running`,
    ...(p.waiting ? [`${p.waiting} waiting for an operator`] : []),
  ].join(', ');
  return formatProgress({
    label: evalId,
    done: finishedDialogues(p),
    total: p.total,
    unit: 'dialogues',
    etaMs,
    detail,
  });
}

/** The plain log line written whenever the counts change, off a terminal. */
export function evaluationProgressText(p: EvaluationProgress): string {
  const waiting = p.waiting ? `, ${p.waiting} waiting for an operator` : '';
  return `dialogues ${finishedDialogues(p)}/${p.total} finished (${p.failed} failed, ${p.inFlight} running${waiting})`;
}
