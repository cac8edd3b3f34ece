import assert from 'node:assert/strict';
import { nextSameErrorRun, sameErrorKey } from '../../src/core/training/sameTrainerError.js';

const url = 'trainer POST http://127.0.0.1:8123/v1/runs/r/steps: HTTP 500';

describe('the same trainer error, attempt after attempt', () => {
  it('errors differing only in numbers and hex ids are the same; other text makes them differ', () => {
    const tmp = (id: string, port: number) =>
      `trainer POST http://127.0.0.1:${port}/v1/runs/r/steps: HTTP 500: internal error: OSError(5, 'Input/output error', '/s/runs/r/checkpoints/.tmp-step-000002-${id}')`;
    assert.equal(sameErrorKey(tmp('41-a3f09c', 8123)), sameErrorKey(tmp('977-0b12ef', 9001)));
    assert.notEqual(sameErrorKey(`${url}: CUDA error`), sameErrorKey(`${url}: NCCL timeout`));
    assert.notEqual(sameErrorKey(`${url}: CUDA error`), sameErrorKey(`${url.replace('500', '503')}: CUDA error`));
    assert.equal(sameErrorKey('state lock held'), 'state lock held');
  });

  it('counts the same error in a row; a different one starts again at one', () => {
    let run = nextSameErrorRun(null, `${url}: A after 1 s`);
    assert.equal(run.attempts, 1);
    run = nextSameErrorRun(run, `${url}: A after 2 s`);
    assert.equal(run.attempts, 2);
    run = nextSameErrorRun(run, `${url}: B`);
    assert.deepEqual(run, { error: sameErrorKey(`${url}: B`), attempts: 1 });
    assert.equal(nextSameErrorRun(nextSameErrorRun(run, `${url}: A`), `${url}: A`).attempts, 2);
  });
});
