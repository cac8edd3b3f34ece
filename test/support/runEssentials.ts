import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';

/**
 * How far the trainer's float metrics of two runs of the same seed may differ, relative to their size.
 * On CPU the trainer is nearly always bit-identical across restarts and kills (its sampler keeps a
 * reply's cache when a step lands mid-reply: trainer/tests/test_sampling.py), but MKL does not promise
 * the same rounding from run to run, and AdamW's first steps divide each gradient by its own size: a
 * last-bit difference in a near-zero gradient becomes a weight change of up to the learning rate. CI
 * once saw an undisturbed run's step-2 grad norm move 1.1e-4 relative that way (4.02310 against
 * 4.02265, rewards and tokens equal). A step applied twice moves the next step's grad norm by about
 * what one step moves it (7 % from step 1 to 2 in the tiny runs), far past this bound. Exactly-once
 * itself is checked on exact values: rollout counts, rewards and token counts here, and the trainer's
 * ledger of applied steps (`trainerLedger`).
 */
export const FLOAT_METRIC_RTOL = 1e-3;

/** What a step applied twice, or a dialogue lost or counted twice, would change in a run's metrics. */
export function essentials(metrics: StepMetricsRecord[]) {
  return metrics.map((m) => ({
    step: m.step,
    rollouts: m.rollouts,
    reward: m.reward.mean,
    tokens: m.trainer.tokens,
    floats: { loss: m.trainer.loss, kl: m.trainer.kl, gradNorm: m.trainer.grad_norm },
  }));
}

export type RunEssentials = ReturnType<typeof essentials>;

/** Whether one step's essentials agree: exact values exactly, the trainer's floats within `FLOAT_METRIC_RTOL`. */
export function sameStepEssentials(got: RunEssentials[number], want: RunEssentials[number]): boolean {
  const { floats: gotFloats, ...gotExact } = got;
  const { floats: wantFloats, ...wantExact } = want;
  if (JSON.stringify(gotExact) !== JSON.stringify(wantExact)) return false;
  return Object.entries(wantFloats).every(([name, value]) => {
    const other = gotFloats[name as keyof typeof wantFloats];
    return Math.abs(other - value) <= FLOAT_METRIC_RTOL * Math.max(1, Math.abs(value));
  });
}

/** Two runs of the same seed agree: exact values exactly, the trainer's floats within `FLOAT_METRIC_RTOL`. */
export function assertSameEssentials(actual: RunEssentials, expected: RunEssentials, message = 'run essentials'): void {
  const exact = (e: RunEssentials) => e.map(({ floats: _floats, ...rest }) => rest);
  assert.deepEqual(exact(actual), exact(expected), message);
  expected.forEach((want, i) => {
    for (const [name, value] of Object.entries(want.floats)) {
      const got = actual[i]!.floats[name as keyof typeof want.floats];
      const bound = FLOAT_METRIC_RTOL * Math.max(1, Math.abs(value));
      assert.ok(
        Math.abs(got - value) <= bound,
        `${message}: step ${want.step} ${name} ${got} differs from ${value} by more than ${bound}`,
      );
    }
  });
}

/**
 * The trainer's ledger of a run: each applied step (its stored result, written once at commit) with
 * the hashes of the completion token ids it trained on, sorted. Two runs whose ledgers are equal
 * applied the same steps, each once, on the same samples, each once.
 */
export async function trainerLedger(stateDir: string, run: string): Promise<{ step: number; samples: string[] }[]> {
  const dir = join(stateDir, 'runs', run, 'results');
  const files = (await readdir(dir)).filter((f) => /^step-\d+\.json$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const stored = JSON.parse(await readFile(join(dir, file), 'utf8')) as {
        step: number;
        trained_samples?: { completion_ids_sha256: string }[];
      };
      return { step: stored.step, samples: (stored.trained_samples ?? []).map((s) => s.completion_ids_sha256).sort() };
    }),
  );
}
