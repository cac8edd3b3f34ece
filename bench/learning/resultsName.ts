import type { RuleBasedTask } from '../../src/ruleuser/server.js';
import { defaultResultsFile } from '../resultsFile.js';
import type { PolicyServer } from './vllmPolicy.js';

/** training.seed and training.dialogue.maxTurns of the benchmark's runs when --seed and --turns are not given. */
export const DEFAULT_SEED = 7;
export const DEFAULT_TURNS = 2;

/** What decides which runs bench:learning makes, and so which figures its results file holds. */
export interface LearningMode {
  quick: boolean;
  /** Only the runs against this simulated user (--simulator); undefined: all. */
  simulator?: 'rule' | 'local';
  /** Only this algorithm's runs (--only); undefined: all. */
  only?: 'grpo' | 'ppo';
  /** --turns when given. */
  turns: number | null;
  stalenesses: readonly number[];
  /** --step-dialogues when given (default: planned alone). */
  stepDialogues?: readonly string[];
  credits: readonly string[];
  /** --seed when given. */
  seed: number | null;
  /** --task when given: the rule-based user's rule (default brevity). */
  task?: RuleBasedTask;
  /** --policy-server when given: where the runs sample (default: the trainer alone). */
  policyServers?: readonly PolicyServer[];
}

/**
 * The mode's default results file: bench/results/learning-quick.json for `--quick`,
 * learning-smollm2.json without it, and a suffix for each option that changes the set of runs
 * (`--quick --staleness 0,1`: learning-quick-staleness-0-1.json). Two invocations that make other
 * runs never share a default file; a rerun of the same mode (more steps, say) replaces its own.
 */
export function learningResultsFile(mode: LearningMode): string {
  const parts = ['learning', mode.quick ? 'quick' : 'smollm2'];
  if (mode.simulator) parts.push(mode.simulator);
  if (mode.only) parts.push(mode.only);
  if (mode.turns !== null && mode.turns !== DEFAULT_TURNS) parts.push('turns', String(mode.turns));
  if (mode.stalenesses.length !== 1 || mode.stalenesses[0] !== 0)
    parts.push('staleness', ...mode.stalenesses.map(String));
  if (mode.stepDialogues !== undefined && !(mode.stepDialogues.length === 1 && mode.stepDialogues[0] === 'planned'))
    parts.push('step-dialogues', ...mode.stepDialogues.map((d) => (d === 'firstFinished' ? 'ff' : d)));
  if (mode.credits.length !== 1 || mode.credits[0] !== 'final') parts.push('credit', ...mode.credits);
  if (mode.task !== undefined && mode.task !== 'brevity') parts.push(mode.task);
  if (mode.policyServers !== undefined && !(mode.policyServers.length === 1 && mode.policyServers[0] === 'trainer'))
    parts.push('policy', ...mode.policyServers);
  if (mode.seed !== null && mode.seed !== DEFAULT_SEED) parts.push('seed', String(mode.seed));
  const [bench, ...rest] = parts;
  return defaultResultsFile(bench!, rest.join('-'));
}
