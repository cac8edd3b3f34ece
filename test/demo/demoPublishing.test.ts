import assert from 'node:assert/strict';
import { join } from 'node:path';
import { demoPublishing } from '../../src/cli/commands/demo.js';
import { loadConfig } from '../../src/config/load.js';
import { REPO_ROOT } from '../../src/paths.js';

const DEMO = join(REPO_ROOT, 'configs', 'demo.yaml');

/** The demo's config as `attune demo` loads it: its publishing settings first, the command's `--set`s after. */
function demoConfig(env: NodeJS.ProcessEnv, set: string[] = []) {
  return loadConfig({ file: DEMO, env, set: [...demoPublishing(DEMO, set, env), ...set] });
}

describe('attune demo against an external policy server (POLICY_BASE_URL)', () => {
  it('publishes LoRA adapters to it, at the rank vLLM accepts by default', () => {
    const config = demoConfig({ POLICY_BASE_URL: 'http://vllm-host:8000/v1' });
    assert.equal(config.training.publish.mode, 'vllm');
    assert.equal(config.training.lora?.r, 16);
    assert.equal(config.policy.maxLoraRank, 16);
  });

  it("keeps the config's own LoRA and the command's --set, which win", () => {
    const env = { POLICY_BASE_URL: 'http://vllm-host:8000/v1' };
    assert.equal(demoConfig(env, ['training.lora.r=8']).training.lora?.r, 8);
    const ranked = demoConfig(env, ['policy.maxLoraRank=32']);
    assert.equal(ranked.training.lora?.r, 32);
    assert.equal(demoConfig(env, ['training.publish.mode=trainer']).training.publish.mode, 'trainer');
  });

  it('without one, the trainer serves a fully fine-tuned policy as before', () => {
    const config = demoConfig({});
    assert.equal(config.training.publish.mode, 'trainer');
    assert.equal(config.training.lora, null);
  });
});
