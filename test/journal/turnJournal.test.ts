import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { ARTIFACT_FAILURE_TYPES } from '../../src/activities/artifactFailure.js';
import { turnInputHash } from '../../src/journal/journalInput.js';
import { storeTurnJournal, TURN_SUPERSEDED } from '../../src/journal/turnJournal.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { dialogueScenario, dialogueSettings } from '../support/fakeDialogueCalls.js';
import type { TurnInput } from '../../src/core/dialogueTurn.js';
import { BlippingStore } from '../support/blippingStore.js';

/** A directory store whose writes fail as a full disk's do. */
class FullDiskStore extends FileArtifactStore {
  override async putJsonIf(): Promise<string | null> {
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  }
}

const KEY = 'journals/w/r/turn-1.json';
const NO_WAIT = [1, 1, 1];

describe('turn journal in the artifact store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'attune-journal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a claim reads back what an attempt from the same input wrote, and nothing for a turn it holds nothing of', async () => {
    const journal = storeTurnJournal(new FileArtifactStore(dir), NO_WAIT);
    const first = await journal.claim(KEY, 'input-a');
    assert.equal(first.recorded, null);
    assert.equal(first.ignored, null);
    await first.write({ policy: { text: 'hi' } });
    const second = await journal.claim(KEY, 'input-a');
    assert.deepEqual(second.recorded, { policy: { text: 'hi' } });
  });

  it('a record made from another input is not reused (absent, and said why), nor is one that names no input', async () => {
    const store = new FileArtifactStore(dir);
    const journal = storeTurnJournal(store, NO_WAIT);
    const made = await journal.claim(KEY, 'input-a');
    await made.write({ policy: { text: 'answered the old opening' } });
    const other = await journal.claim(KEY, 'input-b');
    assert.equal(other.recorded, null);
    assert.match(other.ignored ?? '', /another input/);
    // The format before records named their input: the finished calls alone.
    await store.putJson(KEY, { policy: { text: 'from an older worker' } });
    const old = await journal.claim(KEY, 'input-b');
    assert.equal(old.recorded, null);
    assert.match(old.ignored ?? '', /names no input/);
  });

  it("a turn's input hash changes with its history, seeds, policy version and turn number, not with key order", () => {
    const scenario = dialogueScenario();
    const settings = dialogueSettings();
    const input: TurnInput = {
      settings,
      scenario,
      systemPrompt: 'be kind',
      history: [{ role: 'user', content: 'opening one' }],
      emotion: 40,
      turn: 1,
      seed: 7,
    };
    const hash = turnInputHash(input);
    assert.match(hash, /^[0-9a-f]{64}$/);
    const reordered = Object.fromEntries(Object.entries(input).reverse()) as unknown as TurnInput;
    assert.equal(turnInputHash(reordered), hash);
    for (const changed of [
      { ...input, history: [{ role: 'user' as const, content: 'opening two' }] },
      { ...input, seed: 8 },
      { ...input, turn: 2 },
      { ...input, settings: { ...settings, policy: { ...settings.policy, model: 'fake-policy@2' } } },
      { ...input, settings: { ...settings, policy: { ...settings.policy, weightVersion: 'run@3' } } },
    ])
      assert.notEqual(turnInputHash(changed), hash, JSON.stringify(changed).slice(0, 80));
  });

  it("a superseded attempt's write is refused and changes nothing; the newer attempt's writes land", async () => {
    // Two workers' journals over one directory: the stale attempt and the one that replaced it.
    const stale = await storeTurnJournal(new FileArtifactStore(dir), NO_WAIT).claim(KEY, 'input-a');
    await stale.write({ policy: { text: 'stale policy' } });
    const newer = await storeTurnJournal(new FileArtifactStore(dir), NO_WAIT).claim(KEY, 'input-a');
    assert.deepEqual(newer.recorded, { policy: { text: 'stale policy' } }, 'it goes on from what was journalled');
    await assert.rejects(stale.write({ policy: { text: 'stale policy' }, analysis: { text: 'stale' } }), (error) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, TURN_SUPERSEDED);
      assert.equal(error.nonRetryable, true);
      return true;
    });
    await newer.write({ policy: { text: 'stale policy' }, analysis: { text: 'newer' } });
    const record = JSON.parse((await new FileArtifactStore(dir).getText(KEY))!) as { finished: unknown };
    assert.deepEqual(record.finished, { policy: { text: 'stale policy' }, analysis: { text: 'newer' } });
    await assert.rejects(stale.write({}), (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED);
  });

  it("an attempt from an older workflow task is superseded at its claim when a newer task's attempt holds the turn, even if it claims second", async () => {
    const store = new FileArtifactStore(dir);
    const newer = await storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-a', 40);
    await newer.write({ policy: { text: 'the newer attempt made it' } });
    // A zombie's attempt, scheduled by the workflow task that timed out (event 31), starts only now.
    await assert.rejects(storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-a', 31), (error) => {
      assert.equal((error as ApplicationFailure).type, TURN_SUPERSEDED, String(error));
      assert.match((error as Error).message, /a newer workflow task \(at event 40; this attempt's at event 31\)/);
      return true;
    });
    await newer.confirm(); // it took nothing from the newer attempt
    const retried = await storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-a', 40); // the same task's retry
    assert.deepEqual(retried.recorded, { policy: { text: 'the newer attempt made it' } });
    // the attempt it replaced (same task: a local attempt past its timeout) is stopped at its next write
    await newer.confirm();
    await assert.rejects(newer.write({}), (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED);
  });

  it("a zombie's attempt cannot start a turn the newer task has not reached yet, and stops at its next request once that task plays any turn", async () => {
    const store = new FileArtifactStore(dir);
    const turn = (n: number) => KEY.replace('turn-1.json', `turn-${n}.json`);
    // The zombie (task at event 31) claimed turn 2 before the newer task (event 40) took the dialogue over.
    const zombie = await storeTurnJournal(store, NO_WAIT).claim(turn(2), 'input-2', 31);
    await zombie.confirm();
    await storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-1', 40); // the newer task replays turn 1
    await assert.rejects(zombie.confirm(), (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED);
    await assert.rejects(
      storeTurnJournal(store, NO_WAIT).claim(turn(3), 'input-3', 31),
      (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED,
    );
    assert.equal(await store.getText(turn(3)), null, 'the zombie claimed nothing');
  });

  it('two attempts of one timed-out workflow task share its history length: the later-started one stops the other at its next request, and at its claim', async () => {
    const store = new FileArtifactStore(dir);
    const turn = (n: number) => KEY.replace('turn-1.json', `turn-${n}.json`);
    const t0 = Date.parse('2026-11-29T10:00:00Z');
    // Attempt 2 of the task at event 34 went to the frozen worker's sticky poll; attempt 3 (same
    // length, started 20 s later) to the worker that took over. The frozen one wakes holding attempt 2.
    const zombie = await storeTurnJournal(store, NO_WAIT).claim(turn(2), 'input-2', 34, t0);
    await zombie.confirm();
    const taker = await storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-1', 34, t0 + 20_000);
    await assert.rejects(zombie.confirm(), (error) => {
      assert.equal((error as ApplicationFailure).type, TURN_SUPERSEDED, String(error));
      assert.match(
        (error as Error).message,
        /a newer attempt of the workflow task at event 34 \(started 2026-11-29T10:00:20/,
      );
      return true;
    });
    await assert.rejects(
      storeTurnJournal(store, NO_WAIT).claim(turn(3), 'input-3', 34, t0),
      (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED,
    );
    await taker.confirm();
    // An attempt of the code before (no start time) counts as the oldest of its length.
    await assert.rejects(
      storeTurnJournal(store, NO_WAIT).claim(turn(3), 'input-3', 34),
      (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED,
    );
    assert.equal(await store.getText(turn(3)), null, 'the stale attempts claimed nothing');
  });

  it('attempts claiming one turn at once: exactly one of them can still write', async () => {
    const claims = await Promise.all(
      Array.from({ length: 8 }, () => storeTurnJournal(new FileArtifactStore(dir), NO_WAIT).claim(KEY, 'input-a')),
    );
    const wrote = await Promise.all(
      claims.map((claim, i) =>
        claim.write({ policy: { text: `attempt ${i}` } }).then(
          () => true,
          (error: unknown) => {
            assert.equal((error as ApplicationFailure).type, TURN_SUPERSEDED, String(error));
            return false;
          },
        ),
      ),
    );
    assert.equal(wrote.filter(Boolean).length, 1, `writers: ${JSON.stringify(wrote)}`);
  });

  it('a write that fails once is retried in place and lands', async () => {
    const store = new BlippingStore(dir, 1, 1);
    const claim = await storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-a');
    await claim.write({ policy: { text: 'kept' } });
    assert.equal(store.writes, 3, 'the claim, the failed write and its retry');
    assert.deepEqual((await storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-a')).recorded, {
      policy: { text: 'kept' },
    });
  });

  it('a full disk fails the write as the store being full, naming where (the run then waits for the operator)', async () => {
    const store = new FullDiskStore(dir);
    await assert.rejects(storeTurnJournal(store, NO_WAIT).claim(KEY, 'input-a'), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, ARTIFACT_FAILURE_TYPES.full);
      assert.equal(error.nonRetryable, true);
      assert.match(error.message, /^artifact store .*turn-1\.json is full \(ENOSPC/);
      assert.ok(error.message.includes(store.locate(KEY)));
      return true;
    });
  });
});
