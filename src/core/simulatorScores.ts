import type { RewardEnvironment } from './evaluationManifest.js';
import { scoreGroup, type EvaluationEntry, type SimulatorScore } from './evaluationReport.js';

export type { SimulatorScore } from './evaluationReport.js';

/** The name the training simulator (`simulator` in the config) has among an evaluation's simulators. */
export const TRAINING_SIMULATOR = 'training';

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
