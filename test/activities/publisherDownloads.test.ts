import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createPublisherActivities } from '../../src/activities/publisher.js';
import { publishFullWeightsHere } from '../../src/activities/replicaFullWeights.js';
import { adapterDigest, removeStaleDownloads } from '../../src/trainer/adapterFiles.js';
import { eventually } from '../support/eventually.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';

const RUN = 'run';
/** A model file large enough that a stalled download is caught half-written. */
const WEIGHTS = Buffer.alloc(1 << 20, 7);
const FILES: Record<string, Buffer> = {
  'config.json': Buffer.from('{"model_type": "llama"}'),
  'model.safetensors': WEIGHTS,
};
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * The trainer's weights routes (manifest, files) for any step of RUN. While `stall` is set, the
 * model file's download sends half of it and then hangs, as a transfer does when its publisher is killed.
 */
class FakeWeightsTrainer {
  stall = false;
  url = '';
  private readonly server: Server = createServer((req, res) => this.answer(req.url ?? '', res));

  static async start(): Promise<FakeWeightsTrainer> {
    const trainer = new FakeWeightsTrainer();
    trainer.server.listen(0, '127.0.0.1');
    await once(trainer.server, 'listening');
    trainer.url = `http://127.0.0.1:${(trainer.server.address() as AddressInfo).port}`;
    return trainer;
  }

  private answer(url: string, res: ServerResponse): void {
    const m = /^\/v1\/runs\/run\/checkpoints\/(\d+)\/weights(?:\/(.+))?$/.exec(url);
    if (!m) return void res.writeHead(404).end('{}');
    const [, step, name] = m;
    if (name === undefined) {
      const files = Object.entries(FILES).map(([n, b]) => ({ name: n, size: b.length, sha256: sha256(b) }));
      res.setHeader('content-type', 'application/json');
      return void res.end(
        JSON.stringify({ run_id: RUN, step: Number(step), format: 'hf_full', files, digest: adapterDigest(files) }),
      );
    }
    const body = FILES[name];
    if (!body) return void res.writeHead(404).end('{}');
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    if (this.stall && name === 'model.safetensors') res.write(body.subarray(0, body.length / 2));
    else res.end(body);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}

/** A process that starts and exits: its pid is one no process of this host has any more. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

/** A temp directory as a download names it, holding a part of a model. */
function tmpDownload(parent: string, host: string, pid: number, ageMs = 0): string {
  const dir = join(parent, `.tmp-${host}-${pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'model.safetensors'), WEIGHTS.subarray(0, 4096));
  if (ageMs > 0) {
    const then = new Date(Date.now() - ageMs);
    utimesSync(join(dir, 'model.safetensors'), then, then);
    utimesSync(dir, then, then);
  }
  return dir;
}

const DAY = 24 * 60 * 60_000;
const tmpNames = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.tmp-'));

describe("a publisher's interrupted downloads (temp directories as large as the model) are removed, never one in progress", () => {
  let trainer: FakeWeightsTrainer;
  let vllm: FakeOpenAIServer;
  let adapterDir: string;
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    trainer = await FakeWeightsTrainer.start();
    vllm = await FakeOpenAIServer.start();
    adapterDir = mkdtempSync(join(tmpdir(), 'attune-publisher-downloads-'));
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await vllm.close();
    await trainer.close();
  });

  /** Another process of this host downloading step `step` through downloadAdapter: it stays alive until killed. */
  function downloadInAnotherProcess(step: number): ChildProcess {
    const module = join(__dirname, '..', '..', 'src', 'trainer', 'adapterFiles.ts');
    const code = `
      const loaded = await import(${JSON.stringify(module)}); // tsx hands this package's TS to ESM as CommonJS
      const { downloadAdapter, fetchAdapterManifest } = loaded.default ?? loaded;
      const trainer = { url: ${JSON.stringify(trainer.url)}, tokenEnv: 'NO_TOKEN_HERE' };
      const manifest = await fetchAdapterManifest(trainer, 'run', ${step}, 'weights');
      await downloadAdapter(trainer, manifest, ${JSON.stringify(join(adapterDir, RUN, `weights-step-${step}-x`))});`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    return child;
  }

  /** Waits until the download has written part of the model into its temp directory; returns its name. */
  function halfWritten(): Promise<string> {
    const runDir = join(adapterDir, RUN);
    return eventually(
      'a temp directory holding half the model',
      async () => {
        const [name, ...others] = existsSync(runDir) ? tmpNames(runDir) : [];
        assert.deepEqual(others, [], 'one download at a time');
        const part = name ? join(runDir, name, 'model.safetensors') : '';
        return part && existsSync(part) && statSync(part).size >= WEIGHTS.length / 2 ? name : undefined;
      },
      20_000,
    );
  }

  const publishStep = (step: number) =>
    publishFullWeightsHere({
      trainer: { url: trainer.url, tokenEnv: 'NO_TOKEN_HERE' },
      runName: RUN,
      step,
      base: vllm.url,
      apiKeyEnv: 'POLICY_API_KEY',
      servedModel: 'fake-model',
      adapterDir,
      keepOnDisk: 2,
      unlessServed: false,
    });

  it("a publisher killed mid-download leaves its temp directory; the publisher's next start removes it", async () => {
    trainer.stall = true;
    const child = downloadInAnotherProcess(1);
    const name = await halfWritten();
    child.kill('SIGKILL');
    await once(child, 'exit');
    assert.deepEqual(tmpNames(join(adapterDir, RUN)), [name], 'the fault: half a model left on disk');

    createPublisherActivities({ policyBaseURL: vllm.url, apiKeyEnv: 'POLICY_API_KEY', adapterDir });
    assert.deepEqual(tmpNames(join(adapterDir, RUN)), []);
  });

  it("each publish removes its run's stale temp directories, but not a download still running in another process of this host", async () => {
    trainer.stall = true;
    const running = downloadInAnotherProcess(2);
    const inProgress = await halfWritten();
    trainer.stall = false;
    const runDir = join(adapterDir, RUN);
    const dead = tmpDownload(runDir, hostname(), await deadPid());
    const otherHost = tmpDownload(runDir, 'another-host', running.pid!);
    const otherHostAbandoned = tmpDownload(runDir, 'another-host', running.pid!, 2 * DAY);

    await publishStep(3);
    assert.equal(vllm.fullWeights.version, `${RUN}@3`);
    assert.deepEqual(
      tmpNames(runDir).sort(),
      [inProgress, otherHost.slice(runDir.length + 1)].sort(),
      "removed: the dead process of this host, and the other host's not written for two days",
    );
    assert.ok(!existsSync(dead) && !existsSync(otherHostAbandoned));
    assert.ok(readdirSync(runDir).some((n) => n.startsWith('weights-step-3-')));
  });

  it('an old temp directory of a live process is kept while its download still writes, and goes once it stops', () => {
    const parent = mkdtempSync(join(tmpdir(), 'attune-stale-'));
    const mine = tmpDownload(parent, hostname(), process.pid, 2 * DAY);
    writeFileSync(join(mine, 'model.safetensors'), WEIGHTS); // still writing: a fresh mtime
    const fresh = tmpDownload(parent, 'another-host', 1);
    assert.deepEqual(removeStaleDownloads(parent), []);
    const stopped = new Date(Date.now() - 2 * DAY);
    utimesSync(join(mine, 'model.safetensors'), stopped, stopped);
    assert.deepEqual(removeStaleDownloads(parent), [mine.slice(parent.length + 1)]);
    assert.ok(existsSync(fresh));
    assert.deepEqual(removeStaleDownloads(parent, 0), [fresh.slice(parent.length + 1)]);
  });
});
