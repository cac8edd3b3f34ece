import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRunBookkeepingActivities } from '../../src/activities/runBookkeeping.js';
import { runMetricsKey } from '../../src/artifacts/keys.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { RUN, stepRecord } from '../report/fixtures.js';

describe('file artifact store', () => {
  it('concurrent writes of one key each land whole, with no temp file left behind', async () => {
    const root = mkdtempSync(join(tmpdir(), 'attune-store-'));
    const store = new FileArtifactStore(root);
    const values = Array.from({ length: 40 }, (_, i) => ({ writer: i, body: 'x'.repeat(2000 + i) }));
    // Same process, same millisecond: temp names built from pid and time alone collide here.
    await Promise.all(values.map((v) => store.putJson('rollouts/r/one.json', v)));
    const stored = await store.getJson<{ writer: number; body: string }>('rollouts/r/one.json');
    assert.equal(stored.body.length, 2000 + stored.writer);
    assert.deepEqual(readdirSync(join(root, 'rollouts', 'r')), ['one.json']);
  });

  it('writes into a directory removed since its last write there (the store remembers directories it made)', async () => {
    const store = new FileArtifactStore(mkdtempSync(join(tmpdir(), 'attune-store-')));
    await store.putJsonIf('journals/w/r/turn-1.json', { n: 1 }, null);
    await store.putJson('journals/w/r/other.json', { n: 1 });
    await store.remove('journals/w'); // a sweep
    assert.notEqual(await store.putJsonIf('journals/w/r/turn-1.json', { n: 2 }, null), null);
    await store.putJson('journals/w/r/other.json', { n: 2 });
    await store.appendLine('journals/w/r/lines.jsonl', '{}');
    assert.deepEqual(await store.list('journals/w/r'), [
      'journals/w/r/lines.jsonl',
      'journals/w/r/other.json',
      'journals/w/r/turn-1.json',
    ]);
  });

  it('a conditional write that need not be durable is still a compare-and-swap', async () => {
    const store = new FileArtifactStore(mkdtempSync(join(tmpdir(), 'attune-store-')));
    const first = await store.putJsonIf('journals/w/r/fence.json', { fence: 3 }, null, { durable: false });
    assert.ok(first);
    assert.equal(await store.putJsonIf('journals/w/r/fence.json', { fence: 4 }, null, { durable: false }), null);
    const second = await store.putJsonIf('journals/w/r/fence.json', { fence: 5 }, first, { durable: false });
    assert.ok(second);
    assert.equal(await store.putJsonIf('journals/w/r/fence.json', { fence: 6 }, first, { durable: false }), null);
    assert.deepEqual(await store.getJson('journals/w/r/fence.json'), { fence: 5 });
    assert.equal((await store.getVersioned('journals/w/r/fence.json'))?.version, second);
  });
});

describe('run metrics records', () => {
  function storeWithMetrics(text: string) {
    const root = mkdtempSync(join(tmpdir(), 'attune-metrics-'));
    const store = new FileArtifactStore(root);
    const path = store.locate(runMetricsKey(RUN));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    return { store, path, activities: createRunBookkeepingActivities(store) };
  }

  it('a torn last line (a crash mid-write) does not block the next step, and is dropped', async () => {
    const torn = `${JSON.stringify(stepRecord(1))}\n{"kind":"attune.step","run":"${RUN}","st`;
    const { path, activities } = storeWithMetrics(torn);
    await activities.recordStepMetrics(stepRecord(2));
    const lines = readFileSync(path, 'utf8').split('\n');
    assert.equal(lines.pop(), '', 'the file ends with a newline');
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { step: number }).step),
      [1, 2],
    );
  });

  it('appends the next step, and puts a step recorded out of order in its place', async () => {
    const { path, activities } = storeWithMetrics('');
    for (const step of [1, 3, 2]) await activities.recordStepMetrics(stepRecord(step));
    assert.deepEqual(
      readFileSync(path, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { step: number }).step),
      [1, 2, 3],
      path,
    );
  });

  it('is idempotent by step: a retried record writes nothing new', async () => {
    const { path, activities } = storeWithMetrics('');
    await activities.recordStepMetrics(stepRecord(1));
    await activities.recordStepMetrics(stepRecord(2));
    const before = readFileSync(path, 'utf8');
    await activities.recordStepMetrics({ ...stepRecord(2), time: '2030-01-01T00:00:00.000Z' });
    assert.equal(readFileSync(path, 'utf8'), before);
  });
});
