import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attune } from '../cli/attuneProcess.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS, fixtureScenario, testConfigSet } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { writeKeysFile } from './keyFiles.js';
import { dialogueMarkers, historyWithoutCodec, plaintextFound } from './plainHistory.js';

describe('the attune command with ATTUNE_CODEC_KEYS_FILE', function () {
  this.timeout(240_000);
  let fake: FakeOpenAIServer;
  let address: string;
  const keys = writeKeysFile(['k1']);
  const set = (extra: string[] = []) => testConfigSet(fake.url, extra).flatMap((s) => ['--set', s]);
  before(async () => {
    address = (await sharedTestEnv()).address;
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 4 }) });
  });
  after(async () => {
    await fake.close();
  });

  it('rollout --json names its workflow, whose history (read without the codec) shows no dialogue text', async () => {
    const scenario = fixtureScenario('test-venting-negative-baker');
    const args = ['rollout', '--scenario', scenario.id, '--scenarios', FIXTURE_SCENARIOS, '--max-turns', '2'];
    const result = await attune([...args, '--json', ...set()], {
      TEMPORAL_ADDRESS: address,
      ATTUNE_CODEC_KEYS_FILE: keys,
    });
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout) as { workflowId: string; turns: number; rolloutId: string };
    assert.equal(summary.turns, 2);
    assert.equal(summary.workflowId, summary.rolloutId);
    const raw = await historyWithoutCodec(address, summary.workflowId);
    assert.deepEqual(plaintextFound(raw, dialogueMarkers(scenario)), []);

    const printed = await attune([...args, ...set()], { TEMPORAL_ADDRESS: address, ATTUNE_CODEC_KEYS_FILE: keys });
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /\[Marta Quell\] so apparently ten years of baking/);
  });

  it('eval and report work with the codec', async () => {
    const home = mkdtempSync(join(tmpdir(), 'attune-codec-cli-'));
    const env = { TEMPORAL_ADDRESS: address, ATTUNE_CODEC_KEYS_FILE: keys };
    const name = `codec-cli-eval-${Date.now()}`;
    const evaluated = await attune(
      [
        'eval',
        '--scenarios',
        FIXTURE_SCENARIOS,
        '--name',
        name,
        ...set(['evaluation.dialogue.maxTurns=2', `home=${home}`]),
      ],
      env,
    );
    assert.equal(evaluated.code, 0, evaluated.stderr);
    const report = await attune(['report', name, '--html-only', '--set', `home=${home}`], env);
    assert.equal(report.code, 0, report.stderr);
    assert.match(report.stdout, /index\.html/);
  });

  it('a bad keys file stops the command before it starts anything, naming the file and the entry', async () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'attune-keys-')), 'keys.json');
    writeFileSync(bad, JSON.stringify({ keys: [{ id: 'k1', key: Buffer.alloc(16).toString('base64') }] }));
    const result = await attune(
      ['rollout', '--scenario', 'test-venting-negative-baker', '--scenarios', FIXTURE_SCENARIOS, ...set()],
      { TEMPORAL_ADDRESS: address, ATTUNE_CODEC_KEYS_FILE: bad },
    );
    assert.equal(result.code, 1);
    assert.ok(result.stderr.includes(bad), result.stderr);
    assert.match(result.stderr, /keys\[0\] \(id "k1"\): the key must be base64 of 32 bytes, got 16 bytes/);
  });
});
