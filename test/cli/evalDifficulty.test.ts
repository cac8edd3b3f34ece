import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeOpenAIServer, type CallContext } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS, testConfigSet } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { simulatorPromptHash } from '../../src/core/prompts/simulatorPromptHash.js';
import { attune } from './attuneProcess.js';

/** The hard level's analysis prompt says so (src/core/prompts/difficulty.ts); the fake judges by it. */
const HARD_NOTE = 'you are hard to reach';
const isHard = (ctx: CallContext) =>
  (ctx.body.messages.find((m) => m.role === 'system')?.content ?? '').includes(HARD_NOTE);

interface EvalJson {
  evalId: string;
  score: number;
  manifest: { promptHash: string; simulator: { difficulty?: string } };
}

describe('the simulator difficulty, from outside', function () {
  this.timeout(300_000);
  let fake: FakeOpenAIServer;
  let address: string;
  before(async () => {
    address = (await sharedTestEnv()).address;
    // A hard user is harder to please: the fake's emotion moves by the level its prompt names.
    fake = await FakeOpenAIServer.start({ analysis: (ctx) => ({ emotionChange: isHard(ctx) ? -2 : 4 }) });
  });
  after(async () => {
    await fake.close();
  });

  it('eval --set simulator.difficulty=hard records hard in its environment; compare with a normal one refuses, naming difficulty', async () => {
    // One artifact store for both evaluations and the comparison; a fresh task-queue prefix per command.
    const home = `home=${mkdtempSync(join(tmpdir(), 'attune-difficulty-'))}`;
    const set = (...extra: string[]) =>
      testConfigSet(fake.url, [
        `scenarios.eval=${FIXTURE_SCENARIOS}`,
        'evaluation.dialogue.maxTurns=2',
        home,
        ...extra,
      ]).flatMap((s) => ['--set', s]);
    const env = { TEMPORAL_ADDRESS: address };

    // The contract's command, as an operator types it (plus the test's endpoints and store).
    const hard = await attune(
      ['eval', '--split', 'eval', '--json', '--set', 'simulator.difficulty=hard', ...set()],
      env,
    );
    assert.equal(hard.code, 0, hard.stderr);
    const hardReport = JSON.parse(hard.stdout) as EvalJson;
    assert.equal(hardReport.manifest.simulator.difficulty, 'hard');
    assert.equal(hardReport.manifest.promptHash, simulatorPromptHash(['hard']));
    // The level reached the simulator's calls: the fake saw the hard prompt and scored by it.
    assert.equal(hardReport.score, 36);
    const analyses = fake.calls.filter((c) => c.role === 'analysis');
    assert.ok(analyses.length > 0 && analyses.every((c) => c.messages[0]?.content.includes(HARD_NOTE)));

    const normal = await attune(['eval', '--split', 'eval', '--json', ...set()], env);
    assert.equal(normal.code, 0, normal.stderr);
    const normalReport = JSON.parse(normal.stdout) as EvalJson;
    // Normal is the default and is written as no field: its manifest is that of versions before levels.
    assert.equal(normalReport.manifest.simulator.difficulty, undefined);
    assert.equal(normalReport.manifest.promptHash, simulatorPromptHash());
    assert.equal(normalReport.score, 48);

    const ids = [hardReport.evalId, normalReport.evalId];
    const refused = await attune(['eval', 'compare', ...ids, ...set()], env);
    assert.notEqual(refused.code, 0, refused.stderr);
    assert.match(refused.stderr, /different environments \(promptHash, simulator\.difficulty\)/);
    assert.match(refused.stderr, /simulator\.difficulty is "hard" in eval-\S+, "normal" in eval-\S+/);
    assert.equal(refused.stdout, '');

    const allowed = await attune(['eval', 'compare', ...ids, '--json', '--allow-different-environment', ...set()], env);
    assert.equal(allowed.code, 0, allowed.stderr);
    const comparison = JSON.parse(allowed.stdout) as { environmentDiffers: string[]; score: { delta: number } };
    assert.deepEqual(comparison.environmentDiffers, ['promptHash', 'simulator.difficulty']);
    assert.equal(comparison.score.delta, 12);
  });
});
