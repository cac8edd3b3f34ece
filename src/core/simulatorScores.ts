import type { RewardEnvironment } from './evaluationManifest.js';
import { scoreGroup, type EvaluationEntry, type ScoreGroup } from './evaluationReport.js';
import type { Interval } from './evaluationStatistics.js';

/** The name the training simulator (`simulator` in the config) has among an evaluation's simulators. */
export const TRAINING_SIMULATOR = 'training';

/**
 * One simulator's Sentient score of an evaluation's dialogues. A policy that learned its training
 * simulator's quirks scores well there and worse with a held-out one: `gap` shows it.
 */
export interface SimulatorScore extends ScoreGroup {
  name: string;
  /** Whether this is the training simulator; its dialogues are the report's own `results`. */
  training: boolean;
  /** What this simulator's scores were measured in: endpoint, model (as served), prompts, protocol. */
  environment: RewardEnvironment;
  /** Dialogues that failed to run: reported, excluded from the score. */
  failed: number;
  /** The training simulator's score minus this one's: 0 for the training simulator itself. */
  gap: number;
  /** 95 % bootstrap interval of the score; added where the report is stored. */
  ci?: Interval;
  /** A held-out simulator's dialogues (the training simulator's are the report's `results`). */
  results?: EvaluationEntry[];
}

/** A simulator's pass over the evaluation's dialogues, before its score is counted. */
export interface SimulatorPass {
  name: string;
  environment: RewardEnvironment;
  results: EvaluationEntry[];
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** Every simulator's score (the report's arithmetic), the training simulator's first, with each one's gap to it. */
export function simulatorScores(training: SimulatorPass, heldOut: readonly SimulatorPass[]): SimulatorScore[] {
  const base = scoreGroup(training.results);
  const counted = (pass: SimulatorPass, isTraining: boolean): SimulatorScore => {
    const group = isTraining ? base : scoreGroup(pass.results);
    return {
      name: pass.name,
      training: isTraining,
      environment: pass.environment,
      ...group,
      failed: pass.results.filter((e) => e.status === 'failed').length,
      gap: round(base.score - group.score),
      ...(isTraining ? {} : { results: pass.results }),
    };
  };
  return [counted(training, true), ...heldOut.map((pass) => counted(pass, false))];
}
