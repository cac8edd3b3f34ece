import assert from 'node:assert/strict';
import { embeddedModelFit } from '../../src/config/embeddedModelFit.js';
import { loadConfig } from '../../src/config/load.js';
import { LOCAL_LLM_URL } from '../../src/config/schema.js';

const load = (set: string[] = []) => loadConfig({ env: {}, set });

describe('config: the embedded model server sets what calls it', () => {
  it('derives the evaluation concurrency and the call timeout from localLlm.parallel and requestTimeoutMs', () => {
    assert.deepEqual(embeddedModelFit({ parallel: 2, requestTimeoutMs: 600_000 }), {
      evaluationConcurrency: 2,
      callTimeoutMs: 605_000,
    });
    assert.deepEqual(embeddedModelFit({ parallel: 5, requestTimeoutMs: 60_000 }), {
      evaluationConcurrency: 5,
      callTimeoutMs: 65_000,
    });
  });

  it('the plain defaults point at the embedded server and fit it: no more dialogues than slots, no call cut before the server answers', () => {
    const config = load();
    assert.equal(config.simulator.baseURL, LOCAL_LLM_URL);
    assert.equal(config.policy.baseURL, LOCAL_LLM_URL);
    assert.equal(config.evaluation.concurrency, config.localLlm.parallel);
    assert.ok(config.simulator.timeoutMs > config.localLlm.requestTimeoutMs);
    assert.ok(config.policy.timeoutMs > config.localLlm.requestTimeoutMs);
    const larger = load(['localLlm.parallel=4', 'localLlm.requestTimeoutMs=900000']);
    assert.equal(larger.evaluation.concurrency, 4);
    assert.equal(larger.simulator.timeoutMs, embeddedModelFit(larger.localLlm).callTimeoutMs);
  });

  it('a value the operator wrote wins, and an endpoint elsewhere keeps the general defaults', () => {
    const written = load(['evaluation.concurrency=6', 'simulator.timeoutMs=30000']);
    assert.equal(written.evaluation.concurrency, 6);
    assert.equal(written.simulator.timeoutMs, 30_000);
    assert.equal(written.policy.timeoutMs, embeddedModelFit(written.localLlm).callTimeoutMs);
    const remote = load(['policy.baseURL=http://gpu-host:8000/v1', 'simulator.baseURL=https://api.example.com/v1']);
    assert.equal(remote.evaluation.concurrency, 8);
    assert.equal(remote.simulator.timeoutMs, 120_000);
    assert.equal(remote.policy.timeoutMs, 120_000);
    const simulatorOnly = load(['policy.baseURL=http://gpu-host:8000/v1']);
    assert.equal(simulatorOnly.evaluation.concurrency, simulatorOnly.localLlm.parallel);
    assert.equal(simulatorOnly.policy.timeoutMs, 120_000, 'the remote policy keeps its timeout');
    const heldOut = load([
      `evaluation.simulators=[{"name":"warm","temperature":0.7},{"name":"own","timeoutMs":1000},{"name":"api","baseURL":"https://api.example.com/v1","model":"m"}]`,
    ]);
    assert.deepEqual(
      heldOut.evaluation.simulators.map((s) => s.timeoutMs),
      [embeddedModelFit(heldOut.localLlm).callTimeoutMs, 1000, 120_000],
      'a held-out simulator on the embedded server fits it too, unless it says otherwise',
    );
  });
});
