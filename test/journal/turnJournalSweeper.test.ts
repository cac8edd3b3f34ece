import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { ApplicationFailure } from '@temporalio/common';
import { storeTurnJournal, TURN_SUPERSEDED } from '../../src/journal/turnJournal.js';
import {
  closedJournalRuns,
  journalIdPart,
  journalledRuns,
  turnJournalClosedKey,
  turnJournalKey,
  type JournalledRun,
} from '../../src/journal/turnJournalKeys.js';
import { isValidArtifactKey } from '../../src/core/names.js';
import { createLogger } from '../../src/log.js';
import { temporal } from '@temporalio/proto';
import { LIMITS } from '../../src/config/limits.js';
import {
  runStateOfStatus,
  runStateVia,
  TurnJournalSweeper,
  unknownSinceKey,
  type RunState,
} from '../../src/journal/turnJournalSweeper.js';
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
      async (r): Promise<RunState> => {
        if (r.workflowId === 'unknown') throw new Error('server unreachable');
        return r.workflowId === 'closed' ? 'closed' : 'open';
      },
      quiet,
    );
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 2 });
    assert.deepEqual(journalledRuns(await store.list('journals/')), [running, unknown]);
    // the closed run leaves its marker: a zombie attempt of it that finds no record is superseded
    assert.deepEqual(closedJournalRuns(await store.list('journals/')), [closedRun]);
    const zombie = storeTurnJournal(store, [1]).claim(turnJournalKey(closedRun, 3), 'any input', 1);
    await assert.rejects(zombie, (error) => (error as ApplicationFailure).type === TURN_SUPERSEDED);
    assert.deepEqual(journalledRuns(await store.list('journals/')), [running, unknown], 'the zombie wrote nothing');
    assert.deepEqual(await store.list('transcripts/'), ['transcripts/t.json']);
  });

  for (const { attempt, fence, write } of [
    { attempt: 'a zombie', fence: 3, write: 'fence' },
    { attempt: 'an unfenced zombie (code before fences)', fence: undefined, write: 'turn record' },
  ])
    it(`${attempt} stopped between finding no ${write} and writing its own, whose dialogue was played and swept meanwhile, finds the journal closed once its write lands`, async () => {
      const dialogue = run('g28');
      // The zombie's first claim found nothing, then stopped before its write landed.
      let wake = () => {};
      const woken = new Promise<void>((resolve) => (wake = resolve));
      let stopped = () => {};
      const stoppedAtWrite = new Promise<void>((resolve) => (stopped = resolve));
      const frozen = Object.assign(Object.create(store) as FileArtifactStore, {
        putJsonIf: async (...args: Parameters<FileArtifactStore['putJsonIf']>) => {
          stopped();
          await woken;
          return store.putJsonIf(...args);
        },
      });
      const zombie = storeTurnJournal(frozen, [1]).claim(turnJournalKey(dialogue, 0), 'opening', fence, 1_000);
      await stoppedAtWrite;
      // Meanwhile the worker that took over (task at event 6) plays the dialogue, and it ends and is swept.
      const taker = await storeTurnJournal(store, [1]).claim(turnJournalKey(dialogue, 0), 'opening', 6, 21_000);
      await taker.write({ opening: 'hello' });
      const sweeper = new TurnJournalSweeper(store, async () => 'closed', quiet);
      assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 0 });
      wake();
      await assert.rejects(zombie, (error) => {
        assert.equal((error as ApplicationFailure).type, TURN_SUPERSEDED, String(error));
        return true;
      });
      assert.deepEqual(
        await store.list(`journals/${dialogue.workflowId}/`),
        [turnJournalClosedKey(dialogue)],
        'the zombie left nothing beside the closed marker',
      );
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
        return asked.length >= 2 ? 'closed' : 'open';
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
    const sweeper = new TurnJournalSweeper(store, async () => (++asked > 0 ? 'closed' : 'open'), quiet);
    assert.equal(await sweeper.afterClose(run('per-call')), false);
    assert.equal(asked, 0);
  });

  it('stop: ends the waits at once and leaves the journal', async () => {
    const open = run('open');
    await journal(open);
    const sweeper = new TurnJournalSweeper(store, async () => 'open', quiet);
    const removed = sweeper.afterClose(open);
    await sweeper.stop();
    assert.equal(await removed, false);
    assert.equal(journalledRuns(await store.list('journals/')).length, 1);
  });

  it('stop: one last look (the runs that said they were ending, then the store) removes the journals of the runs closed by then (real dev server)', async () => {
    // What a command that stops its workers right after its last dialogues (npm run demo) leaves.
    const env = await sharedTestEnv();
    const handle = await env.client.workflow.start('sweeperNoSuchWorkflow', {
      taskQueue: `sweeper-nobody-${Date.now()}`,
      workflowId: `sweeper-last-look-${Date.now()}`,
    });
    const closed = run(handle.workflowId, handle.firstExecutionRunId);
    await handle.terminate('its dialogue is over');
    const still = await env.client.workflow.start('sweeperNoSuchWorkflow', {
      taskQueue: `sweeper-nobody-${Date.now()}`,
      workflowId: `sweeper-still-open-${Date.now()}`,
    });
    const open = run(still.workflowId, still.firstExecutionRunId);
    // A dialogue that failed: its run never said it was ending, and the next periodic sweep is 10 minutes on.
    const failedHandle = await env.client.workflow.start('sweeperNoSuchWorkflow', {
      taskQueue: `sweeper-nobody-${Date.now()}`,
      workflowId: `sweeper-failed-${Date.now()}`,
    });
    await failedHandle.terminate('its dialogue failed');
    const failed = run(failedHandle.workflowId, failedHandle.firstExecutionRunId);
    await journal(closed);
    await journal(open);
    await journal(failed);
    const sweeper = new TurnJournalSweeper(store, runStateVia(env.nativeConnection, env.namespace ?? 'default'), quiet);
    const removed = [sweeper.afterClose(closed), sweeper.afterClose(open)];
    await sweeper.stop();
    await Promise.all(removed);
    assert.deepEqual(journalledRuns(await store.list('journals/')), [open], 'the open run keeps its journal');
    assert.ok((await store.list('journals/')).includes(turnJournalClosedKey(closed)), 'the closed one left its marker');
    await still.terminate('the test is done with it');
  });

  it('a run is closed only for a status that says so: paused, running, unspecified or no info keep the journal', () => {
    const S = temporal.api.enums.v1.WorkflowExecutionStatus;
    const closed = ['COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED', 'CONTINUED_AS_NEW', 'TIMED_OUT'] as const;
    for (const name of closed) assert.equal(runStateOfStatus(S[`WORKFLOW_EXECUTION_STATUS_${name}`]), 'closed', name);
    for (const name of ['RUNNING', 'PAUSED', 'UNSPECIFIED'] as const)
      assert.equal(runStateOfStatus(S[`WORKFLOW_EXECUTION_STATUS_${name}`]), 'open', name);
    assert.equal(runStateOfStatus(undefined), 'open', 'an answer without execution info');
    assert.equal(runStateOfStatus(null), 'open', 'an answer without execution info');
  });

  it('sweep: a run the server does not know keeps its journal for turnJournalUnknownKeepMs from the first sweep that found it so, then it goes', async () => {
    const gone = run('past-retention');
    await journal(gone);
    let now = Date.parse('2026-11-01T00:00:00Z');
    let asked = 0;
    const sweep = () =>
      new TurnJournalSweeper(
        store,
        async (): Promise<RunState> => {
          asked++;
          return 'unknown';
        },
        quiet,
        () => now,
      ).sweep();
    assert.deepEqual(await sweep(), { removed: 0, kept: 1 });
    assert.ok((await store.getText(unknownSinceKey(gone))) !== null, 'the first sweep marked when');
    now += LIMITS.turnJournalUnknownKeepMs - 1;
    // a new sweeper (a restarted worker) reads the mark from the store and does not start the wait again
    assert.deepEqual(await sweep(), { removed: 0, kept: 1 });
    now += 1;
    assert.deepEqual(await sweep(), { removed: 1, kept: 0 });
    assert.deepEqual(await store.list('journals/'), [turnJournalClosedKey(gone)], 'only the closed marker is left');
    assert.equal(asked, 3);
    now += LIMITS.turnJournalClosedKeepMs;
    await sweep();
    assert.deepEqual(await store.list('journals/'), [], 'the marker goes after turnJournalClosedKeepMs');
    assert.equal(asked, 3, 'a marker alone costs no question to the server');
  });

  it('runStateVia (real dev server): a run the server does not know is unknown, a running one open, a finished one closed', async () => {
    const env = await sharedTestEnv();
    const stateOf = runStateVia(env.nativeConnection, env.namespace ?? 'default');
    assert.equal(await stateOf(run(`never-started-${Date.now()}`, '01a21d7f-9ad7-7216-a360-345738b1700b')), 'unknown');
    // a workflow no worker takes stays running until it is terminated
    const handle = await env.client.workflow.start('sweeperNoSuchWorkflow', {
      taskQueue: `sweeper-nobody-${Date.now()}`,
      workflowId: `sweeper-state-${Date.now()}`,
    });
    const started = run(handle.workflowId, handle.firstExecutionRunId);
    assert.equal(await stateOf(started), 'open');
    await handle.terminate('the test is done with it');
    assert.equal(await stateOf(started), 'closed');
  });
});
