import assert from 'node:assert/strict';
import type { Smoke } from './smoke.js';

/** The chaos soak's smoke runs: its default mode, and steps that take the first finished dialogues. */
export const CHAOS_SMOKES: Record<string, Smoke> = {
  chaos: {
    script: 'bench/chaos/main.ts',
    // A kill at a simulator's opening: the opening must be journalled like a turn's calls.
    args: (out) => [
      '--steps',
      '2',
      '--faults',
      '1',
      '--kinds',
      'kill-llm-worker-opening',
      '--timeout',
      '840',
      '--out',
      out,
    ],
    check: (results) => {
      const { injected, invariantsHeld, invariants, calls } = results as {
        injected: number;
        invariantsHeld: boolean;
        invariants: Record<string, unknown>[];
        calls: { answered: number; madeTwice: number; chainFailures: number; superseded: number; transcripts: number };
      };
      assert.equal(injected, 1, 'the planned worker kill landed in the run');
      assert.equal(invariantsHeld, true, JSON.stringify(invariants));
      assert.ok(invariants.length > 0, 'invariants were checked');
      assert.ok(calls.answered > 0 && calls.transcripts === 8, `every call counted: ${JSON.stringify(calls)}`);
      assert.deepEqual([calls.madeTwice, calls.chainFailures, calls.superseded], [0, 0, 0], JSON.stringify(calls));
    },
  },
  // Steps that take the first finished dialogues: no undisturbed twin, exactly-once's checks instead.
  'chaos -- --set training.stepDialogues=firstFinished': {
    script: 'bench/chaos/main.ts',
    args: (out) => [
      ...['--steps', '2', '--faults', '1', '--kinds', 'kill-llm-worker-opening', '--timeout', '840'],
      ...['--set', 'training.stepDialogues=firstFinished', '--set', 'training.maxStaleness=1'],
      ...['--set', 'training.maxInFlight=8', '--out', out],
    ],
    check: (results) => {
      const { injected, invariantsHeld, invariants, calls, planned } = results as {
        injected: number;
        invariantsHeld: boolean;
        invariants: { name: string }[];
        calls: { madeTwice: number; chainFailures: number; superseded: number; transcripts: number };
        planned: { step: number }[];
      };
      assert.equal(injected, 1, 'the planned worker kill landed in the run');
      assert.deepEqual(
        planned.map((f) => f.step),
        [1],
        "the dialogues' fault struck before the last step",
      );
      assert.equal(invariantsHeld, true, JSON.stringify(invariants));
      const names = invariants.map((c) => c.name);
      assert.ok(names.includes('no dialogue trained on twice'), `exactly-once was checked: ${names.join('; ')}`);
      assert.ok(!names.some((n) => n.startsWith('metrics identical')), 'no comparison with an undisturbed run');
      assert.ok(calls.transcripts >= 8, `every trained dialogue's transcript counted: ${JSON.stringify(calls)}`);
      assert.deepEqual([calls.madeTwice, calls.chainFailures, calls.superseded], [0, 0, 0], JSON.stringify(calls));
    },
  },
};
