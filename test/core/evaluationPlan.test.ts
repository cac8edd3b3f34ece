import assert from 'node:assert/strict';
import {
  evaluationManifest,
  isEnvironmentField,
  manifestDifferences,
  manifestFieldDifferences,
} from '../../src/core/evaluationManifest.js';
import { evaluationDialogueSeed, planEvaluationDialogues } from '../../src/core/evaluationPlan.js';
import { simulatorPromptHash } from '../../src/core/prompts/simulatorPromptHash.js';
import type { RolloutSettings } from '../../src/core/rolloutSettingsSchema.js';
import { scenarioHash } from '../../src/core/scenarioHash.js';
import { loadScenarioLibrary } from '../../src/scenarios/library.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';
import { stableHash } from '../../src/core/seeds.js';

const endpoint = {
  apiKeyEnv: 'KEY',
  timeoutMs: 1000,
  maxTokens: 256,
  taskQueue: 'q',
  retry: { initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 60_000, maximumAttempts: 8 },
};
const settings: RolloutSettings = {
  llmCalls: 'activity',
  activityPer: 'call',
  initialEmotion: 40,
  maxTurns: 10,
  think: false,
  maxWaitMinutes: 60,
  artifactsTaskQueue: 'a',
  policy: { ...endpoint, baseURL: 'http://policy/v1', model: 'p', temperature: 0.7 },
  simulator: {
    ...endpoint,
    baseURL: 'http://sim/v1',
    model: 's',
    temperature: 0,
    structuredOutput: 'json_schema',
    parseRetries: 2,
  },
};

describe('core: evaluation plan and manifest', () => {
  it('one repeat keeps the ids and seeds evaluations always had', () => {
    const plan = planEvaluationDialogues('ev', [{ id: 'a' }, { id: 'b' }], 1234, 1);
    assert.deepEqual(
      plan.map((d) => [d.rolloutId, d.seed, d.repeat]),
      [
        ['ev--a', (1234 + stableHash('a')) % 2_147_483_647, 0],
        ['ev--b', (1234 + stableHash('b')) % 2_147_483_647, 0],
      ],
    );
  });

  it('repeats get their own ids and seeds, scenario by scenario', () => {
    const plan = planEvaluationDialogues('ev', [{ id: 'a' }, { id: 'b' }], 1234, 3);
    assert.deepEqual(
      plan.map((d) => d.rolloutId),
      ['ev--a', 'ev--a--repeat=2', 'ev--a--repeat=3', 'ev--b', 'ev--b--repeat=2', 'ev--b--repeat=3'],
    );
    assert.equal(new Set(plan.map((d) => d.seed)).size, 6);
    assert.equal(plan[1]!.seed, evaluationDialogueSeed(1234, 'a', 1));
  });

  it('the manifest records endpoints, protocol, prompt hash, seeds and version', () => {
    const m = evaluationManifest(settings, {
      base: 1234,
      repeats: 2,
      dialogues: [
        { scenarioId: 'a', seed: 1 },
        { scenarioId: 'a', seed: 2 },
      ],
    });
    assert.deepEqual(m.simulator, { baseURL: 'http://sim/v1', model: 's' });
    assert.equal(m.protocol.maxTurns, 10);
    assert.equal(m.protocol.policySystemPrompt, 'default');
    assert.deepEqual(m.seeds, { base: 1234, repeats: 2, dialogues: { a: [1, 2] } });
    assert.match(m.promptHash, /^[0-9a-f]{8}$/);
    assert.equal(m.promptHash, simulatorPromptHash());
    assert.match(m.attuneVersion, /^\d+\.\d+\.\d+/);
  });

  it('manifest differences name the protocol field and both values; the policy is not one of them', () => {
    const seeds = { base: 1, repeats: 1, dialogues: [{ scenarioId: 'a', seed: 5 }] };
    const a = evaluationManifest(settings, seeds);
    const otherPolicy = evaluationManifest({ ...settings, policy: { ...settings.policy, model: 'q' } }, seeds);
    assert.deepEqual(manifestDifferences(a, otherPolicy), []);
    const b = evaluationManifest(
      { ...settings, maxTurns: 5, simulator: { ...settings.simulator, model: 'other' } },
      { ...seeds, base: 2 },
    );
    assert.deepEqual(manifestDifferences(a, b, { a: 'x', b: 'y' }), [
      'protocol differs: protocol.maxTurns is 10 in x, 5 in y',
      'protocol differs: seeds.base is 1 in x, 2 in y',
      'protocol differs: simulator.model is "s" in x, "other" in y',
    ]);
    assert.match(manifestDifferences(a, { ...a, promptHash: '00000000' })[0]!, /promptHash/);
    assert.match(manifestDifferences(null, a, { a: 'old', b: 'new' })[0]!, /no manifest for old/);
  });

  it('the environment that makes scores incomparable: protocol, simulator and prompts, not the version or the base seed', () => {
    const seeds = { base: 1, repeats: 1, dialogues: [{ scenarioId: 'a', seed: 5 }] };
    const a = evaluationManifest(settings, seeds);
    const b = evaluationManifest(
      { ...settings, initialEmotion: 30, simulator: { ...settings.simulator, model: 'other' } },
      { ...seeds, base: 2 },
    );
    const differing = manifestFieldDifferences({ ...a, attuneVersion: '0.0.1' }, { ...b, promptHash: '00000000' });
    assert.deepEqual(
      differing.filter((d) => isEnvironmentField(d.field)).map((d) => d.field),
      ['promptHash', 'protocol.initialEmotion', 'simulator.model'],
    );
    assert.deepEqual(
      differing.filter((d) => !isEnvironmentField(d.field)).map((d) => d.field),
      ['attuneVersion', 'seeds.base'],
    );
  });

  it('a scenario file changed under an id both evaluated is an environment difference; a scenario only one evaluated is not', () => {
    const seeds = { base: 1, repeats: 1, dialogues: [{ scenarioId: 'a', seed: 5 }] };
    const a = evaluationManifest(settings, seeds, { a: '0000000a', b: '0000000b' });
    const edited = evaluationManifest(settings, seeds, { a: 'ffffffff', c: '0000000c' });
    assert.deepEqual(manifestFieldDifferences(a, edited), [{ field: 'scenarios.a', a: '"0000000a"', b: '"ffffffff"' }]);
    assert.ok(isEnvironmentField('scenarios.a'));
    assert.deepEqual(manifestFieldDifferences(a, evaluationManifest(settings, seeds, { a: '0000000a' })), []);
    assert.equal(evaluationManifest(settings, seeds).scenarios, undefined, 'no hashes, no field');
  });

  it('a served model that differs where both listed one is an environment difference; an unlisted one is not', () => {
    const seeds = { base: 1, repeats: 1, dialogues: [{ scenarioId: 'a', seed: 5 }] };
    const served = (root: string) => ({ id: 's', root, ownedBy: 'vllm' });
    const a = evaluationManifest(settings, seeds, {}, served('/models/judge-v1'));
    const b = evaluationManifest(settings, seeds, {}, served('/models/judge-v2'));
    assert.deepEqual(
      manifestFieldDifferences(a, b).map((d) => d.field),
      ['simulator.served.root'],
    );
    assert.ok(isEnvironmentField('simulator.served.root'));
    const unlisted = evaluationManifest(settings, seeds, {}, { unavailable: 'GET …/models answered HTTP 404' });
    assert.deepEqual(manifestFieldDifferences(a, unlisted), []);
    assert.deepEqual(manifestFieldDifferences(a, evaluationManifest(settings, seeds)), []);
  });

  it('hashes a scenario by its content', () => {
    const scenario = loadScenarioLibrary(FIXTURE_SCENARIOS).scenarios[0]!;
    assert.match(scenarioHash(scenario), /^[0-9a-f]{8}$/);
    assert.equal(scenarioHash({ ...scenario }), scenarioHash(scenario));
    assert.notEqual(scenarioHash({ ...scenario, id: `${scenario.id}x` }), scenarioHash(scenario));
  });
});
