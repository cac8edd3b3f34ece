import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { MAX_DIALOGUES_PER_STEP, transcriptBytesEstimate, turnBytesEstimate } from '../../src/core/temporalLimits.js';

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

  it('accepts transcripts past the 2 MB payload limit: they are written in parts', () => {
    assert.ok(transcriptBytesEstimate(30, 2048, 400) > 2 * 1024 * 1024);
    loadConfig({ env: {}, set: ['training.dialogue.maxTurns=30', 'policy.maxTokens=2048'] });
  });

  it('rejects dialogues whose rollout history could pass 50 MB, or whose one turn could pass a payload, naming the turns key', () => {
    assert.match(
      rejection(['rollout.dialogue.maxTurns=50', 'policy.maxTokens=4096']),
      /rollout\.dialogue\.maxTurns=50 with policy\.maxTokens=4096 and simulator\.maxTokens=400: a rollout's history could reach .* MB, over Temporal's 50 MB history size limit/,
    );
    assert.match(
      rejection(['evaluation.dialogue.maxTurns=60', 'simulator.maxTokens=2000']),
      /evaluation\.dialogue\.maxTurns=60/,
    );
    assert.match(
      rejection(['training.dialogue.maxTurns=10', 'policy.maxTokens=32000', 'simulator.maxTokens=8000']),
      /training\.dialogue\.maxTurns=10 .*: one turn could reach 2\.7 MB, over the 1\.5 MB a turn may take of Temporal's 2 MB payload limit/,
    );
    // The transcript grows with the square of the turns (each turn's prompt holds the dialogue so far);
    // one turn's record grows linearly, plus the sampled tokens' ids and log-probabilities.
    const transcript = (turns: number) => transcriptBytesEstimate(turns, 100, 100);
    assert.ok(transcript(20) - transcript(10) > 2.5 * (transcript(10) - transcript(5)));
    const turn = (turns: number) => turnBytesEstimate(turns, 10, 10);
    assert.equal(turn(9) - turn(4), 5 * (turn(5) - turn(4)));
    assert.equal(turnBytesEstimate(4, 20, 10) - turnBytesEstimate(4, 10, 10), 10 * 4 * 5 + 10 * 32);
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
    assert.match(rejection(['training.maxInFlight=1001']), /training\.maxInFlight.*Temporal allows 2,000 per workflow/);
    assert.match(
      rejection(['evaluation.concurrency=501']),
      /evaluation\.concurrency.*Temporal allows 2,000 per workflow/,
    );
  });
});
