import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { journalIdPart, journalledRuns, turnJournalKey, type JournalledRun } from '../../src/activities/turnJournal.js';
import { isValidArtifactKey } from '../../src/core/names.js';
import { createLogger } from '../../src/log.js';
import { runClosedVia, TurnJournalSweeper } from '../../src/workers/turnJournalSweeper.js';
import { sharedTestEnv } from '../support/temporalEnv.js';

const quiet = createLogger({}, 'error');
const run = (workflowId: string, runId = `run-of-${workflowId}`): JournalledRun => ({ workflowId, runId });

describe('turn journal sweeper', () => {
  let dir: string;
  let store: FileArtifactStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'attune-sweeper-'));
    store = new FileArtifactStore(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const journal = async (of: JournalledRun, turns = 2) => {
    for (let turn = 1; turn <= turns; turn++) await store.putJson(turnJournalKey(of, turn), { policy: 'x' });
  };

  it('names each journalled run once, workflow ids with slashes included, and ignores other keys', () => {
    const a = run('step-3/eval--cyclist', 'r1');
    const keys = [
      turnJournalKey(a, 1),
      turnJournalKey(a, 2),
      turnJournalKey(run('b', 'r2'), 1),
      'journals/b/r2/notes.txt',
    ];
    assert.deepEqual(journalledRuns(keys), [a, run('b', 'r2')]);
  });

  it('keys a valid workflow id as itself (journals written before keep their keys), any other reversibly', () => {
    assert.equal(journalIdPart('step-3/eval--cyclist'), 'step-3/eval--cyclist');
    const odd = ['nightly-2026-11-27T02:00:00Z-eval', 'a b', '..', 'x//y', '=b64=abc', 'émotion'];
    const runs = odd.map((id) => run(id, 'r'));
    const keys = runs.map((r) => turnJournalKey(r, 1));
    for (const key of keys) assert.ok(isValidArtifactKey(key), key);
    assert.deepEqual(journalledRuns(keys), runs);
  });

  it('sweep: removes the journals of closed runs only, and keeps one whose state it cannot learn', async () => {
    const closedRun = run('closed');
    const running = run('running');
    const unknown = run('unknown');
    for (const r of [closedRun, running, unknown]) await journal(r);
    await store.putJson('transcripts/t.json', {});
    const sweeper = new TurnJournalSweeper(
      store,
      async (r) => {
        if (r.workflowId === 'unknown') throw new Error('server unreachable');
        return r.workflowId === 'closed';
      },
      quiet,
    );
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 2 });
    assert.deepEqual(journalledRuns(await store.list('journals/')), [running, unknown]);
    assert.deepEqual(await store.list('transcripts/'), ['transcripts/t.json']);
  });

  it('afterClose: asks until the run is closed, and removes the journal only then', async () => {
    const ending = run('ending');
    const other = run('ending', 'a-later-run');
    await journal(ending);
    await journal(other);
    const asked: string[][] = [];
    const sweeper = new TurnJournalSweeper(
      store,
      async (r) => {
        asked.push(await store.list(`journals/${r.workflowId}/${r.runId}/`));
        return asked.length >= 2;
      },
      quiet,
    );
    assert.equal(await sweeper.afterClose(ending), true);
    assert.equal(asked.length, 2, 'asked again after the run was still open');
    assert.equal(asked[1]!.length, 2, 'the journal was still there when the run was last open');
    assert.deepEqual(journalledRuns(await store.list('journals/')), [other], 'only that run of the workflow');
  });

  it('afterClose: a run without a journal costs no question to the server', async () => {
    let asked = 0;
    const sweeper = new TurnJournalSweeper(store, async () => ++asked > 0, quiet);
    assert.equal(await sweeper.afterClose(run('per-call')), false);
    assert.equal(asked, 0);
  });

  it('stop: ends the waits at once and leaves the journal', async () => {
    const open = run('open');
    await journal(open);
    const sweeper = new TurnJournalSweeper(store, async () => false, quiet);
    const removed = sweeper.afterClose(open);
    await sweeper.stop();
    assert.equal(await removed, false);
    assert.equal(journalledRuns(await store.list('journals/')).length, 1);
  });

  it('runClosedVia (real dev server): a run the server does not know counts as open, so its journal stays', async () => {
    const env = await sharedTestEnv();
    const closed = runClosedVia(env.nativeConnection, env.namespace ?? 'default');
    assert.equal(await closed(run(`never-started-${Date.now()}`, '01a21d7f-9ad7-7216-a360-345738b1700b')), false);
  });
});
