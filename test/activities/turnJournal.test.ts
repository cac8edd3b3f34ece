import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { ARTIFACT_FAILURE_TYPES } from '../../src/activities/artifactFailure.js';
import { storeTurnJournal } from '../../src/activities/turnJournal.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';

/** A directory store whose writes fail as a full disk's do. */
class FullDiskStore extends FileArtifactStore {
  override async putJson(): Promise<string> {
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  }
}

describe('turn journal in the artifact store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'attune-journal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads back what it wrote, and null for a turn it holds nothing of', async () => {
    const journal = storeTurnJournal(new FileArtifactStore(dir));
    assert.equal(await journal.read('journals/w/r/turn-1.json'), null);
    await journal.write('journals/w/r/turn-1.json', { policy: { text: 'hi' } });
    assert.deepEqual(await journal.read('journals/w/r/turn-1.json'), { policy: { text: 'hi' } });
  });

  it('a full disk fails the write as the store being full, naming where (the run then waits for the operator)', async () => {
    const store = new FullDiskStore(dir);
    const journal = storeTurnJournal(store);
    await assert.rejects(journal.write('journals/w/r/turn-1.json', {}), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, ARTIFACT_FAILURE_TYPES.full);
      assert.equal(error.nonRetryable, true);
      assert.match(error.message, /^artifact store .*turn-1\.json is full \(ENOSPC/);
      assert.ok(error.message.includes(store.locate('journals/w/r/turn-1.json')));
      return true;
    });
  });
});
