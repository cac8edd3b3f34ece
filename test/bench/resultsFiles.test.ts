import assert from 'node:assert/strict';
import { basename } from 'node:path';
import { learningResultsFile, type LearningMode } from '../../bench/learning/resultsName.js';
import { parseOptions as orchestrationOptions } from '../../bench/orchestration/options.js';
import { parseOptions as pipelineOptions } from '../../bench/pipeline/options.js';
import { parseOptions as publishOptions } from '../../bench/publish/options.js';

const learning = (mode: Partial<LearningMode>) =>
  basename(
    learningResultsFile({ quick: true, turns: null, stalenesses: [0], credits: ['final'], seed: null, ...mode }),
  );

describe("the benchmarks' default results files: one per benchmark and mode", () => {
  it('bench:learning names each set of runs: the staleness and the credit comparisons never share a file', () => {
    assert.equal(learning({}), 'learning-quick.json');
    assert.equal(learning({ stalenesses: [0, 1] }), 'learning-quick-staleness-0-1.json');
    assert.equal(learning({ credits: ['final', 'turn'] }), 'learning-quick-credit-final-turn.json');
    assert.equal(learning({ quick: false, simulator: 'local' }), 'learning-smollm2-local.json');
    assert.equal(learning({ quick: false, simulator: 'rule' }), 'learning-smollm2-rule.json');
    assert.equal(learning({ only: 'grpo', turns: 1, seed: 3 }), 'learning-quick-grpo-turns-1-seed-3.json');
    assert.equal(
      learning({ only: 'grpo', credits: ['final', 'turn', 'mixed'], task: 'turn-differentiated', seed: 1 }),
      'learning-quick-grpo-credit-final-turn-mixed-turn-differentiated-seed-1.json',
    );
    assert.equal(learning({ task: 'brevity' }), 'learning-quick.json');
    assert.equal(
      learning({ quick: false, simulator: 'rule', policyServers: ['trainer', 'vllm'] }),
      'learning-smollm2-rule-policy-trainer-vllm.json',
    );
    assert.equal(learning({ quick: false, policyServers: ['trainer'] }), 'learning-smollm2.json');
    assert.equal(
      learning({ only: 'grpo', stalenesses: [0, 1], stepDialogues: ['planned', 'firstFinished'], seed: 2 }),
      'learning-quick-grpo-staleness-0-1-step-dialogues-planned-ff-seed-2.json',
    );
    // the defaults spelt out are the same mode
    assert.equal(learning({ turns: 2, seed: 7, stepDialogues: ['planned'] }), 'learning-quick.json');
  });

  it('no two modes of the TypeScript benchmarks write the same default file', () => {
    const files = [
      pipelineOptions([])?.out,
      pipelineOptions(['--quick'])?.out,
      orchestrationOptions([])?.out,
      orchestrationOptions(['--quick'])?.out,
      publishOptions([])?.out,
      publishOptions(['--steps', '1'])?.out,
      ...[{}, { stalenesses: [0, 1] }, { credits: ['final', 'turn'] }, { quick: false }].map((m) => learning(m)),
    ].map((f) => basename(f ?? ''));
    assert.deepEqual(files.slice(0, 6), [
      'pipeline.json',
      'pipeline-quick.json',
      'orchestration.json',
      'orchestration-quick.json',
      'publish.json',
      'publish-steps-1.json',
    ]);
    assert.equal(new Set(files).size, files.length, files.join(' '));
  });
});
