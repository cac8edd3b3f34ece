import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { S3ArtifactStore } from '../../src/artifacts/s3Store.js';
import { ArtifactNotFoundError, FileArtifactStore, type ArtifactStore } from '../../src/artifacts/store.js';
import { S3_BUILD_TIMEOUT_MS, S3Server, TEST_BUCKET } from '../support/s3Server.js';

/**
 * The promises of the ArtifactStore interface, one table run against each store: the directory
 * store and the S3 store on a real MinIO server. `open` gives a second instance on the same
 * storage, as a second worker has.
 */
interface StoreUnderTest {
  name: string;
  before?: () => Promise<void>;
  after?: () => Promise<void>;
  /**
   * A fresh, empty store, a function opening another instance over the same storage, and where a
   * key is, for messages (the S3 store's with its endpoint).
   */
  fresh: () => {
    store: ArtifactStore;
    again: () => ArtifactStore;
    locationOf: (key: string) => string;
    where: (key: string) => string;
  };
}

let minio: S3Server | undefined;
const s3Stores: S3ArtifactStore[] = [];

function s3Store(prefix: string): S3ArtifactStore {
  const store = new S3ArtifactStore({
    location: { bucket: TEST_BUCKET, prefix },
    endpoint: minio!.url,
    region: 'us-east-1',
    pathStyle: true,
    env: minio!.env,
  });
  s3Stores.push(store);
  return store;
}

const STORES: StoreUnderTest[] = [
  {
    name: 'file store',
    fresh: () => {
      const root = mkdtempSync(join(tmpdir(), 'attune-contract-'));
      return {
        store: new FileArtifactStore(root),
        again: () => new FileArtifactStore(root),
        locationOf: (key) => join(root, ...key.split('/')),
        where: (key) => join(root, ...key.split('/')),
      };
    },
  },
  {
    name: 'S3 store on a real MinIO',
    before: async () => {
      minio = await S3Server.start();
    },
    after: async () => {
      for (const store of s3Stores.splice(0)) store.close();
      await minio?.stop();
    },
    fresh: () => {
      const prefix = `contract/${randomUUID()}`;
      return {
        store: s3Store(prefix),
        again: () => s3Store(prefix),
        locationOf: (key) => `s3://${TEST_BUCKET}/${prefix}/${key}`,
        where: (key) => `bucket ${TEST_BUCKET}, key ${prefix}/${key} at ${minio!.url}`,
      };
    },
  },
];

for (const subject of STORES) {
  describe(`artifact store contract: ${subject.name}`, function () {
    this.timeout(S3_BUILD_TIMEOUT_MS);
    before(async () => subject.before?.());
    after(async () => subject.after?.());

    it('round-trips JSON, text and bytes', async () => {
      const { store } = subject.fresh();
      assert.equal(await store.putJson('runs/a/x.json', { a: [1, 'ü'] }), 'runs/a/x.json');
      assert.deepEqual(await store.getJson('runs/a/x.json'), { a: [1, 'ü'] });
      await store.putText('runs/a/t.txt', 'line one\nline two\n');
      assert.equal(await store.getText('runs/a/t.txt'), 'line one\nline two\n');
      await store.putBytes('runs/a/b.bin', new TextEncoder().encode('bytes ✓\n'));
      assert.equal(await store.getText('runs/a/b.bin'), 'bytes ✓\n');
    });

    it('a put replaces the whole object, and writing the same again is harmless', async () => {
      const { store } = subject.fresh();
      await store.putText('k/v.txt', 'a much longer first version\n');
      await store.putText('k/v.txt', 'short\n');
      assert.equal(await store.getText('k/v.txt'), 'short\n');
      await store.putJson('k/j.json', { n: 1 });
      await store.putJson('k/j.json', { n: 1 });
      assert.deepEqual(await store.getJson('k/j.json'), { n: 1 });
      assert.deepEqual(await store.list('k'), ['k/j.json', 'k/v.txt']);
    });

    it("concurrent writes of one key each land whole: a read after each write, and the final object, is one writer's entire value", async () => {
      const { store, again, where } = subject.fresh();
      const other = again();
      const key = 'r/one.json';
      const values = Array.from({ length: 20 }, (_, i) => ({ writer: i, body: 'x'.repeat(2000 + i) }));
      const written = new Set(values.map((v) => `${JSON.stringify(v, null, 2)}\n`));
      // Each writer reads right after its own write, while the others are still writing.
      const reads = await Promise.all(
        values.map(async (v, i) => {
          const writer = i % 2 ? store : other;
          await writer.putJson(key, v);
          return writer.getText(key);
        }),
      );
      const final = await store.getText(key);
      const wrong = [...reads, final].filter((text) => text === null || !written.has(text));
      assert.equal(
        wrong.length,
        0,
        `${where(key)}: ${wrong.length} of ${reads.length + 1} reads saw no writer's whole value, e.g. ${JSON.stringify(wrong[0]?.slice(0, 80))} (${wrong[0]?.length} chars)`,
      );
    });

    it('a conditional write lands only on the version it read (none: only a new key); of writers racing from one version, exactly one lands', async () => {
      const { store, again, where } = subject.fresh();
      const key = 'journals/w/r/turn-1.json';
      assert.equal(await store.getVersioned(key), null);
      const v1 = await store.putJsonIf(key, { n: 1 }, null);
      assert.ok(v1, `${where(key)}: the first conditional write of a new key lands`);
      assert.equal(await again().putJsonIf(key, { n: 0 }, null), null, 'a key that exists is not new');
      const read = await again().getVersioned(key);
      assert.equal(read?.version, v1, 'another instance reads the version the write returned');
      assert.deepEqual(JSON.parse(read.text), { n: 1 });
      const v2 = await store.putJsonIf(key, { n: 2 }, v1);
      assert.ok(v2 && v2 !== v1);
      assert.equal(await again().putJsonIf(key, { n: 3 }, v1), null, 'a stale version is refused');
      assert.deepEqual(await store.getJson(key), { n: 2 });
      const racing = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? store : again()).putJsonIf(key, { n: 10 + i }, v2)),
      );
      const landed = racing.flatMap((version, i) => (version === null ? [] : [10 + i]));
      assert.equal(landed.length, 1, `${where(key)}: ${landed.length} of 10 racing writes landed`);
      assert.deepEqual(await store.getJson(key), { n: landed[0] });
      assert.deepEqual(await store.list('journals'), [key], 'no lock or temp file is listed');
    });

    it('appendLine from two instances at once: every appended line is there exactly once (2 x 50), whole and in its writer order', async () => {
      const { store, again, where } = subject.fresh();
      const other = again();
      const key = 'runs/r/metrics.jsonl';
      const linesOf = (name: string) => Array.from({ length: 50 }, (_, i) => JSON.stringify({ name, i }));
      const writer = async (s: ArtifactStore, name: string) => {
        for (const line of linesOf(name)) await s.appendLine(key, line);
      };
      await Promise.all([writer(store, 'a'), writer(other, 'b')]);
      const text = (await store.getText(key))!;
      assert.ok(text.endsWith('\n'), `${where(key)} ends without a newline`);
      const lines = text.trimEnd().split('\n');
      const count = new Map<string, number>();
      for (const line of lines) count.set(line, (count.get(line) ?? 0) + 1);
      const appended = [...linesOf('a'), ...linesOf('b')];
      const notOnce = appended.filter((l) => count.get(l) !== 1).map((l) => `${l} x${count.get(l) ?? 0}`);
      const strangers = lines.filter((l) => !appended.includes(l));
      assert.deepEqual(
        { notOnce, strangers },
        { notOnce: [], strangers: [] },
        `${where(key)}: ${notOnce.length} of the 100 appended lines are not there exactly once, ${strangers.length} lines were never appended (${lines.length} lines in all)`,
      );
      for (const name of ['a', 'b'])
        assert.deepEqual(
          lines.filter((l) => (JSON.parse(l) as { name: string }).name === name),
          linesOf(name),
          `${where(key)}: the lines of writer ${name} in its order`,
        );
    });

    it('appendLine adds one newline-terminated line, after what a put wrote', async () => {
      const { store } = subject.fresh();
      await store.appendLine('l/log.jsonl', '{"a":1}');
      await store.appendLine('l/log.jsonl', '{"a":2}\n');
      assert.equal(await store.getText('l/log.jsonl'), '{"a":1}\n{"a":2}\n');
      await store.putText('l/log.jsonl', '{"a":0}\n');
      await store.appendLine('l/log.jsonl', '{"a":3}');
      assert.equal(await store.getText('l/log.jsonl'), '{"a":0}\n{"a":3}\n');
    });

    it('lists by prefix, sorted, never a sibling that only shares the prefix text', async () => {
      const { store } = subject.fresh();
      for (const key of ['runs/a/2.json', 'runs/a/1.json', 'runs/a/sub/3.json', 'runs/ab/x.json', 'other/y.json'])
        await store.putText(key, key);
      assert.deepEqual(await store.list('runs/a'), ['runs/a/1.json', 'runs/a/2.json', 'runs/a/sub/3.json']);
      assert.deepEqual(await store.list('runs/a/'), ['runs/a/1.json', 'runs/a/2.json', 'runs/a/sub/3.json']);
      assert.deepEqual(await store.list('runs'), [
        'runs/a/1.json',
        'runs/a/2.json',
        'runs/a/sub/3.json',
        'runs/ab/x.json',
      ]);
      assert.deepEqual((await store.list('')).length, 5);
      assert.deepEqual(await store.list('nothing/here'), []);
    });

    it('lists past one page of results (over 1,000 keys)', async function () {
      const { store } = subject.fresh();
      const keys = Array.from({ length: 1005 }, (_, i) => `many/${String(i).padStart(4, '0')}.json`);
      for (let i = 0; i < keys.length; i += 50)
        await Promise.all(keys.slice(i, i + 50).map((key) => store.putText(key, '{}')));
      assert.deepEqual(await store.list('many'), keys);
      await store.remove('many');
      assert.deepEqual(await store.list('many'), []);
    });

    it('removes a key, or every key under a prefix; removing nothing is not an error', async () => {
      const { store } = subject.fresh();
      for (const key of ['p/a/1.json', 'p/a/2.json', 'p/ab.json', 'p/b.json']) await store.putText(key, key);
      await store.remove('p/b.json');
      assert.equal(await store.getText('p/b.json'), null);
      await store.remove('p/a');
      assert.deepEqual(await store.list('p'), ['p/ab.json']);
      await store.remove('p/a');
      await store.remove('never/was');
    });

    it('missing keys: getText is null, getJson throws ArtifactNotFoundError', async () => {
      const { store } = subject.fresh();
      assert.equal(await store.getText('no/such.json'), null);
      await assert.rejects(store.getJson('no/such.json'), (error: unknown) => {
        assert.ok(error instanceof ArtifactNotFoundError, String(error));
        assert.match((error as Error).message, /no\/such\.json/);
        return true;
      });
    });

    it('locates a key where a person finds it, and refuses keys that leave the store', async () => {
      const { store, locationOf } = subject.fresh();
      assert.equal(store.locate('runs/r/metrics.jsonl'), locationOf('runs/r/metrics.jsonl'));
      for (const bad of ['../x', 'a/../../x', '/abs', 'a//b', ''])
        assert.throws(() => store.locate(bad), /invalid artifact key/);
      await assert.rejects(store.putText('../escape.txt', 'x'), /invalid artifact key/);
    });
  });
}
