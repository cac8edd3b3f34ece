import assert from 'node:assert/strict';
import { LIVE_SETTINGS_RULES } from '../../src/core/training/liveSet.js';
import { attune } from './attuneProcess.js';

describe('attune set --help', () => {
  it('names exactly the settings the live rules accept, in their order', async () => {
    const help = await attune(['set', '--help']);
    assert.equal(help.code, 0, help.stderr);
    const listed = /Changes a live run from its next step:([^.]*)\./.exec(help.stdout)?.[1];
    assert.ok(listed, help.stdout);
    assert.deepEqual(
      listed.split(',').map((name) => name.trim()),
      Object.keys(LIVE_SETTINGS_RULES),
    );
  });
});
