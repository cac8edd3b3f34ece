import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { runMetricsKey } from '../../src/artifacts/keys.js';
import { S3ArtifactStore } from '../../src/artifacts/s3Store.js';
import { RUN, stepRecord } from '../report/fixtures.js';
import { LostAnswerProxy } from '../support/lostAnswerProxy.js';
import { S3_BUILD_TIMEOUT_MS, S3Server, TEST_BUCKET } from '../support/s3Server.js';

describe('S3 appendLine when the answer to its conditional write is lost (real MinIO)', function () {
  this.timeout(S3_BUILD_TIMEOUT_MS);
  let minio: S3Server;
  let proxy: LostAnswerProxy;
  let store: S3ArtifactStore;
  before(async () => {
    minio = await S3Server.start();
    proxy = await LostAnswerProxy.start(minio.url);
    store = new S3ArtifactStore({
      location: { bucket: TEST_BUCKET, prefix: `lost-answer/${randomUUID()}` },
      endpoint: proxy.url,
      region: 'us-east-1',
      pathStyle: true,
      env: minio.env,
      maxAttempts: 3,
    });
  });
  after(async () => {
    store?.close();
    await proxy?.close();
    await minio?.stop();
  });

  /** Where a key is, for messages: its bucket, object and the endpoint behind the proxy. */
  const where = (key: string) =>
    `bucket ${TEST_BUCKET}, object ${store.locate(key)} at ${minio.url} (through ${proxy.url})`;

  /** Runs `append` with the answer to its first conditional PUT lost, and checks that the SDK retried that PUT and met 412. */
  async function appendLosingTheAnswer(key: string, append: () => Promise<void>): Promise<void> {
    const from = proxy.requests.length;
    proxy.loseConditionalPuts = 1;
    await append();
    const puts = proxy.requests.slice(from).filter((r) => r.method === 'PUT' && r.conditional);
    assert.equal(puts[0]?.lost, true, `the first conditional PUT of ${where(key)} lost its answer`);
    assert.ok(
      puts[0].status >= 200 && puts[0].status < 300,
      `MinIO carried out the write to ${where(key)} (${puts[0].status})`,
    );
    assert.equal(puts[1]?.status, 412, `the SDK retried the PUT of ${where(key)} and met 412: ${JSON.stringify(puts)}`);
  }

  it('the SDK retries a conditional append whose first answer was lost, and the object holds the line once', async () => {
    const key = 'runs/r/metrics.jsonl';
    // The first append creates the object (If-None-Match), the second extends it (If-Match).
    await appendLosingTheAnswer(key, () => store.appendLine(key, '{"step":1}'));
    await appendLosingTheAnswer(key, () => store.appendLine(key, '{"step":2}'));
    await store.appendLine(key, '{"step":3}');
    assert.equal(
      await store.getText(key),
      '{"step":1}\n{"step":2}\n{"step":3}\n',
      `${where(key)}: each line once, in order`,
    );
  });

  it("a run's step metrics, recorded while the answers to their appends are lost, hold each step's line once", async () => {
    const activities = createRunBookkeepingActivities(store);
    const key = runMetricsKey(RUN);
    await appendLosingTheAnswer(key, () => activities.recordStepMetrics(stepRecord(1)));
    await appendLosingTheAnswer(key, () => activities.recordStepMetrics(stepRecord(2)));
    const lines = (await store.getText(key))!.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { step: number }).step),
      [1, 2],
      `${where(key)}: one line a step`,
    );
  });

  it("two attempts at one step's metrics that both read before either writes (a timed-out attempt racing its retry) record the step once", async () => {
    // A barrier in the store's reads: each attempt reads the log, then waits until the other has read it too.
    let reads = 0;
    let bothRead!: () => void;
    const barrier = new Promise<void>((resolve) => (bothRead = resolve));
    const racing = new Proxy(store, {
      get(target, name) {
        if (name !== 'getText') return Reflect.get(target, name, target) as unknown;
        return async (key: string) => {
          const text = await target.getText(key);
          if (++reads === 2) bothRead();
          await barrier;
          return text;
        };
      },
    });
    const activities = createRunBookkeepingActivities(racing);
    const record = { ...stepRecord(1), run: 'racing-run' };
    const key = runMetricsKey('racing-run');
    await Promise.all([activities.recordStepMetrics(record), activities.recordStepMetrics(record)]);
    const lines = (await store.getText(key))!.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { step: number }).step),
      [1],
      `${where(key)}: one line for the step`,
    );
  });

  it('a put after appends replaces the object whole, and appends after it start from the put', async () => {
    const key = 'runs/r/after-put.jsonl';
    await store.appendLine(key, 'a');
    await store.putText(key, 'p\n');
    await appendLosingTheAnswer(key, () => store.appendLine(key, 'b'));
    assert.equal(await store.getText(key), 'p\nb\n', where(key));
  });
});
