import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  evaluationKey,
  isEvaluationKey,
  isValidArtifactKey,
  keyPart,
  reportDirKey,
  runMetricsKey,
  runTranscriptsPrefix,
  transcriptKey,
} from '../../src/artifacts/keys.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';

describe('artifact keys', () => {
  it('keeps names made of safe characters as they are and replaces every other character with _', () => {
    assert.equal(keyPart('grpo-1.run_2@3=x'), 'grpo-1.run_2@3=x');
    assert.equal(keyPart('a/b c:d'), 'a_b_c_d');
    assert.equal(keyPart('émotion'), '_motion');
    assert.equal(keyPart('../x'), '.._x');
  });

  it('builds the key of each kind of artifact', () => {
    assert.equal(transcriptKey('grpo-1', 'train-grpo-1--s1--0'), 'rollouts/grpo-1/train-grpo-1--s1--0.json');
    assert.equal(transcriptKey(null, 'r/1'), 'rollouts/adhoc/r_1.json');
    assert.equal(runTranscriptsPrefix('grpo-1'), 'rollouts/grpo-1');
    assert.equal(runTranscriptsPrefix(null), 'rollouts/adhoc');
    assert.equal(runMetricsKey('grpo-1'), 'runs/grpo-1/metrics.jsonl');
    assert.equal(runMetricsKey('a b'), 'runs/a_b/metrics.jsonl');
    assert.equal(evaluationKey('eval-1@step=3'), 'evaluations/eval-1@step=3/evaluation.json');
    assert.equal(evaluationKey('x:y'), 'evaluations/x_y/evaluation.json');
    assert.equal(reportDirKey('grpo-1@3'), 'reports/grpo-1@3');
    assert.equal(reportDirKey('a/b'), 'reports/a_b');
  });

  it('tells evaluation reports from other keys under evaluations/', () => {
    assert.ok(isEvaluationKey(evaluationKey('e1')));
    assert.ok(!isEvaluationKey('evaluations/e1/notes.json'));
    assert.ok(!isEvaluationKey('runs/e1/evaluation.json'));
  });

  it('accepts only well-formed keys: safe characters, no empty, . or .. parts', () => {
    for (const key of ['a', 'runs/x/metrics.jsonl', 'evaluations/a@1=2/evaluation.json', '.hidden/x'])
      assert.ok(isValidArtifactKey(key), key);
    for (const key of ['', '/a', 'a/', 'a//b', 'a/../b', './a', 'a/.', '..', 'a b', 'a\\b', 'é'])
      assert.ok(!isValidArtifactKey(key), JSON.stringify(key));
  });

  it('every key built from any name is one the file store accepts', async () => {
    const store = new FileArtifactStore(mkdtempSync(join(tmpdir(), 'attune-keys-')));
    for (const name of ['grpo-1', 'a/b', 'x y', 'émotion', 'r@3', 'a\nb']) {
      for (const key of [transcriptKey(name, name), runMetricsKey(name), evaluationKey(name), reportDirKey(name)])
        assert.doesNotThrow(() => store.locate(key), key);
    }
    await store.putJson(transcriptKey('run 1', 'r/1'), { ok: true });
    assert.deepEqual(await store.list(runTranscriptsPrefix('run 1')), ['rollouts/run_1/r_1.json']);
  });
});
