import assert from 'node:assert/strict';
import { buildEvaluationInput } from '../../src/config/evaluationInputFromConfig.js';
import { loadConfig } from '../../src/config/load.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';

const BASE = [`scenarios.eval=${FIXTURE_SCENARIOS}`, 'simulator.baseURL=http://127.0.0.1:9001/v1'];

describe('evaluation.simulators', () => {
  it('takes the documented --set form (a JSON list), each entry a simulator endpoint with its defaults', () => {
    const config = loadConfig({
      env: {},
      set: [
        ...BASE,
        'evaluation.simulatorTemperature=0.3',
        'evaluation.simulators=[{"name":"alt","baseURL":"http://127.0.0.1:9002/v1","model":"m"},{"name":"hot","baseURL":"http://127.0.0.1:9003/v1","model":"h","temperature":1.1,"apiKeyEnv":"HOT_KEY"}]',
      ],
    });
    assert.deepEqual(
      config.evaluation.simulators.map((s) => [s.name, s.baseURL, s.model, s.apiKeyEnv, s.temperature, s.maxTokens]),
      [
        ['alt', 'http://127.0.0.1:9002/v1', 'm', 'SIMULATOR_API_KEY', undefined, 400],
        ['hot', 'http://127.0.0.1:9003/v1', 'h', 'HOT_KEY', 1.1, 400],
      ],
    );
    const input = buildEvaluationInput(config, { split: 'eval', evalId: 'e' });
    const training = input.settings.simulator;
    assert.deepEqual(
      input.simulators?.map(({ name, simulator }) => ({
        name,
        baseURL: simulator.baseURL,
        model: simulator.model,
        apiKeyEnv: simulator.apiKeyEnv,
        temperature: simulator.temperature,
        taskQueue: simulator.taskQueue,
      })),
      [
        // The evaluation's simulator temperature where an entry sets none; its own where it does.
        {
          name: 'alt',
          baseURL: 'http://127.0.0.1:9002/v1',
          model: 'm',
          apiKeyEnv: 'SIMULATOR_API_KEY',
          temperature: 0.3,
          taskQueue: training.taskQueue,
        },
        {
          name: 'hot',
          baseURL: 'http://127.0.0.1:9003/v1',
          model: 'h',
          apiKeyEnv: 'HOT_KEY',
          temperature: 1.1,
          taskQueue: training.taskQueue,
        },
      ],
    );
    assert.equal(training.baseURL, 'http://127.0.0.1:9001/v1');
  });

  it('absent or empty, an evaluation input is what it was before held-out simulators', () => {
    for (const set of [BASE, [...BASE, 'evaluation.simulators=[]']]) {
      const input = buildEvaluationInput(loadConfig({ env: {}, set }), { split: 'eval', evalId: 'e' });
      assert.equal('simulators' in input, false, set.join(' '));
    }
  });

  it("a run's evaluations (training.evalEvery) carry the held-out simulators; none without them", () => {
    const set = [...BASE, `scenarios.train=${FIXTURE_SCENARIOS}`, 'training.evalEvery=1'];
    const alt = 'evaluation.simulators=[{"name":"alt","baseURL":"http://127.0.0.1:9002/v1","model":"m"}]';
    const settings = trainingSettingsFromConfig(loadConfig({ env: {}, set: [...set, alt] }), 'r');
    assert.deepEqual(
      settings.evalSimulators?.map((s) => [s.name, s.simulator.baseURL, s.simulator.model]),
      [['alt', 'http://127.0.0.1:9002/v1', 'm']],
    );
    assert.equal('evalSimulators' in trainingSettingsFromConfig(loadConfig({ env: {}, set }), 'r'), false);
  });

  it('refuses a name twice, the name "training", a name unfit for a workflow id, and an unknown field', () => {
    const refused = (list: string, pattern: RegExp) =>
      assert.throws(() => loadConfig({ env: {}, set: [...BASE, `evaluation.simulators=${list}`] }), pattern);
    refused('[{"name":"a","model":"x"},{"name":"a","model":"y"}]', /simulator "a" is listed twice/);
    refused('[{"name":"training"}]', /"training" names the training simulator/);
    refused('[{"name":"Has Space"}]', /lower-case letters, digits and "-"/);
    refused('[{"name":"a","baseUrl":"http://x/v1"}]', /baseUrl/);
  });
});
