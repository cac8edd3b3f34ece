import type { Scenario } from '../../src/core/scenario.js';
import type { FakeOpenAIServer } from '../../test/support/fakeOpenAI.js';
import type { Child } from './childProcess.js';
import type { DialogueSpec } from './loops.js';
import type { Options } from './options.js';

/** What every cell of a run shares: the options, the fake LLM server, the loop process, the workflow bundle. */
export interface RunContext {
  options: Options;
  fake: FakeOpenAIServer;
  /** TCP connections the fake server has accepted so far. */
  connections: () => number;
  loops: Child;
  scenarios: Scenario[];
  bundleCodePath: string;
  bundleSourceMapPath: string;
  /** Worker processes still running, for the cleanup after an error or Ctrl-C. */
  children: Set<Child>;
  workdir: string;
}

/** One point of the grid: the fake LLM's latency per call and the dialogues at once. */
export interface Cell {
  latencyMs: number;
  concurrency: number;
}

export function specsFor(scenarios: Scenario[], count: number, tag: string): DialogueSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    rolloutId: `${tag}-${i}`,
    scenario: scenarios[i % scenarios.length]!,
    seed: i + 1,
  }));
}
