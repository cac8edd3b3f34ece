import type { DialogueSpec, LoopResult, ReferenceResult } from './loops.js';

/** Messages between bench/orchestration/main.ts and its child processes (child.ts). */

export interface WorkersJob {
  address: string;
  namespace: string;
  configSet: string[];
  bundleCodePath: string;
  bundleSourceMapPath: string;
  /** Worker options to override, for experiments (see --worker-option). */
  workerOverrides: { queue: 'all' | 'rollouts' | 'policy' | 'simulator'; key: string; value: unknown }[];
}

export type LoopJob =
  | { kind: 'plain'; id: number; configSet: string[]; maxTurns: number; specs: DialogueSpec[] }
  | {
      kind: 'reference';
      id: number;
      configSet: string[];
      maxTurns: number;
      specs: DialogueSpec[];
      budgetS: number;
      sparse: boolean;
    };

export type ToParent =
  | { kind: 'ready'; pid: number }
  | { kind: 'stopped' }
  | { kind: 'error'; message: string }
  | { kind: 'plain-done'; id: number; result: LoopResult }
  | { kind: 'reference-done'; id: number; result: ReferenceResult };
