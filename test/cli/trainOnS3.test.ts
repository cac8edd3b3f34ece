import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { S3ArtifactStore } from '../../src/artifacts/s3Store.js';
import { freePort } from '../../src/temporal/devServer.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { S3_BUILD_TIMEOUT_MS, S3Server, TEST_BUCKET } from '../support/s3Server.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { attune } from './attuneProcess.js';

/** Every file under `dir`, relative to it (none when it does not exist). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

describe('attune train and attune report with artifacts in an S3 bucket (real MinIO, through the CLI)', function () {
  this.timeout(S3_BUILD_TIMEOUT_MS);
  let minio: S3Server;
  let fake: FakeOpenAIServer;
  let bucket: S3ArtifactStore;
  before(async () => {
    minio = await S3Server.start();
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 3 }) });
    bucket = new S3ArtifactStore({
      location: { bucket: TEST_BUCKET, prefix: '' },
      endpoint: minio.url,
      region: 'us-east-1',
      pathStyle: true,
      env: minio.env,
    });
  });
  after(async () => {
    bucket?.close();
    await fake?.close();
    await minio?.stop();
  });

  it('configs/tiny.yaml with --set artifacts.url=s3://attune/runs: transcripts and metrics.jsonl land in the bucket, none under $ATTUNE_HOME/artifacts, and the report is written', async () => {
    const home = mkdtempSync(join(tmpdir(), 'attune-s3-home-'));
    const env = { ATTUNE_HOME: home, TEMPORAL_ADDRESS: (await sharedTestEnv()).address, ...minio.env };
    const s3 = ['--set', 'artifacts.url=s3://attune/runs', '--set', `artifacts.endpoint=${minio.url}`];
    // The test's own simulator (the fake OpenAI server), trainer port and queues; the rest is configs/tiny.yaml.
    const local = [
      `simulator.baseURL=${fake.url}`,
      'simulator.model=fake-simulator',
      'simulator.timeoutMs=3000',
      `trainer.url=http://127.0.0.1:${await freePort()}`,
      `temporal.taskQueuePrefix=s3cli${process.pid}-`,
      'training.guardrails=[]',
    ].flatMap((s) => ['--set', s]);

    const train = await attune(
      ['train', '--config', 'configs/tiny.yaml', '--name', 's3run', '--set', 'training.steps=2', ...s3, ...local],
      env,
    );
    assert.equal(train.code, 0, train.stderr);
    assert.match(train.stdout, /^Metrics: s3:\/\/attune\/runs\/runs\/s3run\/metrics\.jsonl$/m);

    const transcripts = await bucket.list('runs/rollouts/s3run');
    // configs/tiny.yaml: 2 scenarios x 2 samples a step.
    assert.equal(transcripts.length, 2 * 4, transcripts.join(', '));
    const metrics = (await bucket.getText('runs/runs/s3run/metrics.jsonl')) ?? '';
    assert.deepEqual(
      metrics
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { step: number }).step),
      [1, 2],
    );
    const localFiles = filesUnder(join(home, 'artifacts'));
    assert.deepEqual(
      localFiles.filter((f) => f.endsWith('.json') || f.endsWith('.jsonl')),
      [],
      `no transcript or metrics file under $ATTUNE_HOME/artifacts: ${localFiles.join(', ')}`,
    );

    const report = await attune(['report', 's3run', ...s3, ...local], env);
    assert.equal(report.code, 0, report.stderr);
    const page = /^report: (.+)$/m.exec(report.stdout)?.[1];
    assert.ok(page && existsSync(page), report.stdout);
    assert.match(readFileSync(page, 'utf8'), /s3run/);
    assert.match(report.stdout, /^stored: s3:\/\/attune\/runs\/reports\/s3run\/index\.html$/m);
    assert.match((await bucket.getText('runs/reports/s3run/index.html')) ?? '', /s3run/);
    assert.deepEqual(
      filesUnder(join(home, 'artifacts')).filter((f) => f.endsWith('.json') || f.endsWith('.jsonl')),
      [],
    );
  });
});
