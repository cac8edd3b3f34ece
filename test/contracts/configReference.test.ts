import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REFERENCE_FILE, renderConfigReference } from '../../scripts/config-reference/render.js';
import { configSchema } from '../../src/config/schema.js';
import { REPO_ROOT } from '../../src/paths.js';

describe('the configuration reference in docs/', () => {
  it('is what the generator makes of the config declarations', async () => {
    const written = readFileSync(join(REPO_ROOT, REFERENCE_FILE), 'utf8').split('\n');
    const generated = (await renderConfigReference(REPO_ROOT)).split('\n');
    const line = generated.findIndex((text, index) => written[index] !== text);
    const differs = line >= 0 || written.length !== generated.length;
    const at = line >= 0 ? line : Math.min(written.length, generated.length);
    assert.ok(
      !differs,
      `${REFERENCE_FILE} is stale at line ${at + 1}: it has ${JSON.stringify(written[at])}, the declarations give ` +
        `${JSON.stringify(generated[at])}; run npm run generate:config-docs`,
    );
  });

  it("names every key of the config with its declaration's help text", async () => {
    const text = await renderConfigReference(REPO_ROOT);
    for (const section of Object.keys(configSchema.shape))
      assert.match(text, new RegExp(`^## \`${section}\`$`, 'm'), `section ${section} is missing`);
    const keysOf = (shape: Record<string, unknown>, prefix: string) => Object.keys(shape).map((key) => prefix + key);
    for (const key of [
      ...keysOf(configSchema.shape.training.unwrap().shape, 'training.'),
      ...keysOf(configSchema.shape.policy.unwrap().shape, 'policy.'),
    ])
      assert.match(text, new RegExp(`\\| \`${key.replace(/\./g, '\\.')}\` `), `${key} is missing`);
    assert.match(text, /`training\.maxStaleness`.*sampling from a version at most this many steps old/);
    assert.match(text, /`training\.hyperparameters\.learning_rate`.*policy learning rate \(paper: 1e-6\)/);
  });
});
