import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createDialogueTurnActivities } from '../../src/activities/dialogueTurn.js';
import { endpointGates, gatedLlmCalls } from '../../src/activities/index.js';
import { storeTurnJournal, TURN_SUPERSEDED } from '../../src/journal/turnJournal.js';
import { turnJournalKey } from '../../src/journal/turnJournalKeys.js';
import { turnInputHash } from '../../src/journal/journalInput.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import type { PlayedTurn, TurnInput } from '../../src/core/dialogueTurn.js';
import { defaultPolicySystemPrompt } from '../../src/core/prompts/policy.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { fixtureScenario, testConfig } from '../support/rolloutRig.js';
import { BlippingStore } from '../support/blippingStore.js';

/**
 * A local turn activity (as the rollout worker runs it) whose journal write after its policy call
 * fails: the finished call must not be made again, whether the write lands on a retry in place or
 * the next attempt goes on from the calls the failed one kept.
 */
describe('local turn activity: a failed journal write after a finished call', () => {
  let dir: string;
  let fake: FakeOpenAIServer;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'attune-turn-journal-'));
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 1 }) });
  });
  afterEach(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function turnInput(): TurnInput {
    const scenario = fixtureScenario('test-venting-negative-baker');
    const settings = rolloutSettingsFromConfig(testConfig(fake.url));
    return {
      settings,
      scenario,
      systemPrompt: defaultPolicySystemPrompt(scenario.language, settings.think),
      history: [{ role: 'user', content: scenario.firstMessage ?? 'hello' }],
      emotion: 40,
      turn: 1,
      seed: 11,
    };
  }

  const EXECUTION = { workflowId: 'rollout-w', runId: 'run-1' };

  /** The turn activity of one rollout worker (its calls gated as the worker gates them), its journal in `store`, calls to the fake server. */
  function localTurn(store: FileArtifactStore) {
    const gates = endpointGates({ policy: { maxConcurrency: 4 }, simulator: { maxConcurrency: 4 } });
    const activities = createDialogueTurnActivities(gatedLlmCalls(gates), storeTurnJournal(store, [1, 1, 1]));
    const env = new MockActivityEnvironment({ isLocal: true, workflowExecution: EXECUTION });
    return (input: TurnInput) => env.run(activities.playDialogueTurn, input) as Promise<PlayedTurn>;
  }

  it('a write that fails once is retried in place: the turn finishes, each call made once', async () => {
    // The claim lands; the write after the policy call fails once.
    const play = localTurn(new BlippingStore(dir, 1, 1));
    const played = await play(turnInput());
    assert.ok(played.record.analysis, 'the turn went on past its policy call');
    assert.equal(fake.count('policy'), 1);
    assert.equal(fake.count('analysis'), 1);
    for (const [key, count] of fake.successCountsByKey()) assert.equal(count, 1, `request ${key} answered ${count}x`);
  });

  it('an attempt whose turn a newer attempt claimed after its policy call makes no further call (a zombie stops before its next request)', async () => {
    const input = turnInput();
    /** A newer attempt (another worker, the same turn) claims it right after this one journals its policy reply. */
    class TakenOverAfterFirstWrite extends FileArtifactStore {
      writes = 0;
      override async putJsonIf(key: string, value: unknown, expected: string | null): Promise<string | null> {
        const version = await super.putJsonIf(key, value, expected);
        if (++this.writes === 2)
          await storeTurnJournal(new FileArtifactStore(dir)).claim(turnJournalKey(EXECUTION, 1), turnInputHash(input));
        return version;
      }
    }
    const play = localTurn(new TakenOverAfterFirstWrite(dir));
    await assert.rejects(play(input), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, TURN_SUPERSEDED);
      assert.deepEqual(error.details?.[1], { failedAt: 'journal' });
      return true;
    });
    assert.equal(fake.count('policy'), 1);
    assert.equal(fake.count('analysis'), 0, 'the superseded attempt made no call after the newer one claimed the turn');
  });

  it('a write that keeps failing fails the turn carrying its finished call; the next attempt does not make it again', async () => {
    // Every in-place try of the write after the policy call fails (1 + 3 retries).
    const play = localTurn(new BlippingStore(dir, 1, 4));
    await assert.rejects(play(turnInput()), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      const [carried, failure] = error.details ?? [];
      assert.deepEqual(failure, { failedAt: 'journal' });
      assert.ok((carried as { policy?: unknown } | null)?.policy, 'the policy reply travels with the failure');
      return true;
    });
    assert.equal(fake.count('policy'), 1);
    const played = await play(turnInput());
    assert.ok(played.record.analysis);
    assert.equal(fake.count('policy'), 1, 'the retried turn reused the policy reply its failed write kept');
    for (const [key, count] of fake.successCountsByKey()) assert.equal(count, 1, `request ${key} answered ${count}x`);
  });
});
