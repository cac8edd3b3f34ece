import assert from 'node:assert/strict';
import { generatePolicyTurn } from '../../src/activities/policy.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';
import { replicaOrder } from '../../src/core/replicaChoice.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { testConfig } from '../support/rolloutRig.js';

/**
 * Full weights on replicas updated in turn: while one replica reloads (its label reads `loading
 * run@k`), or serves a version older than a call takes, the call goes to a replica that serves one it
 * takes, instead of waiting out the reload.
 */
describe('policy calls on replicas updated in turn (in-flight updates, real HTTP fakes)', function () {
  // A call that waited out the reload would hang until the fake's label changed, which it never does here.
  this.timeout(20_000);
  let a: FakeOpenAIServer;
  let b: FakeOpenAIServer;
  before(async () => {
    a = await FakeOpenAIServer.start({});
    b = await FakeOpenAIServer.start({});
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  const endpoint = () => ({
    ...rolloutSettingsFromConfig(testConfig(a.url)).policy,
    replicas: [a.url, b.url],
    weightVersion: 'run@1',
    acceptNewerWeights: true as const,
  });
  /** A seed whose replica order tries `first` before the other. */
  const seedTrying = (first: string) => {
    for (let seed = 1; ; seed++) if (replicaOrder(endpoint(), seed)[0] === first) return seed;
  };
  const policyCalls = (fake: FakeOpenAIServer) => fake.calls.filter((c) => c.role === 'policy').length;
  const say = (seed: number) =>
    generatePolicyTurn({ endpoint: endpoint(), messages: [{ role: 'user', content: 'hi' }], think: false, seed });

  it('skips a replica that is reloading to a newer version when another serves one the call takes: the call is made there, at once', async () => {
    a.fullWeights.version = 'loading run@2';
    b.fullWeights.version = 'run@1';
    const before = { a: policyCalls(a), b: policyCalls(b) };
    const turn = await say(seedTrying(a.url));
    assert.equal(turn.weightVersion, 'run@1');
    assert.equal(policyCalls(a), before.a, 'nothing sent to the reloading replica');
    assert.equal(policyCalls(b), before.b + 1);
  });

  it('a replica on the newest version is tried first even where the seed names an older one', async () => {
    a.fullWeights.version = 'run@1';
    b.fullWeights.version = 'run@2';
    const before = { a: policyCalls(a), b: policyCalls(b) };
    const turn = await say(seedTrying(a.url));
    assert.equal(turn.weightVersion, 'run@1', 'a serves a version the call takes: the seed keeps its replica');
    a.fullWeights.version = 'run@0';
    const newer = await say(seedTrying(a.url));
    assert.equal(newer.weightVersion, 'run@2', 'a is older than the call takes: b serves it');
    assert.deepEqual({ a: policyCalls(a), b: policyCalls(b) }, { a: before.a + 1, b: before.b + 1 });
  });

  it('waits for a replica reloading to a version the call takes rather than for the publisher of one that is older', async () => {
    a.fullWeights.version = 'loading run@2';
    b.fullWeights.version = 'run@0';
    const checksOfA = () => a.fullWeights.calls.filter((c) => c.route === '/weight_info').length;
    const checksBefore = checksOfA();
    const turn = say(seedTrying(a.url));
    // The reload ends once the call has looked at a twice (the choice of replica, then the wait on it).
    while (checksOfA() < checksBefore + 2) await new Promise((resolve) => setImmediate(resolve));
    a.fullWeights.version = 'run@2';
    assert.equal((await turn).weightVersion, 'run@2');
  });
});
