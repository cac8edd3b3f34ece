/**
 * Orchestration benchmark: what durable orchestration costs.
 *
 * For each fake-LLM latency L and concurrency C, C dialogues of 8 turns each run three ways against
 * one fake OpenAI-compatible server (in this process):
 *   attune     C rollout workflows at once on a real Temporal dev server, through the real LLM-I/O
 *              workers (in a child process, so its peak RSS is its own)
 *   plain (a)  the same activity code in C concurrent async loops, no Temporal (the limit)
 *   reference (b) shaped like the reference RLVER rollout: per turn, a concurrent batch of policy
 *              turns, then the simulator (analysis + reply) per live dialogue, one after another
 *
 *   npm run bench:orchestration [-- --quick | --latencies 0,100,1000 --concurrency 16,64,256]
 *
 * This file drives a run; options.ts parses the command line, childProcess.ts and child.ts are the
 * two sides of the child processes, stack.ts sets up a dev server and its workers, cell.ts measures
 * one cell (attuneRun.ts one run of workflows), entry.ts and results.ts hold and write the results.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { requireScenarioLibrary } from '../../src/scenarios/library.js';
import { bundleWorkflows } from '../../src/workers/workflowSource.js';
import { FakeOpenAIServer } from '../../test/support/fakeOpenAI.js';
import { runCell, runLoop } from './cell.js';
import { Child, isReady } from './childProcess.js';
import type { Entry } from './entry.js';
import { tuneFakeServer } from './fakeServer.js';
import { ALTERNATIVES, HELP, parseOptions, type Options } from './options.js';
import { progress } from './progress.js';
import { writeResults } from './results.js';
import { specsFor, type RunContext } from './runContext.js';
import { configSetFor, startStack, stopLiveServers, stopStack, type LevelStacks } from './stack.js';

async function main(): Promise<void> {
  let options: Options | null;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${HELP}\n`);
    process.exit(2);
  }
  if (!options) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const opts = options;
  const started = Date.now();
  const workdir = mkdtempSync(join(tmpdir(), 'attune-bench-orch-'));
  const children = new Set<Child>();
  let fake: FakeOpenAIServer | null = null;
  let loops: Child | null = null;
  const cleanup = async () => {
    for (const c of children) c.kill();
    loops?.kill();
    await stopLiveServers();
    await fake?.close().catch(() => undefined);
    rmSync(workdir, { recursive: true, force: true });
  };
  const watchdog = setTimeout(() => {
    progress('error: --max-minutes reached; stopping', { max_minutes: opts.maxMinutes });
    void cleanup().finally(() => process.exit(1));
  }, opts.maxMinutes * 60_000);
  watchdog.unref();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`stopping on ${signal}`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    const scenarios = requireScenarioLibrary(join(REPO_ROOT, 'scenarios', 'train')).filter((s) => s.firstMessage);
    if (scenarios.length === 0) throw new Error('no training scenario with a first message');
    progress('bundling workflows');
    const bundle = await bundleWorkflows(
      opts.bundle === 'full' ? undefined : join(__dirname, 'rolloutOnlyWorkflows.ts'),
    );
    const bundleCodePath = join(workdir, 'workflow-bundle.js');
    const bundleSourceMapPath = join(workdir, 'workflow-bundle.js.map');
    writeFileSync(bundleCodePath, bundle.code);
    writeFileSync(bundleSourceMapPath, bundle.sourceMap);

    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 0 }) });
    const connections = tuneFakeServer(fake, opts.keepAliveMs);
    loops = Child.start('loops', {}, opts.profileDir);
    await loops.next(isReady, 60_000);
    const ctx: RunContext = {
      options: opts,
      fake,
      connections,
      loops,
      scenarios,
      bundleCodePath,
      bundleSourceMapPath,
      children,
      workdir,
    };

    // Warm the loop process once (JIT, connection pool).
    if (opts.variants.has('plain') || opts.variants.has('reference')) {
      fake.behaviour.latencyMs = 0;
      await runLoop(ctx, {
        kind: 'plain',
        id: 0,
        configSet: configSetFor(8, 0, fake.url, join(workdir, 'warm'), 2),
        maxTurns: 2,
        specs: specsFor(scenarios, 8, 'warm'),
      });
    }

    const cellCount = opts.latencies.length * opts.concurrency.length;
    progress('grid', {
      cells: cellCount,
      latencies: opts.latencies,
      concurrency: opts.concurrency,
      turns: opts.turns,
      variants: [...opts.variants],
    });
    const entries: Entry[] = [];
    // Per concurrency level: a fresh dev server (its CPU per call grows with the workflows it has
    // stored, so cells must not inherit each other's) and one worker process (its peak RSS is reset
    // before each cell).
    for (const concurrency of opts.concurrency) {
      const home = join(workdir, `c${concurrency}`);
      mkdirSync(home, { recursive: true });
      const configSet = configSetFor(concurrency, Math.max(...opts.latencies), fake.url, home, opts.turns);
      const stacks: LevelStacks = { attune: null, alternatives: {} };
      try {
        // Both stacks stay up for the whole level; an idle dev server and worker use next to no CPU.
        if (opts.variants.has('attune')) stacks.attune = await startStack(ctx, join(home, 'activity'), configSet);
        for (const [variant, { key, set }] of Object.entries(ALTERNATIVES)) {
          if (opts.variants.has(variant))
            stacks.alternatives[key] = await startStack(ctx, join(home, key), [...configSet, ...set]);
        }
        for (const latencyMs of opts.latencies) {
          entries.push(await runCell(ctx, { latencyMs, concurrency }, entries.length + 1, stacks, configSet));
          progress('cell done', {
            cell: entries.length,
            of: cellCount,
            elapsed_s: Math.round((Date.now() - started) / 1000),
          });
        }
      } finally {
        for (const stack of [stacks.attune, ...Object.values(stacks.alternatives)])
          if (stack) await stopStack(ctx, stack);
        rmSync(home, { recursive: true, force: true });
      }
    }
    writeResults(opts, entries, started);
  } finally {
    clearTimeout(watchdog);
    await loops?.stop().catch(() => undefined);
    await cleanup();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
