import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { MAX_DIALOGUES_PER_STEP, transcriptBytesEstimate } from '../../src/core/temporalLimits.js';

function rejection(set: string[]): string {
  try {
    loadConfig({ env: {}, set });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  return assert.fail(`accepted: ${set.join(' ')}`);
}

describe("config: sizes inside Temporal's limits", () => {
  it('every preset and the defaults fit', () => {
    loadConfig({ env: {} });
    for (const file of readdirSync('configs').filter((f) => f.endsWith('.yaml')))
      loadConfig({ env: {}, file: join('configs', file) });
  });

  it('rejects dialogues whose transcript could pass the 2 MB payload limit, naming the turns key', () => {
    assert.match(
      rejection(['rollout.maxTurns=50', 'policy.maxTokens=4096']),
      /rollout\.maxTurns=50 with policy\.maxTokens=4096 and simulator\.maxTokens=400: a transcript could reach .* MB, over Temporal's 2 MB payload limit/,
    );
    assert.match(rejection(['evaluation.maxTurns=40', 'simulator.maxTokens=2000']), /evaluation\.maxTurns=40/);
    assert.match(rejection(['training.maxTurns=30', 'policy.maxTokens=2048']), /training\.maxTurns=30/);
    // The estimate grows with the square of the turns: T(T + 1) / 2 turn-prompts.
    assert.equal(transcriptBytesEstimate(2, 10, 10) * 5, transcriptBytesEstimate(5, 10, 10));
  });

  it('rejects steps whose rollouts could pass the history event limit, and completions past 32k tokens', () => {
    const per = MAX_DIALOGUES_PER_STEP;
    loadConfig({ env: {}, set: [`training.scenariosPerStep=${per}`, 'training.samplesPerScenario=1'] });
    assert.match(
      rejection([`training.scenariosPerStep=${per}`, 'training.samplesPerScenario=2']),
      new RegExp(
        `${per * 2} dialogues per step: over ${per}, a step's history could pass Temporal's 51200-event limit`,
      ),
    );
    assert.match(rejection(['policy.maxTokens=40000']), /policy\.maxTokens/);
  });
});
