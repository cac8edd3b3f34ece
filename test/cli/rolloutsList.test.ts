import assert from 'node:assert/strict';
import { attune } from './attuneProcess.js';

describe('attune rollouts list NAME --waiting: usage', function () {
  this.timeout(60_000);

  it('documents itself and rejects a listing without --waiting or without a NAME, before connecting anywhere', async () => {
    const help = await attune(['rollouts', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /attune rollouts list NAME --waiting/);
    assert.match(help.stdout, /attune resume NAME/);
    const noFlag = await attune(['rollouts', 'list', 'run-a']);
    assert.equal(noFlag.code, 2);
    assert.match(noFlag.stderr, /add --waiting/);
    const noName = await attune(['rollouts', 'list', '--waiting']);
    assert.equal(noName.code, 2);
    assert.match(noName.stderr, /needs one run NAME/);
  });
});
