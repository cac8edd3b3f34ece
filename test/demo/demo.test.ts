import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { journalledRuns } from '../../src/journal/turnJournalKeys.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { REPO_ROOT } from '../../src/paths.js';
import { freePort } from '../../src/temporal/devServer.js';

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Demo {
  child: ChildProcess;
  ports: number[];
  home: string;
  output(): string;
  exited: Promise<number | null>;
  waitFor(pattern: RegExp): Promise<void>;
}

/** The demo homes of the running test, removed after it. */
const homes: string[] = [];

/** The real demo command (the README's first command without the set-up step), on free ports and a fresh home. */
async function startDemo(args: string[]): Promise<Demo> {
  const [temporalPort, uiPort, llmPort, trainerPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ] as [number, number, number, number];
  const home = mkdtempSync(join(tmpdir(), 'attune-demo-test-'));
  homes.push(home);
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'attune.js'),
      'demo',
      ...args,
      '--set',
      `temporal.devServer.port=${temporalPort}`,
      '--set',
      `temporal.devServer.uiPort=${uiPort}`,
      '--set',
      `localLlm.port=${llmPort}`,
      '--set',
      `simulator.baseURL=http://127.0.0.1:${llmPort}/v1`,
      '--set',
      `trainer.url=http://127.0.0.1:${trainerPort}`,
    ],
    { cwd: REPO_ROOT, env: { ...process.env, ATTUNE_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of [...waiters])
      if (w.pattern.test(out)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    home,
    ports: [temporalPort, uiPort, llmPort, trainerPort],
    exited,
    output: () => out,
    waitFor: (pattern) =>
      pattern.test(out)
        ? Promise.resolve()
        : new Promise((resolve, reject) => {
            waiters.push({ pattern, resolve });
            void exited.then((code) =>
              reject(new Error(`demo exited (${code}) before ${pattern}:\n${out.slice(-4000)}`)),
            );
          }),
  };
}

describe('the embedded-default demo (reduced: one step)', function () {
  this.timeout(900_000);
  // A demo home holds the converted model and its checkpoints (about 2 GB): gone once its test is.
  afterEach(() => {
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  });

  it('trains, evaluates base and final policy, writes the report, and leaves nothing listening', async () => {
    // One turn a dialogue: the local models' calls are most of the demo's time on a CPU, and the
    // claim is about the pipeline's ends (trained, evaluated twice, reported, stopped), not dialogue length.
    const demo = await startDemo([
      '--steps',
      '1',
      '--scenarios-per-step',
      '1',
      '--samples',
      '2',
      '--turns',
      '1',
      '--eval-scenarios',
      '1',
      '--set',
      'policy.maxTokens=24',
    ]);
    const code = await demo.exited;
    const out = demo.output();
    assert.equal(code, 0, out.slice(-4000));
    const ui = /Temporal UI: (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
    assert.equal(ui, `http://127.0.0.1:${demo.ports[1]}`);
    const run = /Run: +(demo-\d+)/.exec(out)?.[1];
    assert.ok(run, 'prints the run name');
    const report = /Report: +(\S+index\.html)/.exec(out)?.[1];
    assert.ok(report && existsSync(report), 'writes the report');
    assert.match(readFileSync(report, 'utf8'), new RegExp(run));
    assert.match(out, /base: Sentient score [\d.]+ over 1 dialogue/);
    assert.match(out, /final: Sentient score [\d.]+ over 1 dialogue/);
    const metrics = readFileSync(join(demo.home, 'artifacts', 'runs', run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n');
    assert.equal(metrics.length, 1);
    // Its workers' last look removed the journals of its dialogues (a closed marker may stay a day).
    const journals = await new FileArtifactStore(join(demo.home, 'artifacts')).list('journals/');
    assert.deepEqual(journalledRuns(journals), [], journals.join('\n'));
    for (const port of demo.ports) assert.equal(await listening(port), false, `port ${port} still listening`);
  });

  it('Ctrl-C stops every process it started', async () => {
    const demo = await startDemo(['--steps', '1', '--scenarios-per-step', '1', '--samples', '2', '--turns', '2']);
    await demo.waitFor(/training started/);
    for (const port of [demo.ports[0], demo.ports[2], demo.ports[3]] as number[])
      assert.equal(await listening(port), true);
    demo.child.kill('SIGINT');
    const code = await demo.exited;
    assert.equal(code, 130, demo.output().slice(-3000));
    for (const port of demo.ports)
      assert.equal(await listening(port), false, `port ${port} still listening after Ctrl-C`);
  });
});
